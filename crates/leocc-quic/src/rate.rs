//! Delivery-rate estimation (draft-cheng-iccrg-delivery-rate-estimation, the BBR drafts'
//! sampler) for a QUIC sender.
//!
//! quinn tells the controller when packets leave (`on_sent`: time and packet number) and,
//! per acknowledged packet, its send time and size (`on_ack`), but gives no rate sample.
//! This module keeps the draft's per-packet send state and turns each ACK batch into one
//! sample (delivered bytes over an interval), as Linux's `tcp_rate.c` does for TCP.
//!
//! quinn reports an acknowledged packet by its send time, not its number, so the send state
//! is keyed by send time. Packets sent in one `poll_transmit` batch share a time and, since
//! no ACK is processed between them, the same connection state: one entry per distinct send
//! time is exact. Entries are kept in send order; an ACK looks its entry up by binary search,
//! so ACKs that arrive late or out of order still find theirs, and entries of packets whose
//! ACKs were lost are pruned once they are older than [`PRUNE_AGE`] behind the newest acked
//! send or the table exceeds [`MAX_ENTRIES`].

use std::collections::VecDeque;
use std::time::{Duration, Instant};

/// How far behind the newest acknowledged send an unacknowledged entry may lag before it is
/// dropped. QUIC declares a packet lost after 9/8 RTT (RFC 9002 §6.1.2) and ACKs reordered
/// by more than that are useless for rate sampling anyway; 2 s exceeds any LEO RTT (even in
/// a 500-packet deep buffer at low rate) by a wide margin while bounding memory.
pub const PRUNE_AGE: Duration = Duration::from_secs(2);

/// Hard cap on remembered send times: at most one entry per `poll_transmit` batch, so this
/// covers >2 s of sending at 1 batch per 30 us; beyond it the oldest entries go first.
pub const MAX_ENTRIES: usize = 1 << 16;

/// The draft's per-packet state, snapshot of the connection when the packet was sent.
#[derive(Debug, Clone, Copy)]
struct SendState {
    sent: Instant,
    /// `C.delivered` at send time.
    delivered: u64,
    /// `C.delivered_time` at send time.
    delivered_time: Instant,
    /// `C.first_sent_time` at send time.
    first_sent: Instant,
    /// Whether the application limited sending then.
    app_limited: bool,
}

/// One rate sample: what an ACK batch measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RateSample {
    /// Bytes delivered over `interval` (0 when the sample is invalid).
    pub delivered: u64,
    /// The sample's interval, max(send elapsed, ACK elapsed) (zero when invalid).
    pub interval: Duration,
    /// The packet the sample was taken from was sent while application-limited.
    pub app_limited: bool,
    /// Total bytes delivered on the connection so far.
    pub delivered_total: u64,
}

impl RateSample {
    /// The sample's rate in bytes per second (None when invalid).
    pub fn rate(&self) -> Option<f64> {
        (self.delivered > 0 && !self.interval.is_zero())
            .then(|| self.delivered as f64 / self.interval.as_secs_f64())
    }
}

/// The sampler's state for one connection.
#[derive(Debug, Clone)]
pub struct RateEstimator {
    sends: VecDeque<SendState>,
    /// `C.delivered`: bytes acknowledged so far.
    delivered: u64,
    /// `C.delivered_time`.
    delivered_time: Instant,
    /// `C.first_sent_time`.
    first_sent: Instant,
    /// Bytes in flight as quinn last reported (0 = the pipe is empty).
    in_flight: u64,
    /// Sends since quinn last reported in-flight bytes (the pipe is not empty then).
    sent_since_report: bool,
    /// The batch being accumulated: best (newest-delivered) packet state seen so far.
    batch: Option<(SendState, Instant)>,
    /// Newest acknowledged send time, for pruning.
    newest_acked: Option<Instant>,
}

