//! The reconfiguration detector, modelled as LeoCC's host daemon runs it (paper §4.1.1).
//!
//! The satellite-side host sends an ICMP echo to the PoP every 10 ms. Probes do not queue
//! behind TCP data: the terminal and the PoP answer ICMP on their own queue, so a probe sees
//! only the satellite segment's propagation delay in each direction, and it is lost when it
//! crosses the link during an outage (`LinkModel::in_outage`). The response interval (RI) is
//! the time between two consecutive replies; when a reply arrives with RI > 45 ms
//! (Δoutage), a reconfiguration event is declared at that moment. Each reply also gives a
//! terminal-to-PoP RTT sample (for LeoCC's bottleneck discrimination, §4.3).
//!
//! Detection therefore happens when the first reply after an outage arrives: shortly after the
//! outage ends, never during it — as on a real host.

use leocc_trace::LinkModel;

/// Probe interval (paper §4.1.1: 10 ms).
pub const PROBE_INTERVAL_US: u64 = 10_000;
/// Δoutage: an RI above this means a reconfiguration (paper §4.1.1 and §5: 45 ms).
pub const OUTAGE_THRESHOLD_US: u64 = 45_000;

#[derive(Clone, Copy, Debug)]
struct Probe {
    sent_us: u64,
    at_us: u64,
    at_pop: bool,
}

/// Detector state. The world calls `send_probe` on its timer and `advance` at probe arrivals.
#[derive(Clone, Debug)]
pub struct Detector {
    up: LinkModel,
    down: LinkModel,
    interval_us: u64,
    threshold_us: u64,
    in_flight: Vec<Probe>,
    last_reply_us: Option<u64>,
    events: u32,
    /// Latest event: (detection time, sequence number).
    pub latest: Option<(u64, u32)>,
    /// Latest terminal-to-PoP RTT, µs (0 before the first reply).
    pub term_pop_rtt_us: u64,
    /// Detection times of every event so far.
    pub detections_us: Vec<u64>,
    /// Probes sent.
    pub probes_sent: u64,
    /// Replies received.
    pub replies: u64,
    /// A false event every this many µs (0: none), to measure what a noisy detector costs.
    false_interval_us: u64,
    next_false_us: u64,
    /// False events declared so far (included in `events` and `detections_us`).
    pub false_events: u32,
}

/// What an arrival produced.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DetectorOutput {
    /// A reconfiguration was declared now, with this sequence number.
    pub event: Option<u32>,
    /// A new terminal-to-PoP RTT sample.
    pub rtt_us: Option<u64>,
}

impl Detector {
    /// A detector on the satellite segment given by its two directions.
    pub fn new(up: LinkModel, down: LinkModel, interval_us: u64, threshold_us: u64) -> Detector {
        Detector {
            up,
            down,
            interval_us,
            threshold_us,
            in_flight: Vec::new(),
            last_reply_us: None,
            events: 0,
            latest: None,
            detections_us: Vec::new(),
            term_pop_rtt_us: 0,
            probes_sent: 0,
            replies: 0,
            false_interval_us: 0,
            next_false_us: 0,
            false_events: 0,
        }
    }

    /// Also declare a false event at the first reply after every `interval_us` (0: never), as
    /// a detector fooled by jitter would: the first at `interval_us`.
    pub fn with_false_events(mut self, interval_us: u64) -> Detector {
        self.false_interval_us = interval_us;
        self.next_false_us = interval_us;
        self
    }

    /// Probe interval.
    pub fn interval_us(&self) -> u64 {
        self.interval_us
    }

    /// Send a probe at `now`; returns when its current leg ends (to schedule), if not lost.
    pub fn send_probe(&mut self, now: u64) -> Option<u64> {
        self.probes_sent += 1;
        if self.up.in_outage(now) {
            return None;
        }
        let at = now + self.up.delay_us(now);
        self.in_flight.push(Probe { sent_us: now, at_us: at, at_pop: false });
        Some(at)
    }

    /// Move every probe whose leg ended by `now`; returns what happened and the next leg end.
    pub fn advance(&mut self, now: u64) -> (DetectorOutput, Option<u64>) {
        let mut out = DetectorOutput::default();
        let mut i = 0;
        while i < self.in_flight.len() {
            let p = self.in_flight[i];
            if p.at_us > now {
                i += 1;
                continue;
            }
            if !p.at_pop {
                // The PoP answers at once, on its own queue.
                if self.down.in_outage(p.at_us) {
                    self.in_flight.swap_remove(i);
                } else {
                    self.in_flight[i] = Probe { sent_us: p.sent_us, at_us: p.at_us + self.down.delay_us(p.at_us), at_pop: true };
                    i += 1;
                }
                continue;
            }
            self.in_flight.swap_remove(i);
            self.replies += 1;
            let rtt = p.at_us - p.sent_us;
            self.term_pop_rtt_us = rtt;
            out.rtt_us = Some(rtt);
            let gap = self.last_reply_us.is_some_and(|last| p.at_us.saturating_sub(last) > self.threshold_us);
            let false_due = self.false_interval_us > 0 && p.at_us >= self.next_false_us;
            if false_due {
                self.next_false_us = p.at_us + self.false_interval_us;
                self.false_events += !gap as u32;
            }
            if gap || false_due {
                self.events += 1;
                self.latest = Some((p.at_us, self.events));
                self.detections_us.push(p.at_us);
                out.event = Some(self.events);
            }
            self.last_reply_us = Some(self.last_reply_us.map_or(p.at_us, |l| l.max(p.at_us)));
        }
        let next = self.in_flight.iter().map(|p| p.at_us).min();
        (out, next)
    }

    /// Events declared so far.
    pub fn events(&self) -> u32 {
        self.events
    }
}
