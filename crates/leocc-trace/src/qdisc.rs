//! Queue disciplines of the lab's bottleneck queues, shared by the simulator's capacity hops
//! (`leocc-sim`) and the emulator's data lanes (`leocc-emu`), so that both run the same rules.
//!
//! - **drop-tail** (the default): a packet that does not fit the queue limit is dropped on
//!   arrival.
//! - **drop-front**: a packet that does not fit makes room: packets are dropped from the head
//!   of the queue (never the one already being transmitted) until it fits, and it is queued.
//!   The newest data survives and the sender learns of the loss a queue's worth of time
//!   earlier. Starlink is reported to drop from the front (Garcia, Sundberg, Brunstrom,
//!   IMC 2026). The queues implement this themselves (it is a few lines on their own types).
//! - **CoDel** (RFC 8289): drops at dequeue, from the time each packet spent in the queue
//!   (sojourn time); [`CoDel`] is the state machine, called through [`CoDelQueue`]. The queue
//!   limit still applies as a drop-tail hard limit.
//!
//! Every drop by a discipline is a queue (congestion) drop in the callers' statistics.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// A bottleneck queue's discipline.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Qdisc {
    /// Drop the arriving packet when it does not fit (what the lab always did).
    #[default]
    DropTail,
    /// Drop from the head of the queue until the arriving packet fits.
    DropFront,
    /// CoDel (RFC 8289, target 5 ms, interval 100 ms) under the drop-tail limit.
    CoDel,
}

/// The disciplines' names as options take them, in [`Qdisc::ALL`] order.
pub const QDISC_NAMES: [&str; 3] = ["droptail", "dropfront", "codel"];

/// What each discipline does, for help texts.
pub const QDISC_HELP: &str = "droptail: an arriving packet that does not fit the queue limit is dropped (the default); \
dropfront: packets are dropped from the head of the queue until the arriving one fits (Starlink is reported to do this); \
codel: CoDel AQM (RFC 8289, target 5 ms, interval 100 ms) drops at dequeue when packets waited too long, \
under the same limit as drop-tail";

impl Qdisc {
    /// Every discipline.
    pub const ALL: [Qdisc; 3] = [Qdisc::DropTail, Qdisc::DropFront, Qdisc::CoDel];

    /// The name options and results use: `droptail`, `dropfront`, `codel`.
    pub fn name(self) -> &'static str {
        match self {
            Qdisc::DropTail => QDISC_NAMES[0],
            Qdisc::DropFront => QDISC_NAMES[1],
            Qdisc::CoDel => QDISC_NAMES[2],
        }
    }

    /// True for drop-tail, the default (serde's `skip_serializing_if` and tests).
    pub fn is_default(&self) -> bool {
        *self == Qdisc::DropTail
    }
}

impl fmt::Display for Qdisc {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Qdisc {
    type Err = String;
    /// `droptail`, `dropfront` or `codel` (case and surrounding blanks ignored).
    fn from_str(s: &str) -> Result<Qdisc, String> {
        let t = s.trim().to_ascii_lowercase();
        Qdisc::ALL.into_iter().find(|q| q.name() == t).ok_or_else(|| {
            format!("unknown queue discipline '{s}' (expected one of: {})", QDISC_NAMES.join(", "))
        })
    }
}

/// CoDel's target sojourn time (RFC 8289 section 4.4), µs.
pub const CODEL_TARGET_US: u64 = 5_000;
/// CoDel's interval (RFC 8289 section 4.5), µs.
pub const CODEL_INTERVAL_US: u64 = 100_000;
/// The packet size below which a queue's backlog never counts as standing (RFC 8289's
/// MAXPACKET, one MTU): CoDel does not drop while at most this much is queued.
pub const CODEL_MTU_BYTES: u64 = 1500;

/// CoDel's parameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CoDelParams {
    /// Acceptable standing queue delay, µs.
    pub target_us: u64,
    /// The sliding window in which the delay must have dipped below target, µs.
    pub interval_us: u64,
    /// Backlog (bytes) at or below which nothing is dropped.
    pub mtu_bytes: u64,
}

impl Default for CoDelParams {
    fn default() -> CoDelParams {
        CoDelParams { target_us: CODEL_TARGET_US, interval_us: CODEL_INTERVAL_US, mtu_bytes: CODEL_MTU_BYTES }
    }
}

