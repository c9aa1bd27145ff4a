//! `duet serve`: builds the layer and the engine, then runs a transport until it ends.

use crate::cli::{Fixtures, ServeArgs};
use duet::fixtures;
use duet::layer::Layer;
use duet::protocol::{Server, ServerOptions};
use std::process::ExitCode;
use std::sync::Arc;

pub async fn run(args: ServeArgs) -> anyhow::Result<ExitCode> {
    let layer: Arc<dyn Layer> = match args.fixtures {
        Some(Fixtures::Testkit) => Arc::new(fixtures::testkit::registry()),
        Some(Fixtures::Conformance) => Arc::new(fixtures::conformance::registry()),
        None => {
            eprintln!("Error: nothing to serve: pass --fixtures testkit or --fixtures conformance");
            return Ok(ExitCode::from(2));
        }
    };
    let options = ServerOptions {
        page_size: args.page_size,
        ..ServerOptions::default()
    };
    let server = Server::new(layer, options);
    duet::transport::stdio::serve_stdio(server).await?;
    Ok(ExitCode::SUCCESS)
}
