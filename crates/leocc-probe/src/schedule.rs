//! The wall-clock schedule prior of periodic reconfigurations.
//!
//! Starlink reconfigures synchronously worldwide at seconds 12, 27, 42 and 57 of every minute
//! (seed §4.1.1 and the works it cites). A schedule is a period and the slot offsets inside it,
//! all in Unix wall-clock nanoseconds. The detector uses it to *label* events (periodic
//! within ± tolerance of a slot, aperiodic otherwise), to flag slots that passed unseen, and,
//! when asked to, to seed the schedule it learns (`DetectorConfig::seed_schedule`): the
//! stream's own evidence still decides whether an outage happened, and the learner drops
//! the seed when its slots stay silent.

/// Nanoseconds per second.
const NS_PER_S: i64 = 1_000_000_000;
/// Starlink's schedule: the period (s) and the slot offsets inside it (s), seed §4.1.1.
const STARLINK_PERIOD_S: i64 = 60;
const STARLINK_SLOTS_S: [i64; 4] = [12, 27, 42, 57];
/// Default tolerance around a slot, ns: 500 ms. The outage-start estimate (the last reply
/// before the gap) lands within tens of ms of the slot second on the ping-isl trace; the wider
/// margin absorbs an imperfectly synchronised host clock.
pub const DEFAULT_TOLERANCE_NS: u64 = 500_000_000;

/// A periodic wall-clock schedule of reconfiguration slots.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Schedule {
    /// Period in ns.
    pub period_ns: i64,
    /// Slot offsets inside the period, ns, ascending, each in [0, period).
    pub slots_ns: Vec<i64>,
    /// Half-width of the window around a slot, ns.
    pub tolerance_ns: u64,
}

impl Schedule {
    /// Starlink's seconds 12/27/42/57 of every minute with the given tolerance.
    pub fn starlink(tolerance_ns: u64) -> Self {
        Schedule {
            period_ns: STARLINK_PERIOD_S * NS_PER_S,
            slots_ns: STARLINK_SLOTS_S.iter().map(|s| s * NS_PER_S).collect(),
            tolerance_ns,
        }
    }

    /// Parses a schedule name (`starlink`) as given on the command line.
    pub fn by_name(name: &str, tolerance_ns: u64) -> Result<Self, String> {
        match name {
            "starlink" => Ok(Self::starlink(tolerance_ns)),
            other => Err(format!("unknown schedule '{other}' (known: starlink)")),
        }
    }

    /// The slot period when the slots are evenly spaced (Starlink: 15 s), ns; None otherwise
    /// (such a schedule cannot seed a one-period grid).
    pub fn slot_period_ns(&self) -> Option<i64> {
        let n = self.slots_ns.len() as i64;
        if n == 0 || self.period_ns % n != 0 {
            return None;
        }
        let step = self.period_ns / n;
        self.slots_ns.windows(2).all(|w| w[1] - w[0] == step).then_some(step)
    }

    /// The first slot at or after `wall_ns` (Unix ns).
    pub fn next_slot_at_or_after(&self, wall_ns: i64) -> i64 {
        let base = wall_ns.div_euclid(self.period_ns) * self.period_ns;
        for cycle in [base, base + self.period_ns] {
            if let Some(s) = self.slots_ns.iter().map(|o| cycle + o).find(|&s| s >= wall_ns) {
                return s;
            }
        }
        // Unreachable for a non-empty slot list; an empty one has no slots ever.
        i64::MAX
    }

    /// Signed distance from the nearest slot to `wall_ns` (positive: after the slot), ns.
    pub fn offset_to_nearest_slot(&self, wall_ns: i64) -> i64 {
        let next = self.next_slot_at_or_after(wall_ns);
        let prev = self.prev_slot_before(wall_ns);
        let after = wall_ns - prev;
        let before = wall_ns - next;
        if after.unsigned_abs() <= before.unsigned_abs() {
            after
        } else {
            before
        }
    }

    fn prev_slot_before(&self, wall_ns: i64) -> i64 {
        let base = wall_ns.div_euclid(self.period_ns) * self.period_ns;
        for cycle in [base, base - self.period_ns] {
            if let Some(s) = self.slots_ns.iter().rev().map(|o| cycle + o).find(|&s| s < wall_ns) {
                return s;
            }
        }
        i64::MIN / 2
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIN0: i64 = 1_723_489_200 * NS_PER_S; // a whole minute

    #[test]
    fn next_slot_walks_the_minute() {
        let s = Schedule::starlink(DEFAULT_TOLERANCE_NS);
        assert_eq!(s.next_slot_at_or_after(MIN0), MIN0 + 12 * NS_PER_S);
        assert_eq!(s.next_slot_at_or_after(MIN0 + 12 * NS_PER_S), MIN0 + 12 * NS_PER_S);
        assert_eq!(s.next_slot_at_or_after(MIN0 + 12 * NS_PER_S + 1), MIN0 + 27 * NS_PER_S);
        assert_eq!(s.next_slot_at_or_after(MIN0 + 58 * NS_PER_S), MIN0 + 72 * NS_PER_S);
    }

    #[test]
    fn nearest_slot_offset_is_signed() {
        let s = Schedule::starlink(DEFAULT_TOLERANCE_NS);
        assert_eq!(s.offset_to_nearest_slot(MIN0 + 11_980_000_000), -20_000_000);
        assert_eq!(s.offset_to_nearest_slot(MIN0 + 12_300_000_000), 300_000_000);
        // 59 s is 2 s after 57 and 13 s before the next minute's 12.
        assert_eq!(s.offset_to_nearest_slot(MIN0 + 59 * NS_PER_S), 2 * NS_PER_S);
        // Just after the minute: nearest is 57 of the previous minute.
        assert_eq!(s.offset_to_nearest_slot(MIN0 + NS_PER_S), 4 * NS_PER_S);
    }

    #[test]
    fn starlink_slots_are_a_15_s_grid() {
        assert_eq!(Schedule::starlink(DEFAULT_TOLERANCE_NS).slot_period_ns(), Some(15 * NS_PER_S));
        let uneven = Schedule { period_ns: 60 * NS_PER_S, slots_ns: vec![0, 10 * NS_PER_S], tolerance_ns: 1 };
        assert_eq!(uneven.slot_period_ns(), None);
    }

    #[test]
    fn unknown_name_is_an_error() {
        assert!(Schedule::by_name("oneweb", 1).unwrap_err().contains("unknown schedule"));
    }
}
