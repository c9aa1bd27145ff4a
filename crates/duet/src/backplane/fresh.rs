//! Why a genuine bus message is believed only once, and only while it is fresh: the MAC
//! ([`super::mac`]) proves a replica of this deployment sealed a message, not that it was
//! sealed for this moment. Anyone who can SUBSCRIBE to the bus channel and PUBLISH to it
//! could otherwise capture a `Routed` message (a client's POST with its principal) and
//! publish it again, running that person's tool call a second time. So every bus message
//! carries, under the MAC, when it was sent and a sequence number of its sender, and a
//! receiver refuses one sent more than [`MAX_AGE`] ago (or as far ahead, for clock skew)
//! and one whose origin and sequence it has accepted already: per origin, the highest
//! sequence seen and a bitmap of the [`WINDOW`] before it, as IPsec and DTLS keep. An
//! origin not heard from for [`MAX_AGE`] is forgotten: every message of it accepted so far
//! is then too old to be accepted again, so memory stays bounded by the live replicas.

use super::Published;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// How long ago (or, for clock skew, how far ahead) a message may have been sent and still
/// be believed. The replicas' clocks must agree within it (NTP).
pub(super) const MAX_AGE: Duration = Duration::from_secs(30);
/// How far below the highest sequence seen of an origin a message may be and still be
/// accepted (once). Messages of one sender arrive nearly in order: the outbox stamps each
/// as it sends it, but a pipeline of them and messages published at once by other tasks
/// may pass each other on the connection.
pub(super) const WINDOW: u64 = 1024;
const WORDS: usize = (WINDOW / 64) as usize;

/// A bus message as it is sealed: when and as which of its sender's messages it was sent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(super) struct Stamped {
    /// Milliseconds since the Unix epoch, on the sender's clock.
    pub sent: u64,
    /// Counts the messages its sender sealed, from 0.
    pub sequence: u64,
    pub published: Published,
}

/// Numbers the messages one backplane sends. Servers sharing one backplane in a process
/// share its numbers: each origin's then have gaps, which the window takes as it takes loss.
#[derive(Debug, Default)]
pub(super) struct Stamper {
    next: AtomicU64,
}

impl Stamper {
    /// `published`, stamped as sent at `now` (ms since the epoch) with the next sequence.
    pub(super) fn stamp(&self, published: Published, now: u64) -> Stamped {
        Stamped { sent: now, sequence: self.next.fetch_add(1, Ordering::Relaxed), published }
    }
}

/// Why a stamped message is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Refusal {
    /// Sent more than [`MAX_AGE`] before now, or as far after.
    Old,
    /// Its origin's sequence was accepted already, or lies below the window.
    Replayed,
}

impl Refusal {
    /// Its label in [`crate::signals::BACKPLANE_REJECTIONS`].
    pub(super) fn label(self) -> &'static str {
        match self {
            Refusal::Old => "bus_stale",
            Refusal::Replayed => "bus_replay",
        }
    }
}

/// What a receiver remembers of the messages it accepted, per origin.
#[derive(Debug, Default)]
pub(super) struct Freshness {
    origins: Mutex<HashMap<u64, Seen>>,
}

impl Freshness {
    /// Whether `stamped`, received at `now` (ms since the epoch), is fresh; if it is, it is
    /// remembered as accepted.
    pub(super) fn admit(&self, stamped: &Stamped, now: u64) -> Result<(), Refusal> {
        let max_age = MAX_AGE.as_millis() as u64;
        if stamped.sent.abs_diff(now) > max_age {
            return Err(Refusal::Old);
        }
        let mut origins = self.origins.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        origins.retain(|_, seen| seen.latest_sent.saturating_add(max_age) >= now);
        let seen = origins.entry(stamped.published.origin).or_insert_with(|| Seen::new(stamped.sequence));
        seen.accept(stamped.sequence)?;
        seen.latest_sent = seen.latest_sent.max(stamped.sent);
        Ok(())
    }

    /// How many origins it remembers.
    #[cfg(test)]
    fn origins(&self) -> usize {
        self.origins.lock().unwrap().len()
    }
}

/// The sequences of one origin accepted within the window.
#[derive(Debug)]
struct Seen {
    highest: u64,
    /// Bit `s % WINDOW` is set when sequence `s` (within the window) was accepted.
    accepted: Box<[u64; WORDS]>,
    /// The latest send time of a message accepted from the origin.
    latest_sent: u64,
}

impl Seen {
    /// Before any message of an origin: the first one to come is the highest yet.
    fn new(first: u64) -> Self {
        Seen { highest: first, accepted: Box::new([0; WORDS]), latest_sent: 0 }
    }

    fn accept(&mut self, sequence: u64) -> Result<(), Refusal> {
        if sequence > self.highest {
            let newly_in_window = (sequence - self.highest).min(WINDOW);
            for skipped in sequence - newly_in_window + 1..sequence {
                self.set(skipped, false);
            }
            self.highest = sequence;
        } else if self.highest - sequence >= WINDOW || self.is_set(sequence) {
            return Err(Refusal::Replayed);
        }
        self.set(sequence, true);
        Ok(())
    }

