//! One-way delay across a captured path, measured the same way for every protocol.
//!
//! An endpoint's own view of delay differs by protocol (LEOTP stamps each segment at the
//! producer; TCP only knows its RTT), and comparing the two flatters one of them. The chain
//! captures both of its ends on one clock instead (`client.pcap`, `server.pcap`); here every
//! data packet the client receives is matched with the *first* time the server put the same
//! data on the path, so a packet's one-way delay includes whatever its recovery cost.
//!
//! The same data is recognised by what it carries, not by addresses (a LEOTP segment reaches
//! the client from the first mid-node, not from the producer): a TCP segment by its 4-tuple
//! and sequence number, a LEOTP data packet by content name and segment number.
//!
//! Which delivered packets were *retransmitted* (seed 003's Fig. 10) is read off the client's
//! capture too. A TCP segment was when it fills a hole: a later segment of its connection
//! arrived first, which on a FIFO path happens exactly when its first copy was lost somewhere.
//! LEOTP says so on the wire: a mid-node that repairs a loss sends the client a void packet
//! (VPH) for the range, and the client's own timeout sends a retransmitted interest; a segment
//! covered by either was recovered. (Out-of-order arrival is no such sign for LEOTP: a
//! mid-node answers some requests from its cache while others still wait upstream.) The
//! sender's traffic per delivered byte (Fig. 11) counts every copy the server sent.
//!
//! The one-way delay is the network's. An application reading a byte stream sees more: data
//! that arrives after a hole waits until the hole is filled (head-of-line blocking). The
//! *in-order delay* of a packet is the time from its first sending until it and everything
//! before it in its flow has arrived; it is computed for both protocols alike, from the same
//! captures, so neither the network's nor the application's view is left out.

use anyhow::{anyhow, Result};
use leocc_emu::pcap::PcapReader;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::net::Ipv4Addr;
use std::path::Path;

const IPPROTO_TCP: u8 = 6;
const IPPROTO_UDP: u8 = 17;

/// Which stream a data packet belongs to.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Flow {
    /// A TCP connection: source, destination, ports.
    Tcp(Ipv4Addr, u16, Ipv4Addr, u16),
    /// A LEOTP content name.
    Leotp(String),
}

/// One data packet: its flow, its position in the flow (TCP sequence number, LEOTP segment),
/// how far it extends (payload bytes for TCP, one segment for LEOTP) and its length on the wire.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Data {
    src: Ipv4Addr,
    dst: Ipv4Addr,
    flow: Flow,
    pos: u32,
    len: u32,
    wire_bytes: u64,
}

/// What the analysis reads in a captured packet.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Seen {
    /// A data packet.
    Data(Data),
    /// LEOTP's sign that segments `[start, end)` of a flow are being recovered: a void packet
    /// towards the client or a retransmitted interest from it.
    Recovery { flow: Flow, start: u32, end: u32 },
}

/// The data packet in an IPv4 packet, if it is one (TCP with payload, or LEOTP data).
#[cfg(test)]
fn data_of(ip: &[u8]) -> Option<Data> {
    match seen(ip)? {
        Seen::Data(d) => Some(d),
        Seen::Recovery { .. } => None,
    }
}