impl RateEstimator {
    /// A sampler for a connection created at `now`.
    pub fn new(now: Instant) -> RateEstimator {
        RateEstimator {
            sends: VecDeque::new(),
            delivered: 0,
            delivered_time: now,
            first_sent: now,
            in_flight: 0,
            sent_since_report: false,
            batch: None,
            newest_acked: None,
        }
    }

    /// Packets left at `now`; `app_limited` is whether the application had nothing more.
    pub fn on_sent(&mut self, now: Instant, app_limited: bool) {
        if self.in_flight == 0 && !self.sent_since_report {
            // Draft §3.2: an empty pipe restarts the send and delivery clocks so that idle
            // time does not count in the next sample's interval.
            self.first_sent = now;
            self.delivered_time = now;
        }
        self.sent_since_report = true;
        if self.sends.back().is_some_and(|s| s.sent >= now) {
            return; // same batch: the first snapshot stands for all of it
        }
        if self.sends.len() >= MAX_ENTRIES {
            self.sends.pop_front();
        }
        self.sends.push_back(SendState {
            sent: now,
            delivered: self.delivered,
            delivered_time: self.delivered_time,
            first_sent: self.first_sent,
            app_limited,
        });
    }

    /// One packet, sent at `sent`, of `bytes` bytes, was acknowledged at `now`.
    pub fn on_ack(&mut self, now: Instant, sent: Instant, bytes: u64) {
        self.delivered += bytes;
        self.delivered_time = now;
        let Some(p) = self.lookup(sent) else {
            // Pruned (an ACK later than PRUNE_AGE) or sent before we existed: counts as
            // delivered but cannot anchor a sample.
            return;
        };
        // Draft §3.3: the sample is taken from the most recently *delivered* packet state,
        // so a reordered ACK for an old packet never replaces a newer anchor.
        let better = match &self.batch {
            None => true,
            Some((b, _)) => p.delivered > b.delivered || (p.delivered == b.delivered && p.sent > b.sent),
        };
        if better {
            self.batch = Some((p, now));
            self.first_sent = p.sent;
        }
        if self.newest_acked.is_none_or(|n| sent > n) {
            self.newest_acked = Some(sent);
        }
    }

    /// The ACK batch ended; `in_flight` is quinn's count of bytes still in flight and
    /// `min_rtt` the path's minimum RTT. Returns the batch's sample (`delivered` 0 if none
    /// or invalid).
    pub fn on_end_acks(&mut self, in_flight: u64, min_rtt: Duration) -> RateSample {
        self.in_flight = in_flight;
        self.sent_since_report = false;
        self.prune();
        let mut s = RateSample {
            delivered: 0,
            interval: Duration::ZERO,
            app_limited: false,
            delivered_total: self.delivered,
        };
        let Some((p, acked_at)) = self.batch.take() else { return s };
        let send_elapsed = p.sent.saturating_duration_since(p.first_sent);
        let ack_elapsed = acked_at.saturating_duration_since(p.delivered_time);
        let interval = send_elapsed.max(ack_elapsed);
        s.app_limited = p.app_limited;
        // Draft §3.3: an interval shorter than min_rtt means ACK compression inflated the
        // rate; discard rather than overestimate.
        if interval.is_zero() || interval < min_rtt {
            return s;
        }
        s.delivered = self.delivered - p.delivered;
        s.interval = interval;
        s
    }

    /// Send times remembered (for tests and diagnostics).
    pub fn entries(&self) -> usize {
        self.sends.len()
    }

    fn lookup(&self, sent: Instant) -> Option<SendState> {
        self.sends.binary_search_by(|s| s.sent.cmp(&sent)).ok().map(|i| self.sends[i])
    }

    fn prune(&mut self) {
        let Some(newest) = self.newest_acked else { return };
        while self.sends.front().is_some_and(|s| newest.saturating_duration_since(s.sent) > PRUNE_AGE) {
            self.sends.pop_front();
        }
    }
}

#[cfg(test)]
mod tests;
