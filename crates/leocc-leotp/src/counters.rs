//! What a node counts: everything it dropped and why, and what the protocol did. Printed in
//! the JSON report of every program, so bad input is visible, never silent.

use serde::Serialize;

/// Counters of one node. Plain integers: each node is one thread.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Counters {
    /// Datagrams received.
    pub rx_packets: u64,
    /// Datagrams sent.
    pub tx_packets: u64,
    /// Dropped: not a valid LEOTP packet (truncated, oversized, bad fields).
    pub malformed: u64,
    /// Dropped: data or void from an address that is not this node's upstream hop.
    pub spoofed: u64,
    /// Dropped: data nobody asked for (no pending request), or of unknown content.
    pub unsolicited: u64,
    /// Dropped: an interest for content this node cannot serve or does not know.
    pub unknown_content: u64,
    /// Dropped: a table (flows, pending requests) was full.
    pub state_full: u64,
    /// Interests from a source without a valid address token: answered with a token only
    /// (at most `addrval::AMPLIFICATION_LIMIT` times their bytes), nothing else done.
    pub unvalidated: u64,
    /// Token packets sent (to unvalidated sources, and refreshes).
    pub tokens_sent: u64,
    /// Token packets received from upstream (this node's requests were not validated yet).
    pub tokens_received: u64,
    /// Error packets sent (a request refused: name table full, unknown content), own or
    /// relayed from upstream.
    pub errors_sent: u64,
    /// Error packets received from upstream.
    pub errors_received: u64,
    /// Content names dropped from the name table: idle for `names::NAME_IDLE_US`, or
    /// reported by upstream as served by nobody.
    pub names_expired: u64,
    /// Dropped by the test/demo loss injector (`--inject-loss`).
    pub injected_losses: u64,
    /// Segments answered from this node's cache.
    pub cache_hits: u64,
    /// Sequence holes detected on the upstream hop (segments).
    pub holes_detected: u64,
    /// Segments re-requested from the upstream hop because of a hole.
    pub innet_retx_requests: u64,
    /// Re-requests overtaken by the answer to a later request (lost again) and sent again.
    pub repairs_lost: u64,
    /// Segments a downstream neighbour's lost interests had asked for, found by the gap in
    /// its sequence of new requests and fetched without waiting for the hole.
    pub interest_gaps: u64,
    /// Void packet headers sent downstream.
    pub void_sent: u64,
    /// Void packet headers received from upstream.
    pub void_received: u64,
    /// Duplicate data segments received.
    pub duplicates: u64,
    /// Socket send errors (buffer full, unreachable): the packet is lost, as on a real link.
    pub send_errors: u64,
}
