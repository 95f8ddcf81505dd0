//! A mid-node's segment cache, bounded in bytes: the oldest segment goes first (FIFO). FIFO
//! rather than LRU because a transfer moves forward: what a node needs to repair is what it
//! forwarded last, and FIFO costs no bookkeeping on a hit.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

/// Default bound: 64 MiB holds ~2.7 s of a 200 Mbit/s flow, more than any hop's repair
/// horizon (a hole is repaired within one hop RTT of being seen).
pub const DEFAULT_CACHE_BYTES: usize = 64 << 20;
/// Bookkeeping charged per segment on top of its payload (key, map slot, queue slot), so
/// that a flood of tiny segments cannot exceed the bound either.
const ENTRY_OVERHEAD: usize = 64;

/// One cached segment.
#[derive(Debug, Clone)]
pub struct Segment {
    /// Total segments of the content (`packet::UNBOUNDED` for bulk).
    pub total: u32,
    /// The producer's send timestamp, kept so a repaired copy still measures the true OWD.
    pub timestamp_us: u64,
    /// The bytes.
    pub payload: Box<[u8]>,
}

/// The cache.
#[derive(Debug)]
pub struct Cache {
    map: HashMap<(Arc<str>, u32), Segment>,
    order: VecDeque<(Arc<str>, u32)>,
    bytes: usize,
    limit: usize,
    /// Segments evicted to stay within the bound.
    pub evictions: u64,
}

impl Cache {
    /// An empty cache holding at most `limit` bytes (0 disables caching).
    pub fn new(limit: usize) -> Cache {
        Cache { map: HashMap::new(), order: VecDeque::new(), bytes: 0, limit, evictions: 0 }
    }

    /// Stores a segment (a copy already present is kept).
    pub fn insert(&mut self, name: &Arc<str>, seg: u32, s: Segment) {
        let cost = s.payload.len() + ENTRY_OVERHEAD;
        if cost > self.limit {
            return;
        }
        let key = (name.clone(), seg);
        if self.map.contains_key(&key) {
            return;
        }
        while self.bytes + cost > self.limit {
            let Some(old) = self.order.pop_front() else { break };
            if let Some(o) = self.map.remove(&old) {
                self.bytes -= o.payload.len() + ENTRY_OVERHEAD;
                self.evictions += 1;
            }
        }
        self.order.push_back(key.clone());
        self.map.insert(key, s);
        self.bytes += cost;
    }

    /// The segment, if cached.
    pub fn get(&self, name: &Arc<str>, seg: u32) -> Option<&Segment> {
        self.map.get(&(name.clone(), seg))
    }

    /// Bytes charged now (always <= the limit).
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// Segments held.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// Whether nothing is cached.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seg(n: usize) -> Segment {
        Segment { total: 100, timestamp_us: 0, payload: vec![1; n].into_boxed_slice() }
    }

    #[test]
    fn stays_within_its_byte_bound_and_evicts_oldest_first() {
        let name: Arc<str> = Arc::from("f");
        let mut c = Cache::new(10 * (1000 + ENTRY_OVERHEAD));
        for i in 0..25 {
            c.insert(&name, i, seg(1000));
            assert!(c.bytes() <= 10 * (1000 + ENTRY_OVERHEAD));
        }
        assert_eq!(c.len(), 10);
        assert_eq!(c.evictions, 15);
        assert!(c.get(&name, 14).is_none());
        assert!(c.get(&name, 15).is_some() && c.get(&name, 24).is_some());
        // Too big for the whole cache: refused, nothing evicted.
        c.insert(&name, 99, seg(20_000));
        assert!(c.get(&name, 99).is_none());
        assert_eq!(c.len(), 10);
        let mut off = Cache::new(0);
        off.insert(&name, 1, seg(1));
        assert!(off.is_empty());
    }
}
