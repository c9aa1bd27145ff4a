//! The engine's entry for a transport that hands it one message at a time with what it saw
//! beside it (Streamable HTTP: the headers), after the gate (`gate.rs`). The engine decides
//! the rest: the era of the message and the batch rule (`admission.rs`); a 2026 request's
//! ladder, after which it runs on its own; a handshake-era message's session, made by
//! `initialize`, found by id (or adopted from another replica's record, `session/
//! replicated.rs`), or none on a stateless server. What comes out is an [`Entry`]: refused,
//! with a [`Standing`] the transport turns into its status; taken, with nothing to answer;
//! or [`Work`], whose [`Shape`] tells the transport how the answer may travel and whose
//! [`Job`] the transport runs with the sink it chose for the notifications.

use super::Version;
use super::admission::{self, Hints};
use super::envelope::Terms;
use super::owed::Owed;
use super::session::SessionSnapshot;
use super::session::table::{Hosted, Kind, SessionTable};
use super::shared::Server;
use crate::layer::Principal;
use crate::trace::RequestTrace;
use duet_wire::Era;
use duet_wire::jsonrpc::{Response, RpcError, Sink, code};
use duet_wire::message::{Incoming, Message, Request};
use duet_wire::method::{Method, Replies};
use std::sync::Arc;

/// A message as a transport hands it to the engine, with what the transport saw beside it.
pub(crate) struct Arrival<'a> {
    pub message: Message,
    pub principal: Arc<Principal>,
    /// The revision the transport declared for the message, as sent (HTTP:
    /// `MCP-Protocol-Version`).
    pub declared: Option<&'a str>,
    /// What the transport saw beside the body (HTTP: the headers), for the 2026 ladder and
    /// the session a handshake-era message names.
    pub hints: &'a dyn Hints,
    /// The message as it came, to route a client's answer to the replica that asked.
    pub raw: &'a [u8],
}

/// How an answer stands, for a transport that says so beside it (HTTP: the status).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Standing {
    /// Answered (200): errors of requests included.
    Answered,
    /// The message is wrong, or a 2026 request lacks a capability its method needs (400).
    Invalid,
    /// A 2026 method no one serves, or a session that is not there (404).
    NotFound,
    /// A session could not be made or found: a cap, or a backplane that cannot say (503).
    Unavailable,
}

impl Standing {
    /// How an answer stands: one error that names no request refuses the whole message (a
    /// batch the version does not allow); a 2026 request's "method not found" is not found
    /// and its missing client capability invalid; everything else is answered.
    pub(crate) fn of(answer: &Message<Response>, modern: bool) -> Standing {
        match answer {
            Message::One(r) if r.id.is_none() => Standing::Invalid,
            Message::One(r) if modern => match r.error_code() {
                Some(code::METHOD_NOT_FOUND) => Standing::NotFound,
                Some(code::MISSING_CLIENT_CAPABILITY) => Standing::Invalid,
                _ => Standing::Answered,
            },
            _ => Standing::Answered,
        }
    }
}

/// What the engine makes of an arrival.
#[expect(
    clippy::large_enum_variant,
    reason = "one lives per request, moved once to the transport; boxing the work would allocate for each"
)]
pub(crate) enum Entry {
    /// Refused before anything ran: how it stands, and the answer saying why.
    Refused(Standing, Response),
    /// Taken, with nothing to answer (notifications, responses; a client's answer sent on
    /// to the replica that asked).
    Taken,
    /// To run.
    Work(Work),
}

/// A message to run: how its answer may travel, and the job that answers it.
pub(crate) struct Work {
    pub shape: Shape,
    pub job: Job,
}

/// How the answer to a message may travel.
pub(crate) struct Shape {
    /// How the message's requests reply (the most streaming of them); `None` when it holds
    /// no request.
    pub replies: Option<Replies>,
    /// A 2026-07-28 message: cancelled when the client goes away, and its errors stand
    /// apart ([`Standing::of`]).
    pub modern: bool,
    /// What the client is owed if the job's task fails.
    pub owed: Owed,
    /// The session the message runs on: a stream answering it may be resumed.
    pub session: Option<Arc<Hosted>>,
}

