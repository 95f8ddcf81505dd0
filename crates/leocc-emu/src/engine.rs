//! The packet engine: one thread per direction moves packets from one TUN device to the
//! other through two segments of `Stage`s, in emulation time.
//!
//! Uplink (client -> server):   client TUN -> satellite segment -> PoP -> terrestrial -> server TUN
//! Downlink (server -> client): server TUN -> terrestrial -> PoP -> satellite segment -> client TUN
//!
//! The satellite segment has two lanes, as Starlink does (seed 000, appendix B): a data lane
//! (droptail queue, the trace's delivery opportunities, delay, loss) and an ICMP lane that
//! never queues behind data (delay and loss of the trace, dropped during outages). The PoP,
//! at the far end of the satellite segment, answers echo requests addressed to it: the request
//! crosses the uplink ICMP lane, the reply the downlink ICMP lane, so a ping to the PoP sees
//! the satellite delay only, never the data queue. Between segments, packets are handed over
//! at their exact virtual release time; a thread writes a packet out when the wall clock
//! reaches its release time and records how late it was (the release error).
//!
//! With offloads (`offload`), one read may carry a TCP/UDP super-packet, which is cut into
//! the packets the stages serve, and packets of one flow due in the same step leave in one
//! write. A thread's scheduling class follows its load (`clock::Priority`).

use crate::clock::{self, EmuClock};
use crate::offload::{self, Coalescer, Csum, VnetHdr, VNET_HDR_LEN};
use crate::packet::{self, Class};
use crate::pcap::SharedPcap;
use crate::stage::{Stage, StageConfig, Verdict};
use crate::tun::{self, MAX_PACKET};
use std::net::Ipv4Addr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Packets read from the input device per loop iteration before the schedule is run again.
const READ_BATCH: usize = 64;
/// Width of one release-error histogram bucket, ns.
const HIST_BUCKET_NS: u64 = 1000;
/// Number of histogram buckets (the last one collects everything later than 10 ms).
const HIST_BUCKETS: usize = 10_000;

/// A packet buffer.
pub struct Pkt {
    buf: Box<[u8; MAX_PACKET]>,
    len: usize,
    /// The transport checksum the receiving side's "hardware" completes (offload on).
    csum: Option<Csum>,
}

impl AsRef<[u8]> for Pkt {
    fn as_ref(&self) -> &[u8] {
        &self.buf[..self.len]
    }
}

impl Pkt {
    fn bytes_mut(&mut self) -> &mut [u8] {
        &mut self.buf[..self.len]
    }

    /// Completes a partial checksum, so that the bytes are the packet as a wire would carry
    /// it (for a capture).
    fn finish_checksum(&mut self) {
        if let Some(c) = self.csum.take() {
            offload::complete_checksum(&mut self.buf[..self.len], c);
        }
    }
}

/// Histogram of release errors (how late packets were written), 1 µs buckets.
#[derive(Debug, Clone)]
pub struct Hist {
    buckets: Vec<u64>,
    count: u64,
}

impl Default for Hist {
    fn default() -> Hist {
        Hist { buckets: vec![0; HIST_BUCKETS], count: 0 }
    }
}

impl Hist {
    /// Records one sample in ns.
    pub fn record(&mut self, ns: u64) {
        let i = ((ns / HIST_BUCKET_NS) as usize).min(HIST_BUCKETS - 1);
        self.buckets[i] += 1;
        self.count += 1;
    }

    /// Adds another histogram's samples.
    pub fn merge(&mut self, o: &Hist) {
        for (a, b) in self.buckets.iter_mut().zip(&o.buckets) {
            *a += b;
        }
        self.count += o.count;
    }

    /// Number of samples.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// Upper edge, µs, of the bucket holding the p-th percentile (0..=100) by nearest rank
    /// ([`leocc_base::metrics::nearest_rank`]).
    pub fn percentile_us(&self, p: f64) -> Option<u64> {
        if self.count == 0 {
            return None;
        }
        let want = leocc_base::metrics::nearest_rank(self.count as usize, p / 100.0) as u64;
        let mut seen = 0;
        for (i, n) in self.buckets.iter().enumerate() {
            seen += n;
            if seen >= want {
                return Some((i as u64 + 1) * HIST_BUCKET_NS / 1000);
            }
        }
        Some(HIST_BUCKETS as u64 * HIST_BUCKET_NS / 1000)
    }
}

/// One segment: a data lane and, on the satellite, a separate ICMP lane.
pub struct Segment {
    /// The data lane (capacity, queue, delay, loss).
    pub data: Stage<Pkt>,
    /// The ICMP lane; `None` = ICMP shares the data lane.
    pub icmp: Option<Stage<Pkt>>,
}

