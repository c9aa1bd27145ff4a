//! stdout protected at the file-descriptor level while serving: fd 1 points at stderr, so
//! a handler that prints (or writes to fd 1 directly) lands there instead of corrupting the
//! protocol stream, which goes to a private copy of the real stdout.

use std::fs::File;
use std::io::{self, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

/// Points fd 1 at stderr for as long as it lives, keeping a private copy of the real
/// stdout for the protocol. Restores fd 1 when dropped.
pub(super) struct StdoutGuard {
    saved: OwnedFd,
}

impl StdoutGuard {
    pub(super) fn protect() -> io::Result<StdoutGuard> {
        io::stdout().flush()?;
        let saved = dup(io::stdout().as_raw_fd())?;
        // SAFETY: dup2 on two descriptors this process has open; it only rebinds fd 1.
        if unsafe { libc::dup2(io::stderr().as_raw_fd(), io::stdout().as_raw_fd()) } < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(StdoutGuard { saved })
    }

    /// A stream on the real stdout, for protocol lines only.
    pub(super) fn protocol_stream(&self) -> io::Result<File> {
        Ok(File::from(dup(self.saved.as_raw_fd())?))
    }
}

impl Drop for StdoutGuard {
    fn drop(&mut self) {
        let _ = io::stdout().flush();
        // SAFETY: restores fd 1 from the copy this guard owns.
        unsafe { libc::dup2(self.saved.as_raw_fd(), io::stdout().as_raw_fd()) };
    }
}

fn dup(fd: i32) -> io::Result<OwnedFd> {
    // SAFETY: dup of an open descriptor; the new descriptor is owned by the returned value.
    let new = unsafe { libc::dup(fd) };
    if new < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `new` is a fresh descriptor nobody else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(new) })
}