/// The work that answers a message, once the transport has a sink for its notifications.
pub(crate) struct Job {
    server: Server,
    principal: Arc<Principal>,
    run: Run,
}

enum Run {
    /// A 2026 request, under the terms its ladder read.
    Modern(Request, Terms),
    /// A handshake-era message on a stateless server, at version `at`.
    Stateless(Message, Version),
    /// A handshake-era message on its session. `initialize` (`opens`) makes the session
    /// known to the other replicas once it agreed a version, and ends it otherwise; a
    /// message that may change the session lays what it changed from `before` over its
    /// record.
    OnSession {
        message: Message,
        session: Arc<Hosted>,
        table: Arc<SessionTable>,
        opens: bool,
        before: Option<SessionSnapshot>,
    },
}

impl Job {
    /// Whether the job is an `initialize`, which opens its session.
    pub(crate) fn opens(&self) -> bool {
        matches!(self.run, Run::OnSession { opens: true, .. })
    }

    /// Runs the message to its answer; `sink` receives its requests' notifications.
    /// Dropping the future cancels a 2026 request. The handshake-era ways run boxed: their
    /// futures are several times a 2026 request's, which would otherwise be as large as
    /// they are and be copied as often.
    pub(crate) async fn run(self, sink: Option<Sink>) -> Option<Message<Response>> {
        let Job { server, principal, run } = self;
        match run {
            Run::Modern(request, terms) => {
                Some(Message::One(server.answer_request(request, terms, principal, sink).await))
            }
            Run::Stateless(message, at) => Box::pin(server.answer(message, Some(at), principal, sink)).await,
            Run::OnSession { message, session, table, opens, before } => {
                Box::pin(async move {
                    let answer = session.session.handle(message, sink, Some(principal)).await;
                    match (opens, before) {
                        (true, _) if session.session.protocol_version().is_some() => table.write_new(&session).await,
                        (true, _) => table.end(&session.id, &session.principal_id).await,
                        (false, Some(before)) => table.save(&session, &before).await,
                        (false, None) => {}
                    }
                    answer
                })
                .await
            }
        }
    }
}

/// The refusal of a message over HTTP-level rules: an invalid request error naming no
/// request.
fn refused(standing: Standing, message: &str) -> Entry {
    Entry::Refused(standing, Response::error(None, RpcError::invalid_request(message)))
}

impl Server {
    /// What to do with `arrival`: its era decides. A 2026 message climbs the ladder and runs
    /// on its own; a handshake-era one runs on its session in `sessions`, or, with no table
    /// (a stateless server), on its own at the declared version (or the default).
    pub(crate) async fn enter(&self, arrival: Arrival<'_>, sessions: Option<&Arc<SessionTable>>) -> Entry {
        let declared = arrival.declared.and_then(Version::parse);
        match &arrival.message {
            Message::Batch(items) if let Some(error) = admission::batch(items, declared) => {
                return Entry::Refused(Standing::Invalid, Response::error(None, error));
            }
            Message::One(one) if admission::era_of(one, declared) == Era::Modern => return self.enter_modern(arrival),
            _ => {}
        }
        if let (Some(raw), None) = (arrival.declared, declared) {
            return refused(Standing::Invalid, &format!("Unsupported MCP-Protocol-Version: {raw}"));
        }
        // Boxed: a session's handling makes this future almost three times the 2026 path's,
        // and every request's future is as large as its largest path (hyper copies it whole
        // into its box).
        Box::pin(self.enter_handshake(arrival, declared, sessions)).await
    }