/// What an IPv4 packet is to the analysis: TCP with payload or LEOTP data, a LEOTP recovery
/// sign, or (None) nothing it reads.
fn seen(ip: &[u8]) -> Option<Seen> {
    if ip.len() < 20 || ip[0] >> 4 != 4 {
        return None;
    }
    let ihl = usize::from(ip[0] & 0x0f) * 4;
    let total = usize::from(u16::from_be_bytes([ip[2], ip[3]]));
    if ihl < 20 || total < ihl || total > ip.len() {
        return None;
    }
    let (src, dst) = (
        Ipv4Addr::new(ip[12], ip[13], ip[14], ip[15]),
        Ipv4Addr::new(ip[16], ip[17], ip[18], ip[19]),
    );
    let l4 = &ip[ihl..total];
    let port = |at: usize| u16::from_be_bytes([l4[at], l4[at + 1]]);
    let (flow, pos, len) = match ip[9] {
        IPPROTO_TCP if l4.len() >= 20 => {
            let doff = usize::from(l4[12] >> 4) * 4;
            if doff < 20 || doff >= l4.len() {
                return None; // no payload (pure ACK, SYN, FIN) or malformed
            }
            (
                Flow::Tcp(src, port(0), dst, port(2)),
                u32::from_be_bytes([l4[4], l4[5], l4[6], l4[7]]),
                (l4.len() - doff) as u32,
            )
        }
        IPPROTO_UDP if l4.len() >= 8 => {
            use leocc_leotp::packet::{parse, Kind, FLAG_RETX};
            let p = parse(&l4[8..]).ok()?;
            let flow = Flow::Leotp(p.name.to_string());
            match p.kind {
                Kind::Data => (flow, p.start, 1),
                Kind::Void => {
                    return Some(Seen::Recovery {
                        flow,
                        start: p.start,
                        end: p.end,
                    })
                }
                Kind::Interest if p.flags & FLAG_RETX != 0 => {
                    return Some(Seen::Recovery {
                        flow,
                        start: p.start,
                        end: p.end,
                    })
                }
                // Requests and control packets (tokens, errors) carry no data.
                Kind::Interest | Kind::Token | Kind::Error => return None,
            }
        }
        _ => return None,
    };
    Some(Seen::Data(Data {
        src,
        dst,
        flow,
        pos,
        len,
        wire_bytes: total as u64,
    }))
}

/// Whether `a` comes before `b` in a flow (serial-number order, so TCP's wrap is harmless).
fn before(a: u32, b: u32) -> bool {
    (a.wrapping_sub(b) as i32) < 0
}

/// What the two captures of one path say.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PathDelay {
    /// Data packets the server sent onto the path, every copy.
    pub sent_pkts: u64,
    /// Their bytes on the wire.
    pub sent_bytes: u64,
    /// Distinct data packets the client received (first copy of each).
    pub delivered_pkts: u64,
    /// Their bytes on the wire.
    pub delivered_bytes: u64,
    /// Received data the server's capture does not show (so no delay): skipped.
    pub unmatched: u64,
    /// One-way delay of every delivered packet, ms, in delivery order.
    pub owd_ms: Vec<f64>,
    /// One-way delay of the delivered packets that filled a hole (retransmitted), ms.
    pub retx_owd_ms: Vec<f64>,
    /// In-order delay of every packet an application could read by the end of the capture:
    /// from its first sending until it and all data before it in its flow had arrived, ms.
    pub inorder_ms: Vec<f64>,
}

impl PathDelay {
    /// Bytes the server sent per byte the client received (1 = nothing sent twice).
    pub fn sender_traffic_ratio(&self) -> Option<f64> {
        (self.delivered_bytes > 0).then(|| self.sent_bytes as f64 / self.delivered_bytes as f64)
    }
}

