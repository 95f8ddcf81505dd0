//! Per-flow counters at the bottleneck: what each flow got through the satellite data queue.
//!
//! The satellite data stage of each direction counts, per flow, the packets and bytes that
//! *departed its queue*: the moment the packet's last byte is served by a delivery opportunity
//! (mahimahi's `-` line, what Pantheon's link logs count). Every drop the stage models is
//! decided before that point (a full queue, drop-front and CoDel drops, random loss and outages
//! on arrival), so a departed packet is one the link carried; what happens to it afterwards on
//! a lossy or capacity-limited terrestrial segment is not subtracted.
//!
//! A flow is keyed by IP protocol, addresses and, for TCP, UDP, UDP-Lite, SCTP and DCCP, ports
//! ([`flow_key`]). Packets are untrusted (anything a process in a namespace writes reaches the
//! emulator), so parsing never indexes past what it checked, and memory is bounded: at most
//! [`MAX_FLOWS`] keys, then everything new is counted under [`FlowKey::Other`], and at most
//! [`MAX_BIN_ENTRIES`] per-interval bins per table, after which bins stop growing (totals stay
//! exact, and [`FlowTable::bins_complete`] says so).

use std::collections::HashMap;
use std::net::Ipv4Addr;

/// Distinct flows a table keeps before new ones go to [`FlowKey::Other`]. Far above what an
/// experiment runs (a handful of flows and their control connections), and a table of this
/// many keys stays below a megabyte.
pub const MAX_FLOWS: usize = 4096;
/// Width of a per-interval bin, µs: the time series' 100 ms.
pub const BIN_US: u64 = 100_000;
/// Bins (8 bytes each) a table holds at most, across its flows: 8 MB, an hour of 100 ms bins for
/// 200 flows. A flow's bins cover its first to its last departure.
pub const MAX_BIN_ENTRIES: usize = 1 << 20;

const IPV4_VERSION: u8 = 4;
const IPV4_MIN_HEADER: usize = 20;
/// Fragment offset bits of the IPv4 flags/fragment field.
const FRAGMENT_OFFSET_MASK: u16 = 0x1fff;
const PROTO_TCP: u8 = 6;
const PROTO_UDP: u8 = 17;
const PROTO_DCCP: u8 = 33;
const PROTO_SCTP: u8 = 132;
const PROTO_UDPLITE: u8 = 136;

/// Which flow a packet belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum FlowKey {
    /// A well-formed IPv4 packet. Ports are 0 for protocols without them and for non-first
    /// fragments (which do not carry the transport header).
    Ipv4 {
        /// IP protocol number (6 TCP, 17 UDP, ...).
        proto: u8,
        /// Source address.
        src: Ipv4Addr,
        /// Destination address.
        dst: Ipv4Addr,
        /// Source port.
        sport: u16,
        /// Destination port.
        dport: u16,
    },
    /// Not a packet [`flow_key`] can attribute: not IPv4, a header length that does not fit,
    /// or a port-carrying protocol cut off before its ports.
    Unparsed,
    /// Flows that arrived after the table was full ([`MAX_FLOWS`]).
    Other,
}

impl FlowKey {
    /// Whether `port` is this flow's source or destination port.
    pub fn has_port(&self, port: u16) -> bool {
        matches!(*self, FlowKey::Ipv4 { sport, dport, .. } if sport == port || dport == port)
    }
}

impl std::fmt::Display for FlowKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match *self {
            FlowKey::Ipv4 {
                proto,
                src,
                dst,
                sport,
                dport,
            } => {
                let name = match proto {
                    PROTO_TCP => "tcp".to_string(),
                    PROTO_UDP => "udp".to_string(),
                    p => format!("proto {p}"),
                };
                write!(f, "{name} {src}:{sport} > {dst}:{dport}")
            }
            FlowKey::Unparsed => f.write_str("unparsed"),
            FlowKey::Other => f.write_str("other (table full)"),
        }
    }
}

