//! What a server lists and returns, as plain serde data: one set of types for duet's
//! server, which builds them, and its client, which reads them. The descriptions of the
//! server and its primitives (`definition`), what handlers return (`content`), the
//! skills extension's entries (`skill`), and a task's status (`task`).

mod content;
mod definition;
pub mod skill;
pub mod task;

pub use content::*;
pub use definition::*;
pub use skill::{Skill, SkillFile};
pub use task::TaskStatus;
