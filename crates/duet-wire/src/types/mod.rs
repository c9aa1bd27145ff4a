//! What a server lists and returns, as plain serde data: one set of types for duet's
//! server, which builds them, and its client, which reads them. The descriptions of the
//! server and its primitives (`definition`), and what handlers return (`content`).

mod content;
mod definition;

pub use content::*;
pub use definition::*;
