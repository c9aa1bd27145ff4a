//! A child process a test started: signalled and waited for by its PID, with a deadline,
//! so a test that stops a server never hangs on it.

use std::process::{Child, ExitStatus};
use std::time::{Duration, Instant};

/// Sends `signal` (`libc::SIGTERM`...) to `child`.
pub fn signal(child: &Child, signal: i32) {
    let pid = i32::try_from(child.id()).expect("a PID");
    // SAFETY: kill only sends a signal, to a process this test started.
    assert_eq!(unsafe { libc::kill(pid, signal) }, 0, "kill({pid}, {signal})");
}

/// How `child` exited, if it does within `timeout`.
pub fn exit_within(child: &mut Child, timeout: Duration) -> Option<ExitStatus> {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(status) = child.try_wait().expect("waiting for the child") {
            return Some(status);
        }
        if Instant::now() >= deadline {
            return None;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}
