//! Open connections per peer, so that one client cannot hold every connection
//! `--max-connections` leaves room for: a connection from a peer that holds
//! `max_connections_per_peer` already is refused as one over the server's cap is. A peer is
//! an IPv4 address (also when mapped into IPv6), or an IPv6 /64: one host is commonly given a
//! whole /64, and could otherwise spread its connections across it. Behind a reverse proxy
//! every connection comes from the proxy's address, so the cap there must be raised to what
//! the proxy opens, or turned off (0).

use std::collections::HashMap;
use std::net::{IpAddr, Ipv6Addr};
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

/// The peer `address` counts as: an IPv4 address as itself (mapped into IPv6 too), an IPv6
/// address as its /64 network.
fn peer_of(address: IpAddr) -> IpAddr {
    match address.to_canonical() {
        IpAddr::V6(v6) => IpAddr::V6(Ipv6Addr::from(u128::from(v6) & !u128::from(u64::MAX))),
        v4 => v4,
    }
}

impl Peers {
    /// At most `max` connections per peer; 0 for no cap.
    pub(super) fn new(max: usize) -> Peers {
        Peers { max, open: Arc::default() }
    }

    /// Counts a connection from `address`, unless its peer holds as many as it may.
    pub(super) fn enter(&self, address: IpAddr) -> Option<PeerSlot> {
        let peer = peer_of(address);
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

    #[test]
    fn an_ipv6_peer_is_its_64() {
        let peers = Peers::new(2);
        let address = |s: &str| s.parse::<IpAddr>().unwrap();
        let _first = peers.enter(address("2001:db8:1:2::1")).expect("room");
        let _second = peers.enter(address("2001:db8:1:2:ffff:ffff:ffff:ffff")).expect("room");
        assert!(peers.enter(address("2001:db8:1:2:abcd::7")).is_none(), "a third address of the same /64");
        assert!(peers.enter(address("2001:db8:1:3::1")).is_some(), "the next /64 has room of its own");
        assert_eq!(peer_of(address("2001:db8:1:2:abcd::7")), address("2001:db8:1:2::"));
        assert_eq!(peer_of(address("::ffff:192.0.2.9")), address("192.0.2.9"), "a mapped IPv4 address is itself");
        assert_eq!(peer_of(address("192.0.2.9")), address("192.0.2.9"), "IPv4 is never grouped");
    }
}
