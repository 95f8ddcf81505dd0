//! A node's table of content names: every per-flow structure (hole detection, interest-gap
//! recovery) is keyed by an interned name, so this table is what bounds their number.
//!
//! Two rules keep junk from filling it for good (issue 34): a name enters only from a packet
//! that passed every check (an interest from a validated address, see `addrval`), and a name
//! nobody has used for `NAME_IDLE_US` expires. While every slot holds a name in use, a new
//! name is refused and the caller tells the requester so (an error packet), instead of
//! silently never serving it.
//!
//! What a flow loses when its name expires is small and recoverable: its hole-detection and
//! interest-gap baselines (relearned from the next packet) and requests still queued for the
//! upstream hop (its consumer's timer asks again). Cached segments and pending interests are
//! keyed by the name's text, not by the table slot, and stay.

use std::collections::HashMap;
use std::sync::Arc;

/// A name unused (no interest from downstream, no data from upstream) for this long expires,
/// µs. An active flow uses its name every few milliseconds; this is over ten times a LEO
/// handover outage (at most 130 ms on the ISL profile) and six times the consumer's smallest
/// retransmission timeout, so only a flow that has stalled for good loses its entry. It is
/// also how long a table filled by a junk flood refuses new contents after the flood.
pub const NAME_IDLE_US: u64 = 2_000_000;

/// The table.
#[derive(Debug)]
pub struct Names {
    /// Name → when it was last used, µs.
    map: HashMap<Arc<str>, u64>,
    capacity: usize,
    /// No entry can expire before this, µs (a lower bound: entries are touched after it is
    /// computed), so that a full table under a flood is scanned at most once per expiry.
    earliest_expiry_us: u64,
}

impl Names {
    /// An empty table of at most `capacity` names.
    pub fn new(capacity: usize) -> Names {
        Names { map: HashMap::new(), capacity, earliest_expiry_us: 0 }
    }

    /// The interned name, if present; marks it used at `now_us`.
    pub fn get(&mut self, name: &str, now_us: u64) -> Option<Arc<str>> {
        let k = self.map.get_key_value(name)?.0.clone();
        if let Some(last) = self.map.get_mut(name) {
            *last = (*last).max(now_us);
        }
        Some(k)
    }

    /// The interned name, if present, without marking it used.
    pub fn peek(&self, name: &str) -> Option<Arc<str>> {
        self.map.get_key_value(name).map(|(k, _)| k.clone())
    }

    /// Removes `name` (e.g. upstream said nobody serves it); whether it was present.
    pub fn remove(&mut self, name: &str) -> bool {
        self.map.remove(name).is_some()
    }

    /// Whether `name` is present (does not mark it used).
    pub fn contains(&self, name: &str) -> bool {
        self.map.contains_key(name)
    }

    /// The interned name, adding it if new; marks it used. None when the table is full of
    /// names used within the last `NAME_IDLE_US` (the caller refuses the request). Names that
    /// expired to make room are appended to `expired`, for the caller to drop their state.
    pub fn intern(&mut self, name: &str, now_us: u64, expired: &mut Vec<Arc<str>>) -> Option<Arc<str>> {
        if let Some(a) = self.get(name, now_us) {
            return Some(a);
        }
        if self.map.len() >= self.capacity {
            self.expire(now_us, expired);
            if self.map.len() >= self.capacity {
                return None;
            }
        }
        let a: Arc<str> = Arc::from(name);
        self.map.insert(a.clone(), now_us);
        self.earliest_expiry_us = self.earliest_expiry_us.min(now_us + NAME_IDLE_US);
        Some(a)
    }

    /// Removes every name idle for `NAME_IDLE_US`, appending it to `expired`. Cheap when
    /// nothing can have expired yet.
    pub fn expire(&mut self, now_us: u64, expired: &mut Vec<Arc<str>>) {
        if now_us < self.earliest_expiry_us {
            return;
        }
        let mut earliest = u64::MAX;
        self.map.retain(|k, &mut last| {
            let keep = now_us.saturating_sub(last) < NAME_IDLE_US;
            if keep {
                earliest = earliest.min(last + NAME_IDLE_US);
            } else {
                expired.push(k.clone());
            }
            keep
        });
        self.earliest_expiry_us = earliest;
    }

    /// Names held.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// Whether the table is empty.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_table_refuses_until_idle_names_expire() {
        let mut n = Names::new(3);
        let mut gone = Vec::new();
        for (i, name) in ["a", "b", "c"].iter().enumerate() {
            assert!(n.intern(name, i as u64, &mut gone).is_some());
        }
        assert!(n.intern("d", 10, &mut gone).is_none(), "full of names in use");
        // "a" stays in use; "b" and "c" go idle.
        assert!(n.get("a", NAME_IDLE_US).is_some());
        assert!(n.intern("d", NAME_IDLE_US + 2, &mut gone).is_some());
        gone.sort();
        assert_eq!(gone.iter().map(|g| &**g).collect::<Vec<_>>(), ["b", "c"]);
        assert!(n.contains("a") && n.contains("d") && !n.contains("b"));
        // The same text interns to the same entry.
        let x = n.intern("d", NAME_IDLE_US + 3, &mut gone).unwrap();
        assert!(Arc::ptr_eq(&x, &n.get("d", NAME_IDLE_US + 4).unwrap()));
        assert_eq!(n.len(), 2);
    }

    #[test]
    fn a_flood_of_new_names_costs_one_scan_per_expiry_not_one_per_name() {
        let mut n = Names::new(1024);
        let mut gone = Vec::new();
        for i in 0..1024u64 {
            n.intern(&format!("junk-{i}"), i, &mut gone).unwrap();
        }
        // 100,000 more during the idle time: refused, and fast (no scan per name).
        let t = std::time::Instant::now();
        for i in 0..100_000u64 {
            assert!(n.intern(&format!("more-{i}"), 2000 + i, &mut gone).is_none());
        }
        assert!(t.elapsed() < std::time::Duration::from_secs(2), "{:?}", t.elapsed());
        // After it, everything has expired and new names get in.
        let mut expired = Vec::new();
        n.expire(1024 + NAME_IDLE_US, &mut expired);
        assert_eq!(expired.len(), 1024);
        assert!(n.is_empty());
        assert!(n.intern("real", 1024 + NAME_IDLE_US, &mut gone).is_some());
    }
}
