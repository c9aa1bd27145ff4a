//! The open-file budget of an HTTP server. Every connection is a descriptor, and a process
//! that runs out cannot even accept the connection that would tell a client so: `accept`
//! fails with EMFILE at once, again and again. So the connection cap is held under the
//! limit with room to spare ([`connection_budget`]), one descriptor is kept in reserve to
//! accept and refuse a connection when the process is out ([`Reserve`]), and exhaustion is
//! logged once per interval rather than once per attempt ([`Exhaustion`]).

use rustix::io::Errno;
use rustix::process::{Resource, Rlimit, getrlimit, setrlimit};
use std::fs::File;
use std::io;
use std::os::fd::OwnedFd;
use std::time::{Duration, Instant};

/// Descriptors left for everything that is not a connection: listeners, the reserve, the
/// runtime's own, files handlers open, refusals in progress.
pub(crate) const RESERVED: usize = 64;

/// How often exhaustion is logged while it lasts.
const LOG_EVERY: Duration = Duration::from_secs(5);

/// Raises this process's soft open-files limit to its hard limit (the usual soft limit,
/// 1,024, is far below what a server for many clients needs). Returns the new soft limit.
/// `duet serve` calls it at start; a program embedding the HTTP server may too.
pub fn raise_open_files_limit() -> io::Result<u64> {
    let Rlimit { current, maximum } = getrlimit(Resource::Nofile);
    let (soft, hard) = (unlimited_as_max(current), unlimited_as_max(maximum));
    if soft < hard {
        setrlimit(Resource::Nofile, Rlimit { current: maximum, maximum })?;
        return Ok(hard);
    }
    Ok(soft)
}

/// A limit as `getrlimit` reports it, unlimited (`None`) as `RLIM_INFINITY`, the largest.
fn unlimited_as_max(limit: Option<u64>) -> u64 {
    limit.unwrap_or(u64::MAX)
}

/// The soft open-files limit.
fn open_files_limit() -> u64 {
    unlimited_as_max(getrlimit(Resource::Nofile).current)
}

/// The connection cap the limit allows: `wanted`, or less when the soft limit leaves no
/// room for it beside [`RESERVED`] (never below one).
pub(crate) fn connection_budget(wanted: usize) -> usize {
    let limit = open_files_limit();
    let room = usize::try_from(limit).unwrap_or(usize::MAX).saturating_sub(RESERVED).max(1);
    if room < wanted {
        tracing::warn!(
            max_connections = wanted,
            open_files_limit = limit,
            allowed = room,
            "the open-files limit leaves room for fewer connections than --max-connections; raise it (ulimit -n)"
        );
    }
    wanted.min(room)
}

/// Whether an accept failed for want of descriptors or memory: waiting helps, retrying at
/// once does not.
pub(crate) fn exhausted(error: &io::Error) -> bool {
    matches!(Errno::from_io_error(error), Some(Errno::MFILE | Errno::NFILE | Errno::NOBUFS | Errno::NOMEM))
}

/// One descriptor held back (`/dev/null`, or a refused connection's socket), given up for a
/// moment to accept a connection when the process is out of them.
pub(crate) struct Reserve(Option<OwnedFd>);

impl Reserve {
    pub(super) fn new() -> Reserve {
        let mut reserve = Reserve(None);
        reserve.restore();
        reserve
    }

    /// Frees the reserved descriptor; `true` when there was one.
    pub(super) fn release(&mut self) -> bool {
        self.0.take().is_some()
    }

    /// Keeps `fd` as the reserve: the descriptor a refusal used is never freed for another
    /// thread to take before the reserve is back.
    pub(super) fn keep(&mut self, fd: OwnedFd) {
        self.0 = Some(fd);
    }

    /// Takes a descriptor back into reserve if it has none and one is free.
    pub(super) fn restore(&mut self) {
        if self.0.is_none() {
            self.0 = File::open("/dev/null").ok().map(OwnedFd::from);
        }
    }
}

/// Exhaustion while it lasts: a growing pause between attempts, and a log line per interval.
pub(crate) struct Exhaustion {
    pause: Duration,
    since_logged: Option<(Instant, u64)>,
}

impl Exhaustion {
    pub(super) fn new() -> Exhaustion {
        Exhaustion { pause: Duration::ZERO, since_logged: None }
    }

    /// Notes one failed accept; returns how long to wait before the next.
    pub(super) fn failed(&mut self, error: &io::Error) -> Duration {
        self.pause = (self.pause * 2).clamp(Duration::from_millis(10), Duration::from_secs(1));
        match &mut self.since_logged {
            Some((at, count)) if at.elapsed() < LOG_EVERY => *count += 1,
            _ => {
                let repeated = self.since_logged.map_or(0, |(_, count)| count);
                tracing::warn!(repeated, "accept failed: {error}; refusing connections until descriptors free up");
                self.since_logged = Some((Instant::now(), 0));
            }
        }
        self.pause
    }

    /// An accept succeeded: the next failure starts over.
    pub(super) fn recovered(&mut self) {
        if self.since_logged.take().is_some() {
            tracing::info!("accepting connections again");
        }
        self.pause = Duration::ZERO;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exhaustion_waits_longer_and_logs_once_per_interval() {
        let error = io::Error::from(Errno::MFILE);
        assert!(exhausted(&error));
        assert!(!exhausted(&io::Error::from(Errno::CONNABORTED)));
        let mut exhaustion = Exhaustion::new();
        let pauses: Vec<Duration> = (0..9).map(|_| exhaustion.failed(&error)).collect();
        assert_eq!(pauses[0], Duration::from_millis(10));
        assert_eq!(pauses[1], Duration::from_millis(20));
        assert_eq!(pauses[8], Duration::from_secs(1), "capped");
        assert_eq!(exhaustion.since_logged.map(|(_, n)| n), Some(8), "logged once, the rest counted");
        exhaustion.recovered();
        assert_eq!(exhaustion.failed(&error), Duration::from_millis(10));
    }

    #[test]
    fn the_reserve_gives_one_descriptor_back_and_takes_it_again() {
        let mut reserve = Reserve::new();
        assert!(reserve.release());
        assert!(!reserve.release(), "given up once");
        reserve.restore();
        assert!(reserve.release());
        reserve.keep(File::open("/dev/null").unwrap().into());
        assert!(reserve.release(), "a kept descriptor is the reserve");
    }
}