impl Segment {
    fn push(&mut self, t: u64, pkt: Pkt, class: Class) -> Verdict {
        match (&mut self.icmp, class) {
            (Some(icmp), Class::Icmp) => icmp.push(t, pkt),
            _ => self.data.push(t, pkt),
        }
    }

    fn advance(&mut self, now: u64) {
        self.data.advance(now);
        if let Some(i) = self.icmp.as_mut() {
            i.advance(now);
        }
    }

    fn next_event(&self) -> Option<u64> {
        min_opt(self.data.next_event(), self.icmp.as_ref().and_then(|i| i.next_event()))
    }

    /// The due packet with the earliest release time across the lanes.
    fn pop_due(&mut self, now: u64) -> Option<(u64, Pkt)> {
        let d = self.data.peek_release().filter(|&t| t <= now);
        let i = self.icmp.as_ref().and_then(|s| s.peek_release()).filter(|&t| t <= now);
        match (d, i) {
            (Some(a), Some(b)) if b < a => self.icmp.as_mut()?.pop_due(now),
            (Some(_), _) => self.data.pop_due(now),
            (None, Some(_)) => self.icmp.as_mut()?.pop_due(now),
            (None, None) => None,
        }
    }
}

fn min_opt(a: Option<u64>, b: Option<u64>) -> Option<u64> {
    match (a, b) {
        (Some(x), Some(y)) => Some(x.min(y)),
        (x, y) => x.or(y),
    }
}

/// The PoP's echo responder: request over the uplink ICMP lane, reply over the downlink one.
pub struct PopResponder {
    /// Uplink half (client -> PoP).
    pub request: Stage<Pkt>,
    /// Downlink half (PoP -> client).
    pub reply: Stage<Pkt>,
    /// Echo replies written back to the client.
    pub answered: u64,
}

impl PopResponder {
    /// A responder whose two halves use the given configurations.
    pub fn new(up: StageConfig, down: StageConfig) -> PopResponder {
        PopResponder { request: Stage::new(up), reply: Stage::new(down), answered: 0 }
    }
}

/// Per-direction counters beyond the stages'.
#[derive(Clone, Default)]
pub struct DirCounters {
    /// Packets read from the input device (after splitting super-packets).
    pub read_pkts: u64,
    /// Reads from the input device that returned something (one per super-packet).
    pub read_calls: u64,
    /// Packets written to the output device.
    pub written_pkts: u64,
    /// Writes to the output device (fewer than packets when segments were merged).
    pub write_calls: u64,
    /// Bytes written to the output device.
    pub written_bytes: u64,
    /// Packets dropped as malformed.
    pub malformed: u64,
    /// Packets to the PoP that it does not answer (not an echo request, or from the server side).
    pub to_pop_dropped: u64,
    /// Writes the kernel refused.
    pub write_errors: u64,
    /// How late packets were written relative to their release time.
    pub release_error: Hist,
    /// CPU time of the thread, µs.
    pub cpu_us: u64,
    /// Emulation time when the thread stopped, µs.
    pub end_us: u64,
}

/// Everything one direction's thread owns.
pub struct Direction {
    /// "uplink" or "downlink".
    pub name: &'static str,
    /// Segment the packets enter first.
    pub first: Segment,
    /// Segment after the PoP (or before it, downlink).
    pub second: Segment,
    /// Which of the two segments is the satellite one (0 = first).
    pub satellite_is_first: bool,
    /// The PoP responder (uplink thread only).
    pub pop: Option<PopResponder>,
    /// Counters.
    pub counters: DirCounters,
}

impl Direction {
    /// The satellite segment.
    pub fn satellite(&self) -> &Segment {
        if self.satellite_is_first {
            &self.first
        } else {
            &self.second
        }
    }

    fn satellite_is(&self, first: bool) -> bool {
        self.satellite_is_first == first
    }
}

/// Where a direction reads and writes.
pub struct Io {
    /// Device packets come in on.
    pub in_fd: i32,
    /// Device packets go out on.
    pub out_fd: i32,
    /// pcap of the input side.
    pub pcap_in: Option<SharedPcap>,
    /// pcap of the output side.
    pub pcap_out: Option<SharedPcap>,
    /// The PoP's address.
    pub pop_addr: Ipv4Addr,
    /// Spin margin before deadlines, µs.
    pub spin_us: u64,
    /// Run the thread at real-time priority while it is not saturated (`clock::Priority`).
    pub realtime: bool,
    /// Both devices carry virtio-net headers and may hand over super-packets (`offload`).
    pub vnet: bool,
}