/// Matches what `client` (the address of the receiving end) received in `client_pcap`
/// against what `server` sent in `server_pcap`. Both captures must share a clock (the chain's
/// do). A malformed capture is an error naming the file; packets that are not data are skipped.
pub fn analyse(
    server_pcap: &Path,
    server: Ipv4Addr,
    client_pcap: &Path,
    client: Ipv4Addr,
) -> Result<PathDelay> {
    let mut first_sent: HashMap<(Flow, u32), u64> = HashMap::new();
    let mut streams: HashMap<Flow, InOrder> = HashMap::new();
    let mut out = PathDelay::default();
    for rec in PcapReader::open(server_pcap).map_err(|e| anyhow!("{e}"))? {
        let rec = rec.map_err(|e| anyhow!("{e}"))?;
        let d = match seen(&rec.data) {
            Some(Seen::Data(d)) if d.src == server => d,
            _ => continue,
        };
        out.sent_pkts += 1;
        out.sent_bytes += d.wire_bytes;
        streams
            .entry(d.flow.clone())
            .and_modify(|s| s.start_at(d.pos))
            .or_insert_with(|| InOrder::new(d.pos));
        first_sent.entry((d.flow, d.pos)).or_insert(rec.unix_us);
    }
    let mut highest: HashMap<Flow, u32> = HashMap::new();
    let mut recovering: HashSet<(Flow, u32)> = HashSet::new();
    for rec in PcapReader::open(client_pcap).map_err(|e| anyhow!("{e}"))? {
        let rec = rec.map_err(|e| anyhow!("{e}"))?;
        let d = match seen(&rec.data) {
            Some(Seen::Data(d)) if d.dst == client => d,
            Some(Seen::Recovery { flow, start, end }) => {
                // LEOTP bounds a range (MAX_RANGE), so a packet marks at most that many.
                recovering.extend((start..end).map(|s| (flow.clone(), s)));
                continue;
            }
            _ => continue,
        };
        // Taking the entry out makes later copies of the same data count as nothing.
        let key = (d.flow, d.pos);
        let first_copy = first_sent.remove(&key);
        if let Some(stream) = streams.get_mut(&key.0) {
            stream.arrive(key.1, d.len, first_copy, rec.unix_us, &mut out.inorder_ms);
        }
        let Some(sent_us) = first_copy else {
            out.unmatched += u64::from(!key_was_delivered(&highest, &key));
            continue;
        };
        let (flow, pos) = key;
        let owd = rec.unix_us.saturating_sub(sent_us) as f64 / 1000.0;
        out.delivered_pkts += 1;
        out.delivered_bytes += d.wire_bytes;
        out.owd_ms.push(owd);
        let filled_hole = match highest.get_mut(&flow) {
            Some(h) if before(pos, *h) => true,
            Some(h) => {
                *h = pos;
                false
            }
            None => {
                highest.insert(flow.clone(), pos);
                false
            }
        };
        let retransmitted = match flow {
            Flow::Tcp(..) => filled_hole,
            Flow::Leotp(_) => recovering.remove(&(flow, pos)),
        };
        if retransmitted {
            out.retx_owd_ms.push(owd);
        }
    }
    Ok(out)
}

/// A flow as a receiving application reads it: in stream order, each packet handed over once
/// everything before it has arrived. Positions are kept relative to the flow's first data
/// (the lowest position the server sent), so TCP's sequence wrap does not matter.
#[derive(Debug)]
struct InOrder {
    start: u32,
    /// Relative position up to which the application has read.
    next: u64,
    /// Arrived ahead of a hole: relative start -> (relative end, first sending time if known).
    waiting: BTreeMap<u64, (u64, Option<u64>)>,
}

impl InOrder {
    fn new(start: u32) -> InOrder {
        InOrder {
            start,
            next: 0,
            waiting: BTreeMap::new(),
        }
    }

    /// Moves the flow's start back if the server sent data before `pos` (called while reading
    /// the server's capture, before any arrival).
    fn start_at(&mut self, pos: u32) {
        if before(pos, self.start) {
            self.start = pos;
        }
    }

    /// A data packet arrived at `now_us`: pushes the in-order delay of every packet it makes
    /// readable (itself, if nothing is missing before it, and those that waited behind it).
    fn arrive(
        &mut self,
        pos: u32,
        len: u32,
        sent_us: Option<u64>,
        now_us: u64,
        delays: &mut Vec<f64>,
    ) {
        let rel = u64::from(pos.wrapping_sub(self.start));
        let end = rel + u64::from(len);
        if end <= self.next {
            return; // a copy of data already read
        }
        self.waiting.entry(rel).or_insert((end, sent_us));
        while let Some(entry) = self.waiting.first_entry() {
            if *entry.key() > self.next {
                break; // a hole before it
            }
            let (end, sent_us) = entry.remove();
            if end > self.next {
                self.next = end;
                if let Some(sent) = sent_us {
                    delays.push(now_us.saturating_sub(sent) as f64 / 1000.0);
                }
            }
        }
    }
}

/// Whether a received packet with no sent record is a duplicate of data already delivered
/// (its flow is known and it lies at or below the highest position), not unmatched data.
fn key_was_delivered(highest: &HashMap<Flow, u32>, (flow, pos): &(Flow, u32)) -> bool {
    highest.get(flow).is_some_and(|&h| !before(h, *pos))
}

