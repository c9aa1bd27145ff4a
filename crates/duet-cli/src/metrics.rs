//! `--metrics-addr`: the Prometheus exporter installed as the process's metrics recorder,
//! its text served at `/metrics` on a listener of its own (`MetricsEndpoint`), for every
//! transport.

use anyhow::Context as _;
use duet::signals::{DURATION_BUCKETS, OPERATION_DURATION, SESSION_DURATION};
use duet::transport::http::MetricsEndpoint;
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder};
use std::time::Duration;

/// How often the exporter folds recent observations into what it renders; until then each
/// one is held in memory (8 bytes), so a shorter upkeep keeps less at high rates.
const UPKEEP: Duration = Duration::from_secs(1);

pub(crate) async fn serve(addr: &str) -> anyhow::Result<MetricsEndpoint> {
    let buckets = |name: &str| Matcher::Full(name.to_owned());
    let handle = PrometheusBuilder::new()
        .set_buckets_for_metric(buckets(OPERATION_DURATION), &DURATION_BUCKETS)?
        .set_buckets_for_metric(buckets(SESSION_DURATION), &DURATION_BUCKETS)?
        .install_recorder()
        .context("cannot install the metrics recorder")?;
    duet::signals::describe();
    let upkeep = handle.clone();
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(UPKEEP);
        loop {
            tick.tick().await;
            upkeep.run_upkeep();
        }
    });
    let endpoint = MetricsEndpoint::bind(addr, move || handle.render())
        .await
        .with_context(|| format!("cannot listen for metrics on {addr}"))?;
    crate::logging::notice(format_args!("duet metrics on http://{}/metrics", endpoint.local_addr()));
    Ok(endpoint)
}