fn capture(p: &Option<SharedPcap>, clock: &EmuClock, t_us: u64, pkt: &[u8]) {
    if let Some(w) = p {
        if let Ok(mut w) = w.lock() {
            let _ = w.write(clock.unix_us_at(t_us), pkt);
        }
    }
}

// Boxed: buffers move between the pool and packets without copying 2 KB each time.
#[allow(clippy::vec_box)]
struct Pool(Vec<Box<[u8; MAX_PACKET]>>);

impl Pool {
    fn take(&mut self) -> Box<[u8; MAX_PACKET]> {
        self.0.pop().unwrap_or_else(|| Box::new([0u8; MAX_PACKET]))
    }

    fn give(&mut self, p: Pkt) {
        self.0.push(p.buf);
    }
}

/// Runs one direction until `stop` is set; returns it with its statistics.
pub fn run(mut d: Direction, io: Io, clock: EmuClock, stop: Arc<AtomicBool>) -> Direction {
    clock::tighten_timer_slack();
    let mut priority = clock::Priority::start(io.realtime, clock.now_ns());
    let cpu0 = clock::thread_cpu_us();
    let mut pool = Pool(Vec::new());
    let mut big = if io.vnet { vec![0u8; offload::MAX_SUPER_PACKET] } else { Vec::new() };
    // Merging needs partial checksums, which a capture would have completed.
    let mut out = Merger { on: io.vnet && io.pcap_out.is_none(), co: Coalescer::default(), release_us: Vec::new(), bytes: 0 };
    while !stop.load(Ordering::Relaxed) {
        priority.update(clock.now_ns());
        if io.vnet {
            read_offloaded(&mut d, &io, &clock, &mut pool, &mut big);
        } else {
            read_batch(&mut d, &io, &clock, &mut pool);
        }
        let now = clock.now_us();
        step(&mut d, &io, &clock, now, &mut pool, &mut out);
        let next = [d.first.next_event(), d.second.next_event(), d.pop.as_ref().and_then(|p| min_opt(p.request.next_event(), p.reply.next_event()))]
            .into_iter()
            .fold(None, min_opt);
        let deadline = next.unwrap_or(now + clock::IDLE_WAIT_US).min(now + clock::IDLE_WAIT_US);
        if deadline > now {
            clock::wait_readable_until(&clock, io.in_fd, deadline, io.spin_us);
        }
    }
    d.counters.cpu_us = clock::thread_cpu_us() - cpu0;
    d.counters.end_us = clock.now_us();
    d.first.advance(d.counters.end_us);
    d.second.advance(d.counters.end_us);
    d
}

fn read_batch(d: &mut Direction, io: &Io, clock: &EmuClock, pool: &mut Pool) {
    for _ in 0..READ_BATCH {
        let mut buf = pool.take();
        let Some(len) = tun::read_packet(io.in_fd, &mut buf[..]) else {
            pool.0.push(buf);
            return;
        };
        let t = clock.now_us();
        let pkt = Pkt { buf, len, csum: None };
        d.counters.read_calls += 1;
        d.counters.read_pkts += 1;
        capture(&io.pcap_in, clock, t, pkt.as_ref());
        accept(d, io, t, pkt, pool);
    }
}

/// As `read_batch` for devices with offloads: each read may carry a super-packet, which is
/// cut into the packets the link model serves, all arriving at the time of the read.
fn read_offloaded(d: &mut Direction, io: &Io, clock: &EmuClock, pool: &mut Pool, big: &mut [u8]) {
    for _ in 0..READ_BATCH {
        let Some(n) = tun::read_packet(io.in_fd, big) else { return };
        let t = clock.now_us();
        d.counters.read_calls += 1;
        if n < VNET_HDR_LEN {
            d.counters.malformed += 1;
            continue;
        }
        let h = VnetHdr::parse(&big[..VNET_HDR_LEN]);
        let split = offload::split(&h, &big[VNET_HDR_LEN..n], MAX_PACKET, |piece| {
            let mut buf = pool.take();
            let (a, b) = (piece.headers.len(), piece.len());
            buf[..a].copy_from_slice(piece.headers);
            buf[a..b].copy_from_slice(piece.payload);
            let mut pkt = Pkt { buf, len: b, csum: piece.csum };
            d.counters.read_pkts += 1;
            if io.pcap_in.is_some() {
                pkt.finish_checksum();
                capture(&io.pcap_in, clock, t, pkt.as_ref());
            }
            accept(d, io, t, pkt, pool);
        });
        if split.is_err() {
            d.counters.malformed += 1;
        }
    }
}

