//! The event queue: a binary min-heap ordered by (time, insertion sequence).
//!
//! The sequence number breaks ties between events at the same microsecond in the order they
//! were scheduled, which makes the whole run deterministic regardless of heap internals.
//! Events are small plain values (a kind and an index); the packets themselves live in the
//! links' queues and delay lines, so the heap stays small and cache friendly.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

/// What happens when an event fires. Indices refer to the world's hops and flows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ev {
    /// A hop's transmitter may send at a delivery opportunity.
    HopService(u16),
    /// The head of a hop's delay line reaches the hop's far end.
    HopArrive(u16),
    /// A flow starts sending.
    FlowStart(u16),
    /// A flow stops sending.
    FlowStop(u16),
    /// A sender may transmit again (pacing release).
    SenderWake(u16),
    /// The retransmission timer of a flow.
    Rto(u16),
    /// RACK's reordering-window timer of a flow.
    Rack(u16),
    /// The receiver's delayed-ACK timer of a flow.
    DelAck(u16),
    /// The detector sends its next ICMP probe.
    ProbeSend,
    /// A probe packet reaches the end of its current leg.
    ProbeLeg,
    /// Ground-truth reconfiguration number i (oracle mode).
    Oracle(u32),
    /// Time-series sampling tick.
    Sample,
}

#[derive(Debug)]
struct Entry {
    time: u64,
    seq: u64,
    ev: Ev,
}

impl PartialEq for Entry {
    fn eq(&self, o: &Self) -> bool {
        self.time == o.time && self.seq == o.seq
    }
}
impl Eq for Entry {}
impl PartialOrd for Entry {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Entry {
    // Reversed: BinaryHeap is a max-heap and we want the earliest event first.
    fn cmp(&self, o: &Self) -> Ordering {
        (o.time, o.seq).cmp(&(self.time, self.seq))
    }
}

/// A deterministic discrete-event queue.
#[derive(Debug, Default)]
pub struct EventQueue {
    heap: BinaryHeap<Entry>,
    next_seq: u64,
}

impl EventQueue {
    /// Schedule `ev` at absolute time `time_us`.
    pub fn push(&mut self, time_us: u64, ev: Ev) {
        self.heap.push(Entry { time: time_us, seq: self.next_seq, ev });
        self.next_seq += 1;
    }

    /// The earliest event, if any.
    pub fn pop(&mut self) -> Option<(u64, Ev)> {
        self.heap.pop().map(|e| (e.time, e.ev))
    }

    /// The time of the earliest event.
    pub fn peek_time(&self) -> Option<u64> {
        self.heap.peek().map(|e| e.time)
    }

    /// Number of pending events.
    pub fn len(&self) -> usize {
        self.heap.len()
    }

    /// True when nothing is pending.
    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn earliest_first_and_ties_in_insertion_order() {
        let mut q = EventQueue::default();
        q.push(10, Ev::Sample);
        q.push(5, Ev::FlowStart(1));
        q.push(10, Ev::FlowStart(2));
        q.push(5, Ev::FlowStart(0));
        let order: Vec<_> = std::iter::from_fn(|| q.pop()).collect();
        assert_eq!(
            order,
            vec![(5, Ev::FlowStart(1)), (5, Ev::FlowStart(0)), (10, Ev::Sample), (10, Ev::FlowStart(2))]
        );
    }
}
