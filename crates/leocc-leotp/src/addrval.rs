//! Address validation: a node answers an interest with data only when the interest proves
//! that its source address is real, the way QUIC's Retry does (RFC 9000 section 8.1).
//!
//! Why: an interest is 36 bytes and may ask for 1,024 segments, about 1.5 MB; over UDP its
//! source address can be forged, so without this step any node is a 40,000-fold reflector
//! towards whatever address an attacker writes into the packet. A node therefore answers an
//! interest that carries no valid token with a `Token` packet only (no data, no state kept),
//! and that packet is never more than `AMPLIFICATION_LIMIT` times the bytes of the interest
//! that caused it. The requester echoes the token in its next interests; a forged source never
//! sees the token, so it never gets data.
//!
//! The token is stateless: HMAC-SHA256 (from `ring`, already in the workspace for QUIC) over
//! the source address (IP and port) and a coarse epoch of the node's monotonic clock, keyed by
//! a random key drawn when the node starts, truncated to `TOKEN_LEN` bytes. A node keeps no
//! per-address table, so a flood of sources cannot fill one. A token is accepted during the
//! epoch it was made in and the next one; one from the previous epoch is still served, and
//! the node sends a fresh token along (an empty-range `Token`), so a long transfer never
//! stalls on expiry.

use crate::counters::Counters;
use crate::packet::Packet;
use ring::hmac;
use std::net::{IpAddr, SocketAddr};
use std::time::Instant;

/// Bytes of a token: a truncated HMAC-SHA256. 128 bits make guessing hopeless (one online
/// guess per packet) and keep the interest small (32 + name + 16 bytes).
pub const TOKEN_LEN: usize = 16;
/// Length of a token epoch, s: a token is valid for one to two epochs (30–60 s). Short
/// enough that a token leaked by an on-path observer is soon useless, long enough that the
/// refresh costs one small packet per half minute of transfer.
pub const TOKEN_EPOCH_S: u64 = 30;
/// Most bytes a node sends towards an address it has not validated, per byte received from
/// it: RFC 9000 section 8.1's anti-amplification limit. Applied per packet (a `Token` reply is
/// the only answer to an unvalidated interest), so it holds per address over any time span
/// without a per-address table.
pub const AMPLIFICATION_LIMIT: usize = 3;
/// Domain separation of the MAC input, so a token can never be mistaken for another use of
/// the same key (and version 3 tokens will not verify as version 2 ones).
const LABEL: &[u8] = b"leotp-v2-address-token";

/// What a token says about the address that sent it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Check {
    /// Made for this address in the current epoch.
    Valid,
    /// Made for this address in the previous epoch: serve, and send a fresh token.
    Stale,
    /// Missing, forged, made for another address, or older: answer with a token only.
    Invalid,
}

/// Makes and checks address tokens with a per-process random key.
pub struct Validator {
    key: hmac::Key,
    origin: Instant,
    /// The last token that verified: (address, token, epoch, result). A node hears from one
    /// or a few neighbours, each repeating its token in every interest, so this saves the
    /// HMAC on nearly every interest (measurable in `leocc bench leotp`).
    last: Option<(SocketAddr, [u8; TOKEN_LEN], u64, Check)>,
}

impl std::fmt::Debug for Validator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never print the key.
        f.debug_struct("Validator").field("epoch", &self.epoch()).finish_non_exhaustive()
    }
}

impl Validator {
    /// A validator with a fresh random key. Fails only if the system's random source does.
    pub fn new() -> Result<Validator, String> {
        let rng = ring::rand::SystemRandom::new();
        let key = hmac::Key::generate(hmac::HMAC_SHA256, &rng).map_err(|_| "the system random source failed (address-token key)".to_string())?;
        Ok(Validator { key, origin: Instant::now(), last: None })
    }

    /// The current epoch of this node's clock.
    fn epoch(&self) -> u64 {
        self.origin.elapsed().as_secs() / TOKEN_EPOCH_S
    }

    /// The token for `addr` in `epoch`.
    fn token_at(&self, addr: SocketAddr, epoch: u64) -> [u8; TOKEN_LEN] {
        let ip = match addr.ip() {
            IpAddr::V4(a) => a.to_ipv6_mapped().octets(),
            IpAddr::V6(a) => a.octets(),
        };
        let mut ctx = hmac::Context::with_key(&self.key);
        ctx.update(LABEL);
        ctx.update(&epoch.to_be_bytes());
        ctx.update(&ip);
        ctx.update(&addr.port().to_be_bytes());
        let tag = ctx.sign();
        let mut t = [0u8; TOKEN_LEN];
        t.copy_from_slice(&tag.as_ref()[..TOKEN_LEN]);
        t
    }

    /// A token for `addr`, valid now and in the next epoch.
    pub fn token(&self, addr: SocketAddr) -> [u8; TOKEN_LEN] {
        self.token_at(addr, self.epoch())
    }

