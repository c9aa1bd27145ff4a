//! Handlers that ask the client for input, carried over either era. On 2026-07-28 the
//! answer is an `input_required` result with sealed state, and the client's retry is
//! unsealed, checked and handed back to the handler. On the handshake era the engine sends
//! real requests to the client, waits for its answers and runs the handler again.
//!
//! A 2026 retry that brings answers with its sealed state spends that state: the request
//! runs once, and the same state and answers sent again get the first run's answer (see
//! [`once_per_state`]).

use super::Call;
use crate::layer::{InputRequired, LayerError, Reply, RequestCx};
use crate::mrtr::idempotency::{OnceError, once_under};
use crate::mrtr::seal::Binding;
use crate::mrtr::{missing_capabilities, missing_capability_error};
use crate::signals;
use duet_wire::jsonrpc::{Rendered, RpcError, code};
use futures::FutureExt;
use serde::Serialize;
use serde_json::{Map, Value};
use std::future::Future;
use std::time::Duration;

/// A handshake-era handler may ask this many times in one request.
const MAX_ROUNDS: usize = 16;

/// The longest a spent state is remembered: a state sealed to live longer (a
/// `state_ttl` of years) is spent for this long.
const LONGEST_SPENT: Duration = Duration::from_secs(366 * 24 * 3600);

/// Runs a handler that may ask for input (`invoke`, given each run's context) about
/// `target` (a tool or prompt name, or a resource URI) with `arguments`, until it completes;
/// on 2026-07-28 with what the request `echoed` of an earlier `input_required` answer.
/// `finish` renders the complete result, or the reason the client could not give the input
/// (no answer, an error, no channel back); `fail` maps the handler's protocol errors.
pub(super) async fn run<T>(
    call: &Call<'_>,
    target: &str,
    arguments: &Value,
    echoed: Echoed,
    invoke: impl Invoke<T, LayerError>,
    fail: impl Fn(LayerError) -> RpcError,
    finish: impl FnOnce(Result<T, String>) -> Result<Rendered, RpcError>,
) -> Result<Rendered, RpcError> {
    let invoke = |cx| invoke(cx).map(|reply| reply.map_err(&fail));
    if call.modern() {
        modern(call, target, arguments, echoed, invoke, finish).await
    } else {
        handshake(call, invoke).await.and_then(finish)
    }
}

/// One run of a handler: its context in, its reply (or failure `E`) out.
pub(super) trait Invoke<T, E>: Fn(RequestCx) -> Self::Run {
    type Run: Future<Output = Result<Reply<T>, E>>;
}

impl<T, E, F, Fut> Invoke<T, E> for F
where
    F: Fn(RequestCx) -> Fut,
    Fut: Future<Output = Result<Reply<T>, E>>,
{
    type Run = Fut;
}

/// The body of a 2026 `input_required` result.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct InputRequiredBody<'a> {
    input_requests: &'a Map<String, Value>,
    request_state: String,
}

async fn modern<T>(
    call: &Call<'_>,
    target: &str,
    arguments: &Value,
    echoed: Echoed,
    invoke: impl Invoke<T, RpcError>,
    finish: impl FnOnce(Result<T, String>) -> Result<Rendered, RpcError>,
) -> Result<Rendered, RpcError> {
    let Resumed { responses, state, spends } = opened(call, target, arguments, echoed)?;
    let run = async move {
        match invoke(call.request_cx_with(responses, state)).await? {
            Reply::Complete(value) => finish(Ok(value)),
            Reply::InputRequired(input) => asking(call, target, arguments, input),
        }
    };
    once_per_state(call, spends, run).await
}

/// What a 2026 request echoes of an earlier `input_required` answer, as its params carry it.
#[derive(Default)]
pub(super) struct Echoed {
    /// The client's answers, by the key of what was asked (`inputResponses`).
    pub responses: Option<Map<String, Value>>,
    /// The sealed state the answer carried (`requestState`).
    pub state: Option<String>,
}

/// What a 2026 request brings back from an earlier `input_required` answer, opened.
#[derive(Default)]
pub(super) struct Resumed {
    /// The client's answers to what the state asked.
    pub responses: Map<String, Value>,
    /// The state the handler attached, unsealed and checked against the request.
    pub state: Option<Value>,
    /// The sealed state the answers came with, which running this request spends.
    pub spends: Option<Spent>,
}

/// A sealed state that was answered: its name, and how long it still opens.
pub(super) struct Spent {
    id: String,
    remaining: Duration,
}

/// What a 2026 request brings back: the client's answers, with the state they answer
/// unsealed and checked against the request (`requestState`), or as given without one.
pub(super) fn opened(call: &Call<'_>, target: &str, arguments: &Value, echoed: Echoed) -> Result<Resumed, RpcError> {
    let Echoed { responses: given, state } = echoed;
    // Answers without a state are client data like the arguments: the handler gets them
    // but no state, so nothing it sealed can be forged this way.
    let Some(token) = state else {
        return Ok(Resumed { responses: given.unwrap_or_default(), ..Resumed::default() });
    };
    let opened = call.shared.sealer.open(&token, &binding(call, target, arguments)).map_err(|e| {
        metrics::counter!(signals::SEALED_STATE_REJECTIONS).increment(1);
        RpcError::invalid_params(e.to_string())
    })?;
    // Only answers to what was asked reach the handler; other keys are ignored.
    let mut given = given.unwrap_or_default();
    let responses: Map<String, Value> =
        opened.asked.iter().filter_map(|k| Some((k.clone(), given.remove(k)?))).collect();
    let spends = (!responses.is_empty()).then_some(Spent { id: opened.id, remaining: opened.remaining });
    Ok(Resumed { responses, state: opened.state, spends })
}

