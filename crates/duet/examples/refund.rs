//! The worked example of the MCP architecture guide: a refund tool that asks the user before
//! refunding more than 100 USD, with sealed state and an idempotency key, as a duet tool.
//! The same handler serves both eras: on 2026-07-28 the question travels as an
//! `input_required` result, on a handshake-era session as an `elicitation/create` request.
//! `cargo run -p duet --example refund` serves it over stdio. The idempotency keys live in
//! the server's backplane: in memory here, in Redis (`Backplane` from
//! `RedisBackplane::connect`, feature `redis`) when replicas share the refunds.

use duet::backplane::Backplane;
use duet::mrtr::idempotency::at_most_once;
use duet::prelude::*;
use duet::transport::stdio::{StdioOptions, serve_stdio};
use serde::Deserialize;
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;

#[derive(Deserialize, schemars::JsonSchema)]
struct Refund {
    order_id: String,
    amount_cents: u64,
}

/// The form the user confirms a big refund with.
#[derive(Deserialize, schemars::JsonSchema)]
struct Confirm {
    ok: bool,
}

async fn refund_order(r: Refund, cx: RequestCx<Backplane>) -> Result<Reply<ToolResult>, HandlerError> {
    if r.amount_cents > 10_000 {
        // The question travels sealed: an answer counts only beside the state it was asked with.
        let asked = json!({"order_id": r.order_id, "amount_cents": r.amount_cents});
        match cx.elicited::<Confirm>("confirm").filter(|_| cx.request_state() == Some(&asked)) {
            None if !cx.client_supports("elicitation") => {
                return Ok(
                    ToolResult::error("Refunds over 100 USD need user confirmation; this client cannot ask.").into()
                );
            }
            None => {
                let question = format!("Refund {:.2} USD on {}?", r.amount_cents as f64 / 100.0, r.order_id);
                return Ok(Reply::InputRequired(
                    InputRequired::new().elicit::<Confirm>("confirm", question).request_state(asked),
                ));
            }
            Some(Elicited::Accepted(Confirm { ok: true })) => {}
            Some(_) => return Ok(ToolResult::text("Refund cancelled by the user.").into()),
        }
    }
    // A replayed retry gets the first refund back instead of a second one.
    let key = format!("{}:{}:{}", cx.principal().id, r.order_id, r.amount_cents);
    let day = Duration::from_secs(86_400);
    let refund =
        at_most_once(cx.state().keys.as_ref(), &key, day, || async { payments_refund(&r.order_id, r.amount_cents) });
    Ok(ToolResult::structured(refund.await?).into())
}

/// Stands in for the payments backend.
fn payments_refund(order_id: &str, amount_cents: u64) -> Result<serde_json::Value, std::io::Error> {
    Ok(json!({"refund_id": format!("R-{order_id}"), "amount_cents": amount_cents}))
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let backplane = Backplane::memory();
    let mut registry = Registry::with_state(ServerInfo::new("support-desk", "1.0.0"), backplane.clone());
    registry.tool(
        ToolSpec::typed("refund_order", refund_order)
            .description("Refunds an order; above 100 USD the user confirms first"),
    )?;
    let server = Server::new(Arc::new(registry), ServerOptions { backplane, ..ServerOptions::default() });
    serve_stdio(server, StdioOptions::default()).await?;
    Ok(())
}
