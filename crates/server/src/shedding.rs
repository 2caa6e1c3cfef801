//! Which connection the listener gives up when every slot is held and
//! another client waits: the probes' guarantee.
//!
//! Only a connection still reading its request head may go (it has asked
//! nothing yet; one whose request is complete is answered, whatever
//! waits). Among those, the peer holding the most goes first, and of its
//! connections the oldest. So clients that connect and send nothing, or
//! trickle a head that never ends, cannot keep out a probe that sends its
//! request as it connects: each newcomer takes the place of the oldest of
//! them, and a probe's request is complete when it is accepted (or soon
//! after), out of their reach. Counting by peer keeps one host from
//! pushing out another's connections while it holds more of its own.
//!
//! Owns that choice; knows nothing of sockets, deadlines or routes.

use std::collections::HashMap;
use std::net::IpAddr;

/// The connection to shed, given each open connection's peer and whether
/// it still awaits its request, oldest first; `None` when every request
/// is complete.
pub(crate) fn victim(connections: &[(IpAddr, bool)]) -> Option<usize> {
    let mut held: HashMap<IpAddr, usize> = HashMap::new();
    for (peer, _) in connections.iter().filter(|(_, awaiting)| *awaiting) {
        *held.entry(*peer).or_default() += 1;
    }
    let most = held.values().copied().max()?;
    connections
        .iter()
        .position(|(peer, awaiting)| *awaiting && held.get(peer) == Some(&most))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(last: u8) -> IpAddr {
        IpAddr::from([127, 0, 0, last])
    }

    #[test]
    fn the_oldest_connection_without_a_request_goes_first() {
        let one = ip(1);
        assert_eq!(victim(&[(one, false), (one, true), (one, true)]), Some(1));
        assert_eq!(victim(&[(one, true), (one, true)]), Some(0));
    }

    #[test]
    fn a_complete_request_is_never_shed() {
        assert_eq!(victim(&[(ip(1), false), (ip(2), false)]), None);
        assert_eq!(victim(&[]), None);
    }

    #[test]
    fn the_peer_holding_the_most_loses_one_first() {
        // A probe's host (1), older, waiting for its request's bytes,
        // against a host (2) holding three silent connections.
        let held = [(ip(1), true), (ip(2), true), (ip(2), true), (ip(2), true)];
        assert_eq!(victim(&held), Some(1));
        // As many each: the oldest.
        assert_eq!(victim(&[(ip(2), true), (ip(1), true)]), Some(0));
    }
}
