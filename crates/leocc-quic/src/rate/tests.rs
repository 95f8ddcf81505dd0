use super::*;

const MSS: u64 = 1200;
/// 12 Mbit/s bottleneck: one 1200-byte packet per 800 us.
const SERVICE: Duration = Duration::from_micros(800);
const RTT: Duration = Duration::from_millis(40);

/// A saturated sender behind a FIFO bottleneck: `window` packets in flight, each ACK (after
/// `ack_fate` decides: deliver, drop, or delay by n packet slots) releases the next send.
/// Returns the valid samples' rates.
fn run(packets: usize, window: usize, ack_fate: impl Fn(usize) -> Option<u32>) -> (Vec<f64>, RateEstimator) {
    let t0 = Instant::now();
    let mut est = RateEstimator::new(t0);
    // Packet i leaves at send[i], is served at t0 + (i+1)*SERVICE, its ACK arrives RTT later.
    let mut send = vec![t0; packets];
    let mut acks: Vec<(Instant, usize)> = Vec::new();
    let mut rates = Vec::new();
    for (i, s) in send.iter_mut().enumerate() {
        if i >= window {
            // Window-limited: the packet leaves when the ACK of packet i-window arrives.
            *s = t0 + SERVICE * (i - window + 1) as u32 + RTT;
        }
        let served = (t0 + SERVICE * (i + 1) as u32).max(*s + SERVICE);
        if let Some(delay) = ack_fate(i) {
            acks.push((served + RTT + SERVICE * delay, i));
        }
    }
    acks.sort();
    let mut events: Vec<(Instant, bool, usize)> = send.iter().enumerate().map(|(i, t)| (*t, true, i)).collect();
    events.extend(acks.iter().map(|(t, i)| (*t, false, *i)));
    events.sort_by_key(|e| (e.0, e.1));
    let mut in_flight = 0u64;
    for (t, is_send, i) in events {
        if is_send {
            in_flight += MSS;
            est.on_sent(t, false);
        } else {
            in_flight = in_flight.saturating_sub(MSS);
            est.on_ack(t, send[i], MSS);
            let s = est.on_end_acks(in_flight, RTT);
            if let Some(r) = s.rate() {
                rates.push(r);
            }
        }
    }
    (rates, est)
}

fn bottleneck() -> f64 {
    MSS as f64 / SERVICE.as_secs_f64()
}

#[test]
fn clean_ack_stream_measures_the_bottleneck() {
    let (rates, _) = run(2000, 100, |_| Some(0));
    assert!(rates.len() > 1500, "{} samples", rates.len());
    let late = &rates[rates.len() / 2..];
    for r in late {
        assert!((r / bottleneck() - 1.0).abs() < 0.05, "rate {r} vs {}", bottleneck());
    }
}

#[test]
fn lost_acks_do_not_inflate_or_break_the_estimate() {
    // Every third ACK is lost and a run of 40 in the middle too; QUIC ACKs are cumulative
    // ranges, but quinn reports each acked packet with the next ACK that covers it — here the
    // harsher case: those packets are never reported at all.
    let (rates, _) = run(3000, 100, |i| (i % 3 != 0 && !(1500..1540).contains(&i)).then_some(0));
    assert!(rates.len() > 1000);
    // The first window's samples measure a start-up (one packet per RTT at first); after
    // two windows the estimate must hold.
    for r in &rates[200..] {
        // Fewer bytes are counted delivered, so the estimate may only fall, never exceed.
        assert!(*r <= bottleneck() * 1.05, "rate {r} above bottleneck {}", bottleneck());
        // The worst window holds the 40-packet gap and a third of the rest unreported:
        // (100 - 40) x 2/3 of 100 packets = 0.4 of the bottleneck, and no less.
        assert!(*r >= bottleneck() * 0.38, "rate {r} collapsed");
    }
    // Away from the gap it is back at the 2/3 that was reported.
    for r in &rates[rates.len() * 3 / 4..] {
        assert!((r / bottleneck() - 2.0 / 3.0).abs() < 0.05, "rate {r}");
    }
}

#[test]
fn reordered_acks_never_overestimate() {
    // Every 7th ACK arrives 20 packet slots late (reordering across many ACK batches).
    let (rates, est) = run(3000, 100, |i| Some(if i % 7 == 0 { 20 } else { 0 }));
    assert!(rates.len() > 2000);
    let max = rates.iter().cloned().fold(0.0, f64::max);
    assert!(max <= bottleneck() * 1.10, "max {max} vs bottleneck {}", bottleneck());
    let late = &rates[rates.len() / 2..];
    let mean = late.iter().sum::<f64>() / late.len() as f64;
    assert!((mean / bottleneck() - 1.0).abs() < 0.05, "mean {mean}");
    assert!(est.entries() <= 3000);
}

#[test]
fn unknown_and_stale_acks_are_harmless() {
    let t0 = Instant::now();
    let mut est = RateEstimator::new(t0);
    // An ACK for a send we never saw: counted, no sample, no panic.
    est.on_ack(t0 + RTT, t0 - RTT, MSS);
    let s = est.on_end_acks(0, RTT);
    assert_eq!(s.delivered, 0);
    assert_eq!(s.delivered_total, MSS);
    // An end of batch without ACKs yields no sample either.
    assert_eq!(est.on_end_acks(0, RTT).rate(), None);
}

#[test]
fn entries_are_pruned_behind_the_newest_ack() {
    let t0 = Instant::now();
    let mut est = RateEstimator::new(t0);
    for i in 0..1000u32 {
        est.on_sent(t0 + Duration::from_millis(10) * i, false);
    }
    assert_eq!(est.entries(), 1000);
    // Only the last one is acknowledged: everything more than PRUNE_AGE older goes.
    let last = t0 + Duration::from_millis(10) * 999;
    est.on_ack(last + RTT, last, MSS);
    est.on_end_acks(0, RTT);
    let kept = PRUNE_AGE.as_millis() as usize / 10 + 1;
    assert_eq!(est.entries(), kept);
}