    fn is_set(&self, sequence: u64) -> bool {
        let bit = sequence % WINDOW;
        self.accepted[(bit / 64) as usize] & (1 << (bit % 64)) != 0
    }

    fn set(&mut self, sequence: u64, accepted: bool) {
        let bit = sequence % WINDOW;
        let word = &mut self.accepted[(bit / 64) as usize];
        if accepted {
            *word |= 1 << (bit % 64);
        } else {
            *word &= !(1 << (bit % 64));
        }
    }
}

/// Now, in milliseconds since the Unix epoch, on this machine's clock.
pub(super) fn now_millis() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |since| since.as_millis() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backplane::Event;

    const NOW: u64 = 1_800_000_000_000;

    fn from(origin: u64, sequence: u64, sent: u64) -> Stamped {
        Stamped { sent, sequence, published: Published { origin, event: Event::Task("t".to_string()) } }
    }

    #[test]
    fn in_order_and_out_of_order_within_the_window_are_accepted_once() {
        let fresh = Freshness::default();
        for sequence in [0, 1, 2, 5, 4, 3, 9] {
            assert_eq!(fresh.admit(&from(1, sequence, NOW), NOW), Ok(()), "{sequence}");
        }
        for sequence in [0, 3, 5, 9] {
            assert_eq!(fresh.admit(&from(1, sequence, NOW), NOW), Err(Refusal::Replayed), "{sequence} again");
        }
        assert_eq!(fresh.admit(&from(1, 7, NOW), NOW), Ok(()), "a gap is filled late");
        assert_eq!(fresh.admit(&from(2, 0, NOW), NOW), Ok(()), "another origin counts apart");
    }

    #[test]
    fn below_the_window_is_refused_even_when_its_bit_is_clear() {
        let fresh = Freshness::default();
        let admit = |sequence| fresh.admit(&from(1, sequence, NOW), NOW);
        assert_eq!(admit(10), Ok(()));
        assert_eq!(admit(15 + WINDOW), Ok(()));
        assert_eq!(admit(10), Err(Refusal::Replayed), "accepted once, and fallen out of the window");
        assert_eq!(admit(12), Err(Refusal::Replayed), "never seen, but below the window");
        assert_eq!(admit(16), Ok(()), "the lowest sequence still inside");
    }

    #[test]
    fn a_bit_the_window_slides_past_is_free_for_the_sequence_that_reuses_it() {
        let fresh = Freshness::default();
        let admit = |sequence| fresh.admit(&from(1, sequence, NOW), NOW);
        assert_eq!(admit(5), Ok(()));
        assert_eq!(admit(WINDOW + 4), Ok(()), "5 is still inside the window");
        assert_eq!(admit(WINDOW + 6), Ok(()), "5 falls out; WINDOW + 5 takes its bit");
        assert_eq!(admit(WINDOW + 5), Ok(()), "late, within the window, and new");
        assert_eq!(admit(WINDOW + 5), Err(Refusal::Replayed));
    }

    #[test]
    fn a_message_sent_too_long_ago_or_ahead_is_refused() {
        let fresh = Freshness::default();
        let max_age = MAX_AGE.as_millis() as u64;
        assert_eq!(fresh.admit(&from(1, 0, NOW - max_age), NOW), Ok(()), "as old as allowed");
        assert_eq!(fresh.admit(&from(1, 1, NOW + max_age), NOW), Ok(()), "as far ahead as skew allows");
        assert_eq!(fresh.admit(&from(1, 2, NOW - max_age - 1), NOW), Err(Refusal::Old));
        assert_eq!(fresh.admit(&from(1, 3, NOW + max_age + 1), NOW), Err(Refusal::Old));
        assert_eq!(fresh.admit(&from(1, 3, NOW), NOW), Ok(()), "a refused old message was not remembered");
    }

    #[test]
    fn origins_not_heard_from_within_the_age_are_forgotten_and_their_messages_stay_refused() {
        let fresh = Freshness::default();
        let max_age = MAX_AGE.as_millis() as u64;
        assert_eq!(fresh.admit(&from(1, 0, NOW), NOW), Ok(()));
        assert_eq!(fresh.admit(&from(2, 0, NOW), NOW), Ok(()));
        assert_eq!(fresh.origins(), 2);
        let later = NOW + max_age + 1;
        assert_eq!(fresh.admit(&from(2, 1, later), later), Ok(()));
        assert_eq!(fresh.origins(), 1, "origin 1 was forgotten");
        assert_eq!(fresh.admit(&from(1, 0, NOW), later), Err(Refusal::Old), "its old message is too old by then");
    }

    #[test]
    fn a_stamper_numbers_what_it_sends() {
        let stamper = Stamper::default();
        let published = Published { origin: 1, event: Event::Task("t".to_string()) };
        let (first, second) = (stamper.stamp(published.clone(), NOW), stamper.stamp(published, NOW + 1));
        assert_eq!((first.sequence, first.sent), (0, NOW));
        assert_eq!((second.sequence, second.sent), (1, NOW + 1));
    }
}