#[cfg(test)]
mod tests {
    use super::*;
    use leocc_emu::pcap::PcapWriter;

    const SERVER: Ipv4Addr = Ipv4Addr::new(10, 15, 0, 7);
    const CLIENT: Ipv4Addr = Ipv4Addr::new(10, 15, 0, 1);

    fn ipv4(proto: u8, src: Ipv4Addr, dst: Ipv4Addr, l4: &[u8]) -> Vec<u8> {
        let total = (20 + l4.len()) as u16;
        let mut p = vec![0x45, 0, 0, 0, 0, 0, 0, 0, 64, proto, 0, 0];
        p[2..4].copy_from_slice(&total.to_be_bytes());
        p.extend_from_slice(&src.octets());
        p.extend_from_slice(&dst.octets());
        p.extend_from_slice(l4);
        p
    }

    fn tcp(seq: u32, payload: usize) -> Vec<u8> {
        let mut t = vec![0u8; 20 + payload];
        t[0..2].copy_from_slice(&5201u16.to_be_bytes());
        t[2..4].copy_from_slice(&40000u16.to_be_bytes());
        t[4..8].copy_from_slice(&seq.to_be_bytes());
        t[12] = 5 << 4;
        ipv4(IPPROTO_TCP, SERVER, CLIENT, &t)
    }

    fn leotp(src: Ipv4Addr, seg: u32) -> Vec<u8> {
        let payload = [7u8; 100];
        let p = leocc_leotp::packet::Packet {
            kind: leocc_leotp::packet::Kind::Data,
            flags: 0,
            name: "bulk",
            start: seg,
            end: leocc_leotp::packet::UNBOUNDED,
            timestamp_us: 0,
            hold_us: 0,
            backlog: 0,
            payload: &payload,
        };
        let mut body = Vec::new();
        p.encode(&mut body);
        let mut dgram = vec![0u8; 8];
        dgram.extend_from_slice(&body);
        ipv4(IPPROTO_UDP, src, CLIENT, &dgram)
    }

    fn void(src: Ipv4Addr, start: u32, end: u32) -> Vec<u8> {
        let mut dgram = vec![0u8; 8];
        let mut body = Vec::new();
        leocc_leotp::packet::Packet::void("bulk", start, end).encode(&mut body);
        dgram.extend_from_slice(&body);
        ipv4(IPPROTO_UDP, src, CLIENT, &dgram)
    }

    fn capture(path: &Path, pkts: &[(u64, Vec<u8>)]) {
        let mut w = PcapWriter::create(path).unwrap();
        for (t, p) in pkts {
            w.write(*t, p).unwrap();
        }
        w.finish().unwrap();
    }

