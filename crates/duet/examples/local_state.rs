//! A tool whose future is not `Send`: `tally` counts words with local tasks that share an
//! `Rc<RefCell<…>>`, so it is registered through `duet::layer::local`. The count of calls
//! is state shared between calls: an `Arc` the handler owns, no globals. Run it with
//! `cargo run -p duet --example local_state` and paste JSON lines.

use duet::layer::local;
use duet::prelude::*;
use serde::{Deserialize, Serialize};
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

#[derive(Deserialize, schemars::JsonSchema)]
struct Tally {
    /// The words to count.
    words: Vec<String>,
}

#[derive(Serialize, schemars::JsonSchema)]
struct Counts {
    /// How often each word occurs.
    counts: BTreeMap<String, u64>,
    /// Which call of `tally` this is, counting from 1.
    call: u64,
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let calls = Arc::new(AtomicU64::new(0));
    let tally = local(move |input: Tally, _cx| {
        let call = calls.fetch_add(1, Ordering::Relaxed) + 1;
        async move {
            let counts = Rc::new(RefCell::new(BTreeMap::new()));
            let tasks: Vec<_> = (input.words.into_iter())
                .map(|word| {
                    let counts = counts.clone();
                    tokio::task::spawn_local(async move {
                        tokio::task::yield_now().await;
                        *counts.borrow_mut().entry(word).or_insert(0) += 1;
                    })
                })
                .collect();
            for task in tasks {
                task.await?;
            }
            Ok::<_, HandlerError>(Json(Counts { counts: counts.take(), call }))
        }
    });
    let mut registry = Registry::new(ServerInfo::new("tally", "1.0.0"));
    registry.tool(ToolSpec::typed("tally", tally).description("Counts how often each word occurs"))?;
    duet::serve_stdio(registry).await?;
    Ok(())
}
