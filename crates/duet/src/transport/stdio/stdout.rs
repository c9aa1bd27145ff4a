//! stdout protected at the file-descriptor level while serving: fd 1 points at stderr, so
//! a handler that prints (or writes to fd 1 directly) lands there instead of corrupting the
//! protocol stream, which goes to a private copy of the real stdout.

use rustix::io::dup;
use rustix::stdio::dup2_stdout;
use std::fs::File;
use std::io::{self, Write};
use std::os::fd::OwnedFd;

/// Points fd 1 at stderr for as long as it lives, keeping a private copy of the real
/// stdout for the protocol. Restores fd 1 when dropped.
pub(super) struct StdoutGuard {
    saved: OwnedFd,
}

impl StdoutGuard {
    pub(super) fn protect() -> io::Result<StdoutGuard> {
        io::stdout().flush()?;
        let saved = dup(io::stdout())?;
        dup2_stdout(io::stderr())?;
        Ok(StdoutGuard { saved })
    }

    /// A stream on the real stdout, for protocol lines only.
    pub(super) fn protocol_stream(&self) -> io::Result<File> {
        Ok(File::from(dup(&self.saved)?))
    }
}

impl Drop for StdoutGuard {
    fn drop(&mut self) {
        let _ = io::stdout().flush();
        let _ = dup2_stdout(&self.saved);
    }
}