/// The queue CoDel dequeues from: a FIFO whose items carry their enqueue time.
pub trait CoDelQueue {
    /// A queued packet.
    type Item;
    /// Removes the head packet if one may leave now, with its enqueue time (µs, on the clock
    /// `CoDel::dequeue` is given); `None` when there is none.
    fn pop(&mut self) -> Option<(Self::Item, u64)>;
    /// Bytes still queued (after what was popped).
    fn backlog_bytes(&self) -> u64;
    /// Takes a packet CoDel dropped (count it as a queue drop).
    fn discard(&mut self, item: Self::Item);
}

/// CoDel's state for one queue (RFC 8289 section 5): a pure state machine over times in µs.
/// [`CoDel::dequeue`] is called whenever the link takes its next packet from the queue.
#[derive(Clone, Debug, Default)]
pub struct CoDel {
    params: CoDelParams,
    /// When the sojourn time went (and stayed) above target, plus one interval: dropping may
    /// start then (RFC: `first_above_time`; `None` = below target).
    first_above_us: Option<u64>,
    /// Next drop while in the dropping state.
    drop_next_us: u64,
    /// Drops since entering the dropping state (with the carry-over of section 5.5).
    count: u32,
    /// `count` when the dropping state was last entered.
    lastcount: u32,
    dropping: bool,
    /// Packets dropped so far.
    drops: u64,
}

impl CoDel {
    /// A CoDel queue state with `params`, not dropping.
    pub fn new(params: CoDelParams) -> CoDel {
        CoDel { params, ..CoDel::default() }
    }

    /// Packets this CoDel has dropped.
    pub fn drops(&self) -> u64 {
        self.drops
    }

    /// In the dropping state.
    pub fn dropping(&self) -> bool {
        self.dropping
    }

    /// Drops in the current (or last) dropping state, as the control law counts them.
    pub fn count(&self) -> u32 {
        self.count
    }

    /// The queue ran empty: what a dequeue that finds nothing does (the sojourn time is below
    /// target from now on, and the dropping state ends). Queues call it when their last packet
    /// leaves, so that the state is right even if nothing asks for a packet until the next
    /// one arrives.
    pub fn on_empty(&mut self) {
        self.first_above_us = None;
        self.dropping = false;
    }

    /// The control law: the next drop `interval / sqrt(count)` after `t`.
    fn control_law(&self, t: u64) -> u64 {
        let gap = self.params.interval_us as f64 / f64::from(self.count.max(1)).sqrt();
        t + gap.round() as u64
    }

    /// Takes the head packet and says whether it may be dropped: its sojourn time has been at
    /// or above target for at least an interval (RFC: `dodequeue`).
    fn take_head<Q: CoDelQueue>(&mut self, now: u64, q: &mut Q) -> (Option<Q::Item>, bool) {
        let Some((item, enqueued)) = q.pop() else {
            self.first_above_us = None;
            return (None, false);
        };
        let sojourn = now.saturating_sub(enqueued);
        let mut ok_to_drop = false;
        if sojourn < self.params.target_us || q.backlog_bytes() <= self.params.mtu_bytes {
            // Below target (or too little queued to matter): stay below for an interval.
            self.first_above_us = None;
        } else {
            match self.first_above_us {
                None => self.first_above_us = Some(now + self.params.interval_us),
                Some(t) => ok_to_drop = now >= t,
            }
        }
        (Some(item), ok_to_drop)
    }

    fn drop_one<Q: CoDelQueue>(&mut self, q: &mut Q, item: Option<Q::Item>) {
        if let Some(p) = item {
            q.discard(p);
            self.drops += 1;
        }
    }

