//! A child process a test started: signalled and waited for by its PID, with a deadline,
//! so a test that stops a server never hangs on it.

use rustix::process::{Pid, Signal, kill_process};
use std::process::{Child, ExitStatus};
use std::time::{Duration, Instant};

/// Sends `signal` (`Signal::TERM`...) to `child`.
pub fn signal(child: &Child, signal: Signal) {
    let pid = i32::try_from(child.id()).ok().and_then(Pid::from_raw).expect("a PID");
    kill_process(pid, signal).unwrap_or_else(|e| panic!("kill({pid:?}, {signal:?}): {e}"));
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
