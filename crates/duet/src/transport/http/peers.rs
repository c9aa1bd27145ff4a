//! Open connections per peer address, so that one client cannot hold every connection
//! `--max-connections` leaves room for: a connection from an address that holds
//! `max_connections_per_peer` already is refused as one over the server's cap is. Behind a
//! reverse proxy every connection comes from the proxy's address, so the cap there must be
//! raised to what the proxy opens, or turned off (0).

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};

pub(super) struct Peers {
    /// 0: no cap.
    max: usize,
    open: Arc<Mutex<HashMap<IpAddr, usize>>>,
}

/// One connection counted for its peer until dropped.
pub(super) struct PeerSlot {
    peer: IpAddr,
    open: Arc<Mutex<HashMap<IpAddr, usize>>>,
}

impl Drop for PeerSlot {
    fn drop(&mut self) {
        let mut open = self.open.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(n) = open.get_mut(&self.peer) {
            *n -= 1;
            if *n == 0 {
                open.remove(&self.peer);
            }
        }
    }
}

impl Peers {
    /// At most `max` connections per address; 0 for no cap.
    pub fn new(max: usize) -> Peers {
        Peers { max, open: Arc::default() }
    }

    /// Counts a connection from `peer`, unless its address holds as many as it may. An IPv4
    /// address mapped into IPv6 counts as itself.
    pub fn enter(&self, peer: IpAddr) -> Option<PeerSlot> {
        let peer = peer.to_canonical();
        let mut open = self.open.lock().unwrap_or_else(|p| p.into_inner());
        let held = open.entry(peer).or_insert(0);
        if self.max > 0 && *held >= self.max {
            return None;
        }
        *held += 1;
        Some(PeerSlot { peer, open: self.open.clone() })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cap_per_address() {
        let peers = Peers::new(2);
        let (one, other): (IpAddr, IpAddr) = ("10.0.0.1".parse().unwrap(), "10.0.0.2".parse().unwrap());
        let first = peers.enter(one).expect("room");
        let _second = peers.enter(one).expect("room");
        assert!(peers.enter(one).is_none(), "a third from the same address");
        let mapped: IpAddr = "::ffff:10.0.0.1".parse().unwrap();
        assert!(peers.enter(mapped).is_none(), "the same address, mapped into IPv6");
        assert!(peers.enter(other).is_some(), "another address has room of its own");
        drop(first);
        assert!(peers.enter(one).is_some(), "room again once one closed");
        let uncapped = Peers::new(0);
        let held: Vec<PeerSlot> = (0..1000).map_while(|_| uncapped.enter(one)).collect();
        assert_eq!(held.len(), 1000, "0 is no cap");
    }
}