/// The flow of `pkt` (an IP packet as read from the TUN device). Never panics: whatever does not
/// parse is [`FlowKey::Unparsed`].
pub fn flow_key(pkt: &[u8]) -> FlowKey {
    let Some(&first) = pkt.first() else {
        return FlowKey::Unparsed;
    };
    if first >> 4 != IPV4_VERSION {
        return FlowKey::Unparsed;
    }
    let ihl = usize::from(first & 0x0f) * 4;
    if ihl < IPV4_MIN_HEADER || pkt.len() < ihl {
        return FlowKey::Unparsed;
    }
    let proto = pkt[9];
    let src = Ipv4Addr::new(pkt[12], pkt[13], pkt[14], pkt[15]);
    let dst = Ipv4Addr::new(pkt[16], pkt[17], pkt[18], pkt[19]);
    let fragment_offset = u16::from_be_bytes([pkt[6], pkt[7]]) & FRAGMENT_OFFSET_MASK;
    let has_ports = matches!(
        proto,
        PROTO_TCP | PROTO_UDP | PROTO_DCCP | PROTO_SCTP | PROTO_UDPLITE
    );
    let (sport, dport) = if !has_ports || fragment_offset != 0 {
        (0, 0)
    } else {
        match pkt.get(ihl..ihl + 4) {
            Some(p) => (
                u16::from_be_bytes([p[0], p[1]]),
                u16::from_be_bytes([p[2], p[3]]),
            ),
            None => return FlowKey::Unparsed,
        }
    };
    FlowKey::Ipv4 {
        proto,
        src,
        dst,
        sport,
        dport,
    }
}

/// What one flow got through the bottleneck.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FlowCount {
    /// Packets that departed the queue.
    pub pkts: u64,
    /// Their bytes (IP packets, headers included: the wire size the trace's 1500-byte
    /// opportunities count).
    pub bytes: u64,
    /// Emulation time of the first departure, µs.
    pub first_us: u64,
    /// Emulation time of the last departure, µs.
    pub last_us: u64,
    /// Index of the first bin (`first_us / BIN_US`).
    pub first_bin: u64,
    /// Bytes that departed in each [`BIN_US`] bin from `first_bin` on (emulation time); may
    /// stop short of `last_us` when the table's bin budget ran out.
    pub bins: Vec<u64>,
}

impl FlowCount {
    /// Bytes that departed in [from_us, to_us) of emulation time, from the bins; a bin the
    /// interval covers in part counts in proportion. None when the bins stop before `to_us`
    /// while departures went on (the table's bin budget ran out).
    pub fn bytes_between(&self, from_us: u64, to_us: u64) -> Option<f64> {
        if to_us <= from_us {
            return Some(0.0);
        }
        let binned_until = (self.first_bin + self.bins.len() as u64) * BIN_US;
        if to_us > binned_until && self.last_us >= binned_until {
            return None;
        }
        let mut sum = 0.0;
        for (i, &b) in self.bins.iter().enumerate() {
            let start = (self.first_bin + i as u64) * BIN_US;
            let end = start + BIN_US;
            let overlap = end.min(to_us).saturating_sub(start.max(from_us));
            sum += b as f64 * overlap as f64 / BIN_US as f64;
        }
        Some(sum)
    }
}

/// The per-flow counters of one stage.
#[derive(Debug, Clone)]
pub struct FlowTable {
    flows: HashMap<FlowKey, FlowCount>,
    bin_entries: usize,
    bins_complete: bool,
}

impl Default for FlowTable {
    fn default() -> FlowTable {
        FlowTable {
            flows: HashMap::new(),
            bin_entries: 0,
            bins_complete: true,
        }
    }
}

impl FlowTable {
    /// Counts a packet of `len` bytes with key `key` that departed at `t_us`.
    pub fn record(&mut self, key: FlowKey, t_us: u64, len: usize) {
        // Unparsed and Other stay countable when the table is full: two extra keys at most.
        let key = if self.flows.len() >= MAX_FLOWS
            && matches!(key, FlowKey::Ipv4 { .. })
            && !self.flows.contains_key(&key)
        {
            FlowKey::Other
        } else {
            key
        };
        let bin = t_us / BIN_US;
        let c = self.flows.entry(key).or_insert_with(|| FlowCount {
            first_us: t_us,
            first_bin: bin,
            ..FlowCount::default()
        });
        c.pkts += 1;
        c.bytes += len as u64;
        c.last_us = c.last_us.max(t_us);
        // Departures come in time order; a packet stamped before the flow's first bin (never
        // expected) is counted in the totals only.
        let Some(i) = bin.checked_sub(c.first_bin).map(|i| i as usize) else {
            return;
        };
        if i >= c.bins.len() {
            let grow = i + 1 - c.bins.len();
            if self.bin_entries + grow > MAX_BIN_ENTRIES {
                self.bins_complete = false;
                return;
            }
            self.bin_entries += grow;
            c.bins.resize(i + 1, 0);
        }
        c.bins[i] += len as u64;
    }