    /// A 2026 message: the ladder, then it runs on its own, keeping nothing. An invalid
    /// message is answered with its error; a notification carries nothing for a server
    /// without a session.
    fn enter_modern(&self, arrival: Arrival<'_>) -> Entry {
        let Arrival { message, principal, hints, .. } = arrival;
        let mut request = match message {
            Message::One(Incoming::Request(request)) => request,
            Message::One(Incoming::Invalid(response)) => return Entry::Refused(Standing::Invalid, response),
            _ => return Entry::Taken,
        };
        let terms = match self.admit_modern(&principal, &mut request, Some(hints)) {
            Ok(terms) => terms,
            Err(error) => return Entry::Refused(Standing::Invalid, Response::error(Some(request.id), error)),
        };
        let replies = Some(request.method.traits().replies);
        let shape = Shape { replies, modern: true, owed: Owed::One(request.id.clone()), session: None };
        let job = Job { server: self.clone(), principal, run: Run::Modern(request, terms) };
        Entry::Work(Work { shape, job })
    }

    /// A handshake-era message: `initialize` opens a session, anything else goes to the
    /// session it names; a stateless server answers it on its own, at the version
    /// `declared` (or the default).
    async fn enter_handshake(
        &self,
        arrival: Arrival<'_>,
        declared: Option<Version>,
        sessions: Option<&Arc<SessionTable>>,
    ) -> Entry {
        let Arrival { message, principal, hints, raw, .. } = arrival;
        // A message that breaks the framing rules is answered with its error, as a parse
        // error is, whether or not it names a session: it is no request a session could take.
        if let Message::One(Incoming::Invalid(response)) = message {
            return Entry::Refused(Standing::Invalid, response);
        }
        let shape = |session| Shape { replies: replies_of(&message), modern: false, owed: Owed::of(&message), session };
        let job = |run| Job { server: self.clone(), principal: principal.clone(), run };
        let Some(table) = sessions else {
            let shape = shape(None);
            let at = declared.unwrap_or(Version::DEFAULT_HTTP);
            return Entry::Work(Work { shape, job: job(Run::Stateless(message, at)) });
        };
        if message.method() == Some(&Method::Initialize) {
            let hosted = match table.create(&principal, Kind::Replicated) {
                Ok(created) => {
                    if let Some(evicted) = created.evicted {
                        table.end(&evicted, &principal.id).await;
                    }
                    created.session
                }
                Err(why) => return refused(Standing::Unavailable, &why.0),
            };
            if let Err(why) = table.count(&hosted, &principal).await {
                table.remove(&hosted.id);
                return refused(Standing::Unavailable, &why.0);
            }
            RequestTrace::current().session(&hosted.id);
            let shape = shape(Some(hosted.clone()));
            let run = Run::OnSession { message, session: hosted, table: table.clone(), opens: true, before: None };
            return Entry::Work(Work { shape, job: job(run) });
        }
        let Some(id) = hints.session() else {
            return refused(Standing::Invalid, "Bad Request: Mcp-Session-Id header is required");
        };
        let id = id.as_ref();
        let hosted = match table.find(id, &principal).await {
            Ok(Some(found)) if found.kind == Kind::Replicated => found,
            Ok(_) => return refused(Standing::NotFound, "Session not found"),
            Err(why) => return refused(Standing::Unavailable, &why.0),
        };
        RequestTrace::current().session(id);
        if table.route_elsewhere(&hosted, &message, raw, &principal) {
            return Entry::Taken;
        }
        table.keep_alive(&hosted).await;
        if let (Some(asked), Some(agreed)) = (declared.filter(|v| !v.is_modern()), hosted.session.protocol_version())
            && asked != agreed
        {
            let why = format!("MCP-Protocol-Version {asked} does not match the negotiated version {agreed}");
            return refused(Standing::Invalid, &why);
        }
        let before = message.changes_session().then(|| hosted.session.snapshot()).flatten();
        let shape = shape(Some(hosted.clone()));
        let run = Run::OnSession { message, session: hosted, table: table.clone(), opens: false, before };
        Entry::Work(Work { shape, job: job(run) })
    }
}

/// The replies of a message: the most streaming of its requests' (`None` without requests).
fn replies_of(message: &Message) -> Option<Replies> {
    message.requests().map(|r| r.method.traits().replies).max()
}