    /// The next packet to send at `now`, after the drops CoDel decides (each handed to
    /// [`CoDelQueue::discard`]); `None` when the queue has nothing left (RFC: `dequeue`).
    pub fn dequeue<Q: CoDelQueue>(&mut self, now: u64, q: &mut Q) -> Option<Q::Item> {
        let (mut item, mut ok_to_drop) = self.take_head(now, q);
        if self.dropping {
            if !ok_to_drop {
                // The sojourn time fell below target: leave the dropping state.
                self.dropping = false;
            }
            // Drop as the control law schedules; each drop brings the next one closer.
            while self.dropping && now >= self.drop_next_us {
                self.drop_one(q, item.take());
                self.count += 1;
                (item, ok_to_drop) = self.take_head(now, q);
                if ok_to_drop {
                    self.drop_next_us = self.control_law(self.drop_next_us);
                } else {
                    self.dropping = false;
                }
            }
        } else if ok_to_drop {
            // Above target for a whole interval: drop and enter the dropping state.
            self.drop_one(q, item.take());
            (item, _) = self.take_head(now, q);
            self.dropping = true;
            // Section 5.5: when the queue needed dropping again soon after the last dropping
            // state (its next drop was due less than 16 intervals ago), start from the drop
            // rate that controlled it then instead of from one.
            let delta = self.count.saturating_sub(self.lastcount);
            let since = now as i128 - self.drop_next_us as i128;
            self.count = if delta > 1 && since < 16 * self.params.interval_us as i128 { delta } else { 1 };
            self.drop_next_us = self.control_law(now);
            self.lastcount = self.count;
        }
        item
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::VecDeque;

    /// A test FIFO of (id, bytes, enqueue time) that records the ids CoDel dropped.
    #[derive(Default)]
    struct Fifo {
        q: VecDeque<(u32, u64, u64)>,
        bytes: u64,
        dropped: Vec<u32>,
    }

    impl Fifo {
        fn push(&mut self, id: u32, bytes: u64, t: u64) {
            self.q.push_back((id, bytes, t));
            self.bytes += bytes;
        }
    }

    impl CoDelQueue for Fifo {
        type Item = u32;
        fn pop(&mut self) -> Option<(u32, u64)> {
            let (id, b, t) = self.q.pop_front()?;
            self.bytes -= b;
            Some((id, t))
        }
        fn backlog_bytes(&self) -> u64 {
            self.bytes
        }
        fn discard(&mut self, id: u32) {
            self.dropped.push(id);
        }
    }

    /// A link of one 1500-byte packet per `service_us`, fed one packet every `arrival_us`
    /// (so the queue grows when arrivals are faster); returns the drop times.
    fn overload(codel: &mut CoDel, service_us: u64, arrival_us: u64, until: u64) -> (Vec<u64>, Fifo) {
        let mut f = Fifo::default();
        let mut drops_at = Vec::new();
        let (mut next_arrival, mut next_service, mut id) = (0, 0, 0);
        while next_arrival.min(next_service) < until {
            if next_arrival <= next_service {
                f.push(id, 1500, next_arrival);
                id += 1;
                next_arrival += arrival_us;
            } else {
                let before = f.dropped.len();
                codel.dequeue(next_service, &mut f);
                drops_at.extend(std::iter::repeat_n(next_service, f.dropped.len() - before));
                next_service += service_us;
            }
        }
        (drops_at, f)
    }

    #[test]
    fn names_parse_and_print() {
        for q in Qdisc::ALL {
            assert_eq!(q.to_string().parse::<Qdisc>().unwrap(), q);
            assert_eq!(serde_json::to_string(&q).unwrap(), format!("\"{q}\""));
            assert_eq!(serde_json::from_str::<Qdisc>(&format!("\"{q}\"")).unwrap(), q);
        }
        assert_eq!(" CoDel ".parse::<Qdisc>().unwrap(), Qdisc::CoDel);
        assert_eq!(Qdisc::default(), Qdisc::DropTail);
        let e = "red".parse::<Qdisc>().unwrap_err();
        assert!(e.contains("'red'") && e.contains("droptail, dropfront, codel"), "{e}");
    }

    #[test]
    fn nothing_is_dropped_below_target() {
        // Every packet waits 4 ms (below the 5 ms target) however deep the queue.
        let mut c = CoDel::new(CoDelParams::default());
        let mut f = Fifo::default();
        for i in 0..2000u32 {
            f.push(i, 1500, u64::from(i) * 1000);
        }
        for i in 0..2000u64 {
            assert_eq!(c.dequeue(i * 1000 + 4000, &mut f), Some(i as u32));
        }
        assert_eq!(c.drops(), 0);
        assert!(!c.dropping());
    }

    #[test]
    fn nothing_is_dropped_with_at_most_one_packet_behind() {
        // Long sojourn times, but the queue never holds more than one MTU after the head:
        // a slow link, not a standing queue.
        let mut c = CoDel::new(CoDelParams::default());
        let mut f = Fifo::default();
        for i in 0..100u64 {
            f.push(i as u32, 1500, i * 50_000);
            f.push(1000 + i as u32, 1500, i * 50_000);
            assert!(c.dequeue(i * 50_000 + 40_000, &mut f).is_some());
            assert!(c.dequeue(i * 50_000 + 45_000, &mut f).is_some());
        }
        assert_eq!(c.drops(), 0);
    }

    #[test]
    fn first_drop_comes_one_interval_after_the_sojourn_time_rose_above_target() {
        // 1 ms service, arrivals every 0.5 ms: the sojourn time grows by 0.5 ms per packet
        // and crosses 5 ms at the 11th dequeue (t = 10 ms).
        let mut c = CoDel::new(CoDelParams::default());
        let (drops, _) = overload(&mut c, 1000, 500, 400_000);
        // Sojourn of the packet dequeued at t: t - (t/1000)*500 = t/2 -> >= 5 ms from t = 10 ms.
        let above = 10_000;
        assert_eq!(drops[0], above + CODEL_INTERVAL_US, "{:?}", &drops[..5]);
        assert!(c.dropping());
    }

    #[test]
    fn drop_spacing_shrinks_as_interval_over_sqrt_count() {
        // A persistent overload (arrivals twice the service rate): in the dropping state the
        // k-th gap between drops is interval / sqrt(k) (to the 1 ms service granularity).
        let mut c = CoDel::new(CoDelParams::default());
        let (drops, _) = overload(&mut c, 1000, 500, 2_000_000);
        assert!(drops.len() > 20, "{} drops", drops.len());
        for k in 1..20usize {
            let gap = (drops[k] - drops[k - 1]) as f64;
            let law = CODEL_INTERVAL_US as f64 / (k as f64).sqrt();
            assert!((gap - law).abs() <= 1000.0, "gap {k}: {gap} µs, control law {law:.0} µs");
        }
        // Still dropping, ever faster, while the overload lasts.
        assert!(c.dropping() && c.count() as usize == drops.len());
    }

    #[test]
    fn dropping_stops_when_the_queue_drains_and_the_count_carries_over() {
        let mut c = CoDel::new(CoDelParams::default());
        let mut f = Fifo::default();
        // A standing queue of 10 ms packets for 300 ms, dequeued every ms.
        let mut id = 0;
        let mut t: u64 = 0;
        while t < 300_000 {
            f.push(id, 1500, t.saturating_sub(10_000));
            id += 1;
            f.push(id, 1500, t.saturating_sub(10_000));
            id += 1;
            c.dequeue(t, &mut f);
            t += 1000;
        }
        assert!(c.dropping());
        let count = c.count();
        assert!(count > 2, "{count}");
        // The queue drains: the next dequeue sees a short sojourn and leaves the dropping state.
        f.q.clear();
        f.bytes = 0;
        f.push(id, 1500, t - 1000);
        f.push(id + 1, 1500, t - 1000);
        assert!(c.dequeue(t, &mut f).is_some());
        assert!(!c.dropping());
        // Soon after, the queue stands again: the first drop after an interval re-enters the
        // dropping state with the previous state's drop count (section 5.5), not 1.
        let lastcount = c.lastcount;
        let start = t + 10_000;
        let mut t = start;
        let before = c.drops();
        while c.drops() == before {
            f.push(id, 1500, t - 10_000);
            f.push(id + 1, 1500, t - 10_000);
            id += 2;
            c.dequeue(t, &mut f);
            t += 1000;
        }
        assert_eq!(t - 1000, start + CODEL_INTERVAL_US);
        assert_eq!(c.count(), count - lastcount);
        // After a long pause (more than 16 intervals past the last scheduled drop) it starts
        // from 1 again.
        f.q.clear();
        f.bytes = 0;
        f.push(id, 1500, t);
        c.dequeue(t, &mut f);
        assert!(!c.dropping());
        let mut t = t + 20 * CODEL_INTERVAL_US;
        let before = c.drops();
        while c.drops() == before {
            f.push(id, 1500, t - 10_000);
            f.push(id + 1, 1500, t - 10_000);
            id += 2;
            c.dequeue(t, &mut f);
            t += 1000;
        }
        assert_eq!(c.count(), 1);
    }
}