    /// Counts a departed packet, keyed by its own header.
    pub fn record_packet(&mut self, t_us: u64, pkt: &[u8]) {
        self.record(flow_key(pkt), t_us, pkt.len());
    }

    /// Whether every flow's bins reach its last departure (the bin budget never ran out).
    pub fn bins_complete(&self) -> bool {
        self.bins_complete
    }

    /// Number of keys (flows, and the catch-all keys in use).
    pub fn len(&self) -> usize {
        self.flows.len()
    }

    /// Whether nothing was counted.
    pub fn is_empty(&self) -> bool {
        self.flows.is_empty()
    }

    /// The counters of one key.
    pub fn get(&self, key: &FlowKey) -> Option<&FlowCount> {
        self.flows.get(key)
    }

    /// Every key and its counters, most bytes first (ties by key, so the order is stable).
    pub fn sorted(&self) -> Vec<(FlowKey, FlowCount)> {
        let mut v: Vec<(FlowKey, FlowCount)> =
            self.flows.iter().map(|(k, c)| (*k, c.clone())).collect();
        v.sort_by(|a, b| b.1.bytes.cmp(&a.1.bytes).then(a.0.cmp(&b.0)));
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A 40-byte IPv4 packet 100.64.0.2:40000 -> 100.100.0.2:5301 of protocol `proto`.
    fn packet(proto: u8) -> Vec<u8> {
        let mut p = vec![
            0x45, 0, 0, 40, 0, 1, 0x40, 0, 64, proto, 0, 0, 100, 64, 0, 2, 100, 100, 0, 2,
        ];
        p.extend_from_slice(&40000u16.to_be_bytes());
        p.extend_from_slice(&5301u16.to_be_bytes());
        p.resize(40, 0);
        p
    }

    fn tcp_key() -> FlowKey {
        FlowKey::Ipv4 {
            proto: PROTO_TCP,
            src: Ipv4Addr::new(100, 64, 0, 2),
            dst: Ipv4Addr::new(100, 100, 0, 2),
            sport: 40000,
            dport: 5301,
        }
    }

    #[test]
    fn keys_tcp_and_udp_by_their_five_tuple() {
        assert_eq!(flow_key(&packet(PROTO_TCP)), tcp_key());
        let FlowKey::Ipv4 {
            proto,
            sport,
            dport,
            ..
        } = flow_key(&packet(PROTO_UDP))
        else {
            panic!("UDP not parsed");
        };
        assert_eq!((proto, sport, dport), (PROTO_UDP, 40000, 5301));
        assert!(tcp_key().has_port(5301) && tcp_key().has_port(40000));
        assert!(!tcp_key().has_port(5302) && !FlowKey::Unparsed.has_port(0));
        // Options: the ports sit after a 24-byte header.
        let mut p = packet(PROTO_TCP);
        p[0] = 0x46;
        p.splice(20..20, [1, 1, 1, 0]);
        assert_eq!(flow_key(&p), tcp_key());
    }

    #[test]
    fn malformed_short_and_foreign_packets_are_unparsed_never_a_panic() {
        assert_eq!(flow_key(&[]), FlowKey::Unparsed);
        assert_eq!(flow_key(&[0x45]), FlowKey::Unparsed);
        // IPv6, and garbage whose first nibble is not 4.
        assert_eq!(flow_key(&[0x60; 60]), FlowKey::Unparsed);
        assert_eq!(flow_key(&[0xff; 60]), FlowKey::Unparsed);
        // A header length below 20 bytes, or beyond the packet.
        let mut p = packet(PROTO_TCP);
        p[0] = 0x44;
        assert_eq!(flow_key(&p), FlowKey::Unparsed);
        p[0] = 0x4f;
        assert_eq!(flow_key(&p), FlowKey::Unparsed);
        // TCP cut off inside its ports.
        let p = packet(PROTO_TCP);
        for n in 0..24 {
            assert_eq!(flow_key(&p[..n]), FlowKey::Unparsed, "{n} bytes");
        }
        assert_eq!(flow_key(&p[..24]), tcp_key());
        // A protocol without ports needs only the IP header.
        let icmp = flow_key(&packet(1)[..20]);
        assert!(
            matches!(
                icmp,
                FlowKey::Ipv4 {
                    proto: 1,
                    sport: 0,
                    dport: 0,
                    ..
                }
            ),
            "{icmp:?}"
        );
        // Every truncation and every single-byte corruption of a packet parses to something.
        let p = packet(PROTO_UDP);
        for i in 0..p.len() {
            for v in [0u8, 0x0f, 0x40, 0x4f, 0xff] {
                let mut q = p.clone();
                q[i] = v;
                for n in 0..=q.len() {
                    let _ = flow_key(&q[..n]);
                }
            }
        }
    }

    #[test]
    fn later_fragments_keep_the_addresses_but_have_no_ports() {
        let mut p = packet(PROTO_UDP);
        p[6] = 0x00;
        p[7] = 0xb9; // offset 185 x 8 bytes: the payload there is not a UDP header
        assert!(matches!(
            flow_key(&p),
            FlowKey::Ipv4 {
                proto: PROTO_UDP,
                sport: 0,
                dport: 0,
                ..
            }
        ));
        p.truncate(20);
        assert!(
            matches!(flow_key(&p), FlowKey::Ipv4 { sport: 0, .. }),
            "no port bytes needed"
        );
    }

    #[test]
    fn counts_totals_and_bins_per_flow() {
        let mut t = FlowTable::default();
        let p = packet(PROTO_TCP);
        t.record_packet(150_000, &p);
        t.record_packet(180_000, &p);
        t.record_packet(420_000, &p);
        t.record(FlowKey::Unparsed, 420_000, 7);
        let c = t.get(&tcp_key()).unwrap();
        assert_eq!(
            (c.pkts, c.bytes, c.first_us, c.last_us),
            (3, 120, 150_000, 420_000)
        );
        assert_eq!((c.first_bin, c.bins.clone()), (1, vec![80, 0, 0, 40]));
        assert_eq!(c.bytes_between(100_000, 500_000), Some(120.0));
        assert_eq!(
            c.bytes_between(150_000, 200_000),
            Some(40.0),
            "half of the first bin"
        );
        assert_eq!(c.bytes_between(0, 100_000), Some(0.0));
        assert_eq!(t.get(&FlowKey::Unparsed).unwrap().bytes, 7);
        assert_eq!(t.sorted()[0].0, tcp_key());
        assert!(t.bins_complete());
    }

    #[test]
    fn the_table_is_bounded_and_what_does_not_fit_is_still_counted() {
        let mut t = FlowTable::default();
        for i in 0..(MAX_FLOWS as u32 + 100) {
            let ip = Ipv4Addr::from(0x0a00_0000 + i);
            let key = FlowKey::Ipv4 {
                proto: PROTO_UDP,
                src: ip,
                dst: ip,
                sport: 1,
                dport: 2,
            };
            t.record(key, 0, 100);
        }
        t.record(FlowKey::Unparsed, 0, 1);
        assert_eq!(t.len(), MAX_FLOWS + 2, "the flows, Other and Unparsed");
        assert_eq!(t.get(&FlowKey::Other).unwrap().pkts, 100);
        let total: u64 = t.sorted().iter().map(|(_, c)| c.bytes).sum();
        assert_eq!(
            total,
            (MAX_FLOWS as u64 + 100) * 100 + 1,
            "no byte lost to the bound"
        );
        // A flow already in the table keeps its own counter.
        let first = FlowKey::Ipv4 {
            proto: PROTO_UDP,
            src: Ipv4Addr::from(0x0a00_0000),
            dst: Ipv4Addr::from(0x0a00_0000),
            sport: 1,
            dport: 2,
        };
        t.record(first, 0, 100);
        assert_eq!(t.get(&first).unwrap().pkts, 2);
    }

    #[test]
    fn bins_stop_at_their_budget_and_say_so_while_totals_stay_exact() {
        let mut t = FlowTable::default();
        let p = packet(PROTO_TCP);
        t.record_packet(0, &p);
        // One departure far in the future would need more bins than the budget allows.
        t.record_packet(BIN_US * (MAX_BIN_ENTRIES as u64 + 10), &p);
        let c = t.get(&tcp_key()).unwrap();
        assert_eq!((c.pkts, c.bytes, c.bins.len()), (2, 80, 1));
        assert!(!t.bins_complete());
        assert_eq!(
            c.bytes_between(0, BIN_US),
            Some(40.0),
            "what is binned is still right"
        );
        assert_eq!(
            c.bytes_between(0, c.last_us + 1),
            None,
            "but not past the budget"
        );
    }
}
