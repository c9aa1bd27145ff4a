//! The ids duet hands clients for what they name again later (a task, a handshake-era
//! session), which also name that thing's keys in the backplane's store: 128 random bits
//! written as 32 lowercase hex digits. An id a client sends is checked against this format
//! before it becomes part of a key, so it can only ever name a thing of its own kind: never
//! another key that starts the same way (`task:ID:lease`), and the store is never asked
//! about what duet cannot have made (`../x`, a 10 KB string).

/// How many hex digits an id has.
const DIGITS: usize = 32;

/// A new id.
pub(crate) fn new() -> String {
    format!("{:0DIGITS$x}", rand::random::<u128>())
}

/// Whether `id` has the form [`new`] gives: exactly 32 digits of `0-9a-f`.
pub(crate) fn well_formed(id: &str) -> bool {
    id.len() == DIGITS && id.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_exactly_what_it_makes() {
        for _ in 0..100 {
            let id = new();
            assert!(well_formed(&id), "{id}");
        }
        let made = new();
        for other in [
            format!("{made}:lease"),
            made.to_uppercase(),
            made[..31].to_string(),
            format!("{made}0"),
            "../x".to_string(),
            String::new(),
            "g".repeat(32),
            "a".repeat(10 * 1024),
            format!("{}é", &made[..30]),
        ] {
            assert!(!well_formed(&other), "{other:?} is no id duet makes");
        }
    }
}