/// Routes a packet just read from the input device.
fn accept(d: &mut Direction, io: &Io, t: u64, pkt: Pkt, pool: &mut Pool) {
    let class = packet::classify(pkt.as_ref(), io.pop_addr);
    match class {
        Class::Malformed => {
            d.counters.malformed += 1;
            pool.give(pkt);
        }
        Class::EchoToPop if d.pop.is_some() => {
            let pop = d.pop.as_mut().expect("checked");
            pop.request.push(t, pkt);
        }
        Class::EchoToPop | Class::OtherToPop => {
            d.counters.to_pop_dropped += 1;
            pool.give(pkt);
        }
        Class::Icmp | Class::Data => {
            let class = if d.satellite_is(true) { class } else { Class::Data };
            d.first.push(t, pkt, class);
        }
    }
}

/// Runs the schedule up to `now`: hands packets between segments and writes due ones.
fn step(d: &mut Direction, io: &Io, clock: &EmuClock, now: u64, pool: &mut Pool, out: &mut Merger) {
    d.first.advance(now);
    while let Some((t, pkt)) = d.first.pop_due(now) {
        let class = if d.satellite_is(false) { packet::classify(pkt.as_ref(), io.pop_addr) } else { Class::Data };
        d.second.push(t, pkt, class);
    }
    d.second.advance(now);
    while let Some((t, pkt)) = d.second.pop_due(now) {
        if out.on {
            out.push(&mut d.counters, io.out_fd, clock, t, pkt, pool);
        } else {
            write_out(&mut d.counters, io.out_fd, io.vnet, &io.pcap_out, clock, t, pkt, pool);
        }
    }
    // Nothing waits past the step it was due in.
    out.flush(&mut d.counters, io.out_fd, clock);
    if let Some(pop) = d.pop.as_mut() {
        pop.request.advance(now);
        while let Some((t, mut pkt)) = pop.request.pop_due(now) {
            if packet::make_echo_reply(pkt.bytes_mut()) {
                pop.reply.push(t, pkt);
            } else {
                d.counters.malformed += 1;
                pool.give(pkt);
            }
        }
        pop.reply.advance(now);
        while let Some((t, pkt)) = pop.reply.pop_due(now) {
            pop.answered += 1;
            write_out(&mut d.counters, io.in_fd, io.vnet, &io.pcap_in, clock, t, pkt, pool);
        }
    }
}

/// The output side with offloads: segments of one TCP connection released in the same step
/// leave in one write (`offload::Coalescer`); everything else as it comes, in order.
struct Merger {
    on: bool,
    co: Coalescer,
    /// Release times of the gathered segments, µs (for the release error at the write).
    release_us: Vec<u64>,
    /// Their bytes, as separate packets.
    bytes: u64,
}

impl Merger {
    fn push(&mut self, c: &mut DirCounters, fd: i32, clock: &EmuClock, release_us: u64, pkt: Pkt, pool: &mut Pool) {
        for attempt in 0..2 {
            if self.co.try_add(pkt.as_ref(), pkt.csum) {
                self.release_us.push(release_us);
                self.bytes += pkt.len as u64;
                pool.give(pkt);
                return;
            }
            if attempt == 0 {
                self.flush(c, fd, clock);
            }
        }
        write_out(c, fd, true, &None, clock, release_us, pkt, pool);
    }

    fn flush(&mut self, c: &mut DirCounters, fd: i32, clock: &EmuClock) {
        let Some((hdr, bytes)) = self.co.take() else { return };
        let ok = tun::write_packet_vnet(fd, &hdr, bytes);
        let now_ns = clock.now_ns();
        let n = self.release_us.len() as u64;
        for r in self.release_us.drain(..) {
            c.release_error.record(now_ns.saturating_sub(r * 1000));
        }
        c.write_calls += 1;
        if ok {
            c.written_pkts += n;
            c.written_bytes += self.bytes;
        } else {
            c.write_errors += n;
        }
        self.bytes = 0;
    }
}

#[allow(clippy::too_many_arguments)]
fn write_out(c: &mut DirCounters, fd: i32, vnet: bool, pcap: &Option<SharedPcap>, clock: &EmuClock, release_us: u64, mut pkt: Pkt, pool: &mut Pool) {
    if pcap.is_some() {
        pkt.finish_checksum();
    }
    let ok = if vnet { tun::write_packet_vnet(fd, &VnetHdr::for_packet(pkt.csum), pkt.as_ref()) } else { tun::write_packet(fd, pkt.as_ref()) };
    c.write_calls += 1;
    let now_ns = clock.now_ns();
    c.release_error.record(now_ns.saturating_sub(release_us * 1000));
    if ok {
        c.written_pkts += 1;
        c.written_bytes += pkt.len as u64;
        capture(pcap, clock, now_ns / 1000, pkt.as_ref());
    } else {
        c.write_errors += 1;
    }
    pool.give(pkt);
}
