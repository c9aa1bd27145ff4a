//! The worked example of the MCP architecture guide: a refund tool that asks the user before
//! refunding more than 100 USD, with sealed state and an idempotency key, as a duet tool.
//! The same handler serves both eras: on 2026-07-28 the question travels as an
//! `input_required` result, on a handshake-era session as an `elicitation/create` request.
//! `cargo run -p duet --example refund` serves it over stdio.

use duet::mrtr::idempotency::{MemoryStore, at_most_once};
use duet::prelude::*;
use serde::Deserialize;
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;

#[derive(Deserialize, schemars::JsonSchema)]
struct Refund {
    order_id: String,
    amount_cents: u64,
}

fn refund_order(refunds: Arc<MemoryStore>) -> ToolSpec {
    ToolSpec::typed("refund_order", move |r: Refund, cx| {
        let refunds = refunds.clone();
        async move {
            let usd = format!("{:.2}", r.amount_cents as f64 / 100.0);
            if r.amount_cents > 10_000 {
                let asked = json!({"order_id": r.order_id, "amount_cents": r.amount_cents});
                match cx.elicited("confirm").filter(|_| cx.state() == Some(&asked)) {
                    None if !cx.client_supports("elicitation") => {
                        return Ok(Reply::Complete(ToolResult::error("Refunds over 100 USD need user confirmation; this client cannot ask. Use the support console.")));
                    }
                    None => {
                        let form = json!({"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]});
                        let ask = InputRequired::new().elicit("confirm", format!("Refund {usd} USD on {}?", r.order_id), form);
                        return Ok(Reply::InputRequired(ask.state(asked)));
                    }
                    Some(Ok(answer)) if answer.get("ok") == Some(&json!(true)) => {}
                    Some(_) => return Ok(Reply::Complete(ToolResult::text("Refund cancelled by the user."))),
                }
            }
            // A replayed retry gets the first refund back instead of a second one.
            let key = format!("{}:{}:{}", cx.principal().id, r.order_id, r.amount_cents);
            let day = Duration::from_secs(86_400);
            let refund = at_most_once(&*refunds, &key, day, || async { payments_refund(&r.order_id, r.amount_cents) }).await?;
            Ok::<_, HandlerError>(Reply::Complete(ToolResult::structured(refund)))
        }
    })
    .description("Refunds an order; above 100 USD the user confirms first")
}

/// Stands in for the payments backend.
fn payments_refund(order_id: &str, amount_cents: u64) -> Result<serde_json::Value, std::io::Error> {
    Ok(json!({"refund_id": format!("R-{order_id}"), "amount_cents": amount_cents}))
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut registry = Registry::new(ServerInfo::new("support-desk", "1.0.0"));
    registry.tool(refund_order(Arc::new(MemoryStore::new())))?;
    duet::serve_stdio(registry).await?;
    Ok(())
}