    fn dir(tag: &str) -> std::path::PathBuf {
        let d = std::env::temp_dir().join(format!("leocc-pathdelay-{tag}-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn tcp_delay_counts_from_the_first_copy_and_marks_filled_holes() {
        let d = dir("tcp");
        let (s, c) = (d.join("server.pcap"), d.join("client.pcap"));
        // Segment 1000 is lost and resent at t = 300 ms; 2448 arrives first.
        capture(
            &s,
            &[
                (0, tcp(1000, 1448)),
                (10_000, tcp(2448, 1448)),
                (300_000, tcp(1000, 1448)),
                (300_500, ipv4(IPPROTO_TCP, SERVER, CLIENT, &tcp(0, 0)[20..])),
            ],
        );
        capture(
            &c,
            &[
                (50_000, tcp(2448, 1448)),
                (350_000, tcp(1000, 1448)),
                (360_000, tcp(1000, 1448)),
            ],
        );
        let p = analyse(&s, SERVER, &c, CLIENT).unwrap();
        assert_eq!(
            (p.sent_pkts, p.delivered_pkts, p.unmatched),
            (3, 2, 0),
            "{p:?}"
        );
        assert_eq!(p.owd_ms, vec![40.0, 350.0]);
        assert_eq!(
            p.retx_owd_ms,
            vec![350.0],
            "the resent segment filled a hole; its delay counts from its first copy"
        );
        assert_eq!(
            p.inorder_ms,
            vec![350.0, 340.0],
            "2448 arrived at 50 ms but waited for 1000 (head-of-line blocking)"
        );
        assert!((p.sender_traffic_ratio().unwrap() - 1.5).abs() < 1e-12);
        std::fs::remove_dir_all(d).unwrap();
    }

    #[test]
    fn leotp_segments_match_by_name_whichever_node_delivers_them() {
        let d = dir("leotp");
        let (s, c) = (d.join("server.pcap"), d.join("client.pcap"));
        let mid = Ipv4Addr::new(10, 15, 0, 2);
        capture(
            &s,
            &[
                (0, leotp(SERVER, 0)),
                (1_000, leotp(SERVER, 1)),
                (2_000, leotp(SERVER, 2)),
            ],
        );
        // Segment 1 is repaired by a mid-node's cache (its VPH reaches the client first): the
        // producer sent it once. Segment 0 arrives after 2 without any sign of recovery (a
        // cache answered 2 first): out of order, not retransmitted.
        capture(
            &c,
            &[
                (30_000, leotp(mid, 2)),
                (31_000, void(mid, 1, 2)),
                (32_000, leotp(mid, 0)),
                (90_000, leotp(mid, 1)),
                (95_000, leotp(mid, 9)),
            ],
        );
        let p = analyse(&s, SERVER, &c, CLIENT).unwrap();
        assert_eq!(
            (p.delivered_pkts, p.unmatched),
            (3, 1),
            "segment 9 was never sent by the server"
        );
        assert_eq!(p.owd_ms, vec![28.0, 32.0, 89.0]);
        assert_eq!(p.retx_owd_ms, vec![89.0]);
        assert_eq!(
            p.inorder_ms,
            vec![32.0, 89.0, 88.0],
            "2 waits for 0 and then for 1; 9 (never sent) waits for 3..9 for ever"
        );
        assert_eq!(p.sender_traffic_ratio(), Some(1.0));
        std::fs::remove_dir_all(d).unwrap();
    }

    #[test]
    fn in_order_delay_follows_resegmented_retransmissions_and_ignores_copies() {
        let mut s = InOrder::new(u32::MAX - 999); // the stream starts just before the wrap
        let mut d = Vec::new();
        let seg = |k: u32| (u32::MAX - 999).wrapping_add(k * 1000);
        s.arrive(seg(1), 1000, Some(10_000), 20_000, &mut d);
        s.arrive(seg(2), 1000, Some(11_000), 21_000, &mut d);
        assert!(d.is_empty(), "both wait for the first kilobyte");
        // The lost first segment comes back merged with the second (the kernel resegmented it).
        s.arrive(seg(0), 2000, Some(9_000), 60_000, &mut d);
        assert_eq!(d, vec![51.0, 49.0], "the merged packet is timed once (the second segment, inside it, is not timed again); the third follows");
        s.arrive(seg(1), 1000, Some(10_000), 61_000, &mut d);
        assert_eq!(d.len(), 2, "a late copy of read data changes nothing");
        s.arrive(seg(3), 1000, None, 62_000, &mut d);
        assert_eq!(
            (d.len(), s.next),
            (2, 4000),
            "data with no sending time is read but not timed"
        );
    }

    #[test]
    fn malformed_packets_are_skipped_and_sequence_order_wraps() {
        assert!(before(u32::MAX - 10, 5) && !before(5, u32::MAX - 10));
        for junk in [
            vec![],
            vec![0x45; 19],
            vec![0x60; 40],
            ipv4(IPPROTO_TCP, SERVER, CLIENT, &[0u8; 10]),
            ipv4(IPPROTO_UDP, SERVER, CLIENT, b"12345678LT\x09junk"),
        ] {
            assert_eq!(data_of(&junk), None);
        }
        let mut cut = tcp(1, 100);
        cut.truncate(60);
        assert_eq!(
            data_of(&cut),
            None,
            "a packet shorter than its IP length is not read past its end"
        );
    }
}