/// Runs `run`, the request that answers sealed state `spends`, once per state: the state is
/// claimed in the backplane's keys (shared by the replicas) for as long as it still opens,
/// and the answer `run` gives is kept there, so the same state sent again, with the same
/// answers or others, to this replica or another, gets that answer instead of a second run.
/// This is the engine's rule for every handler, not a choice of each: the state is what
/// proves the user's answer belongs to this request, and a proof of consent must not be
/// spent twice (a confirmed command run three times by replaying its confirmation). A
/// request whose run failed (a protocol error, not a tool error) may be sent again; one
/// without answers spends nothing, as the handler only asks again.
pub(super) async fn once_per_state(
    call: &Call<'_>,
    spends: Option<Spent>,
    run: impl Future<Output = Result<Rendered, RpcError>>,
) -> Result<Rendered, RpcError> {
    let Some(Spent { id, remaining }) = spends else { return run.await };
    let keys = call.shared.options.backplane.keys.as_ref();
    let key = format!("spent-state:{id}");
    let effect = move || async move {
        let rendered = run.await?;
        serde_json::from_slice::<Value>(rendered.as_bytes()).map_err(|_| RpcError::internal())
    };
    let answered = once_under(keys, &key, remaining.min(LONGEST_SPENT), effect).await;
    match answered {
        Ok(first) => Rendered::new(&first).map_err(|_| RpcError::internal()),
        Err(OnceError::Failed(error)) => Err(error),
        Err(busy @ OnceError::InProgress) => Err(LayerError::RateLimited(busy.to_string()).to_rpc()),
        Err(OnceError::Store(e)) => {
            tracing::warn!("a requestState could not be spent in the shared store: {e}");
            Err(RpcError::new(
                code::INTERNAL_ERROR,
                "the shared store is unavailable, so the use of this requestState could not be recorded \
                 and the request was not run; send it again later",
            ))
        }
    }
}

/// The 2026 `input_required` answer that asks the client for `input`, its state sealed.
pub(super) fn asking(
    call: &Call<'_>,
    target: &str,
    arguments: &Value,
    input: InputRequired,
) -> Result<Rendered, RpcError> {
    if let Some(required) = missing_capabilities(&input.requests, &call.terms.client_capabilities) {
        return Err(missing_capability_error(required, call.modern()));
    }
    let keys = input.requests.keys().cloned().collect();
    let request_state = call.shared.sealer.seal(&binding(call, target, arguments), keys, input.state);
    call.input_required(InputRequiredBody { input_requests: &input.requests, request_state })
}

/// What sealed state is bound to: the principal, the method, its target and a digest of
/// its arguments (only computed when a state is opened or sealed).
fn binding(call: &Call<'_>, target: &str, arguments: &Value) -> Binding {
    Binding::new(&call.principal.id, &call.method, target, arguments)
}

/// Runs the handler, asking the client what it needs between runs; `Err` is why the input
/// could not be had.
async fn handshake<T>(call: &Call<'_>, invoke: impl Invoke<T, RpcError>) -> Result<Result<T, String>, RpcError> {
    let (mut responses, mut state) = (Map::new(), None);
    for _ in 0..MAX_ROUNDS {
        let input = match invoke(call.request_cx_with(responses, state)).await? {
            Reply::Complete(value) => return Ok(Ok(value)),
            Reply::InputRequired(input) => input,
        };
        if let Some(required) = missing_capabilities(&input.requests, &call.terms.client_capabilities) {
            return Err(missing_capability_error(required, call.modern()));
        }
        responses = match ask_client(call, &input.requests).await {
            Ok(answers) => answers,
            Err(message) => return Ok(Err(message)),
        };
        state = input.state;
    }
    Ok(Err(format!("{} kept asking the client for input after {MAX_ROUNDS} rounds", call.method)))
}

/// Sends each input request to the client and collects the answers by key.
async fn ask_client(call: &Call<'_>, requests: &Map<String, Value>) -> Result<Map<String, Value>, String> {
    let (Some(session), Some(notify)) = (call.session, &call.notify) else {
        return Err(format!("could not get input from the client: {}", crate::protocol::AskError::NoChannel));
    };
    let limit = call.shared.options.input_timeout;
    let asks = requests.iter().map(|(key, request)| async move {
        let method = request.get("method").and_then(Value::as_str).unwrap_or_default();
        let answer = session.ask(notify, method, request.get("params").cloned(), limit).await;
        (key, method, answer)
    });
    let mut answers = Map::new();
    for (key, method, answer) in futures::future::join_all(asks).await {
        let value = answer.map_err(|e| format!("could not get input from the client for {method}: {e}"))?;
        answers.insert(key.clone(), value);
    }
    Ok(answers)
}