    /// Checks the token an interest from `addr` carried (empty: none).
    pub fn check(&mut self, addr: SocketAddr, token: &[u8]) -> Check {
        let epoch = self.epoch();
        if let Some((a, t, e, c)) = &self.last {
            if *a == addr && *e == epoch && same(t, token) {
                return *c;
            }
        }
        let c = self.check_at(addr, token, epoch);
        if c != Check::Invalid {
            if let Ok(t) = <[u8; TOKEN_LEN]>::try_from(token) {
                self.last = Some((addr, t, epoch, c));
            }
        }
        c
    }

    fn check_at(&self, addr: SocketAddr, token: &[u8], epoch: u64) -> Check {
        if token.len() != TOKEN_LEN {
            return Check::Invalid;
        }
        if same(token, &self.token_at(addr, epoch)) {
            Check::Valid
        } else if epoch > 0 && same(token, &self.token_at(addr, epoch - 1)) {
            Check::Stale
        } else {
            Check::Invalid
        }
    }
}

/// Compares in time independent of where the bytes differ, so response timing does not
/// leak how much of a guessed token was right.
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// What a node does with an interest, by its token.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Admit {
    /// Serve it.
    Serve,
    /// Do nothing more: the source is not validated and was sent a token (or nothing, had
    /// the token exceeded the amplification limit).
    Drop,
}

impl Validator {
    /// Checks interest `p` (`received` bytes, from `from`) and answers what needs answering
    /// before it may be served: an unvalidated source gets a token packet for the interest's
    /// range and nothing else; a stale token gets a refresh. `out` is scratch space; the
    /// counters `unvalidated` and `tokens_sent` count what happened.
    pub fn admit(&mut self, p: &Packet, received: usize, from: SocketAddr, sock: &std::net::UdpSocket, out: &mut Vec<u8>, c: &mut Counters) -> Admit {
        let check = self.check(from, p.payload);
        if check == Check::Valid {
            return Admit::Serve;
        }
        let token = self.token(from);
        let reply = match check {
            Check::Invalid => {
                c.unvalidated += 1;
                Packet::token(p.name, p.start, p.end, p.flags, &token)
            }
            _ => Packet::token(p.name, 0, 0, 0, &token),
        };
        // A token reply is HEADER_LEN + name + TOKEN_LEN bytes against at least HEADER_LEN +
        // name received, so this always holds; it is checked anyway, as the rule.
        if within_limit(received, reply.wire_len()) {
            reply.encode(out);
            match sock.send_to(out, from) {
                Ok(_) => {
                    c.tx_packets += 1;
                    c.tokens_sent += 1;
                }
                Err(_) => c.send_errors += 1,
            }
        }
        if check == Check::Stale {
            Admit::Serve
        } else {
            Admit::Drop
        }
    }
}

/// Whether a reply of `reply` bytes to an unvalidated packet of `received` bytes respects the
/// anti-amplification limit.
pub fn within_limit(received: usize, reply: usize) -> bool {
    reply <= AMPLIFICATION_LIMIT.saturating_mul(received)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_is_bound_to_the_address_and_ages_out_after_two_epochs() {
        let v = Validator::new().unwrap();
        let a: SocketAddr = "10.0.0.1:5301".parse().unwrap();
        let t = v.token_at(a, 7);
        assert_eq!(v.check_at(a, &t, 7), Check::Valid);
        assert_eq!(v.check_at(a, &t, 8), Check::Stale, "still served in the next epoch, with a refresh");
        assert_eq!(v.check_at(a, &t, 9), Check::Invalid);
        assert_eq!(v.check_at(a, &t, 6), Check::Invalid, "not valid before it was made");
        // Another port, another host, the v6 form of another host: all refused.
        for other in ["10.0.0.1:5302", "10.0.0.2:5301", "[::1]:5301"] {
            assert_eq!(v.check_at(other.parse().unwrap(), &t, 7), Check::Invalid, "{other}");
        }
        // Truncated, empty, flipped bits.
        assert_eq!(v.check_at(a, &t[..TOKEN_LEN - 1], 7), Check::Invalid);
        assert_eq!(v.check_at(a, &[], 7), Check::Invalid);
        let mut bad = t;
        bad[TOKEN_LEN - 1] ^= 1;
        assert_eq!(v.check_at(a, &bad, 7), Check::Invalid);
        // Another node (another key) does not accept it.
        assert_eq!(Validator::new().unwrap().check_at(a, &t, 7), Check::Invalid);
        // Through the one-entry memo: the same answers, for the same and for other inputs.
        let mut v = v;
        let now = v.token(a);
        for _ in 0..2 {
            assert_eq!(v.check(a, &now), Check::Valid);
            assert_eq!(v.check(a, &bad), Check::Invalid);
            assert_eq!(v.check("10.0.0.1:5302".parse().unwrap(), &now), Check::Invalid);
        }
    }

    #[test]
    fn the_limit_is_three_times_what_was_received() {
        assert!(within_limit(36, 108) && !within_limit(36, 109) && !within_limit(0, 1));
        assert!(within_limit(usize::MAX, usize::MAX));
    }
}
