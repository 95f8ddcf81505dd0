use super::*;
use crate::events::{SharedSignal, Subscription};
use leocc_probe::subscribe::SubscriptionServer;

const MTU: u16 = 1200;

fn controller(events: Arc<dyn EventSource>) -> (LeoccController, Instant) {
    let now = Instant::now();
    (LeoccController::new(&LeoccConfig::new().events(events), now, MTU), now)
}

/// Drives `rounds` round trips of a 12 Mbit/s path with a 40 ms RTT: a window of 50 packets,
/// each ACK (one packet) releasing the next send at the same instant.
fn drive(c: &mut LeoccController, t0: Instant, from: u32, rounds: u32) -> Instant {
    const WINDOW: u32 = 50;
    let rtt = Duration::from_millis(40);
    let gap = Duration::from_micros(800);
    let sent_at = |i: u32| t0 + gap * i;
    let mut t = t0;
    for i in from * WINDOW..(from + rounds) * WINDOW {
        t = sent_at(i) + rtt;
        // The ACK of packet i arrives after packet i + WINDOW - 1 left (800 us x 50 = 40 ms).
        c.acked(t, sent_at(i), u64::from(MTU), rtt, rtt);
        c.on_end_acks(t, u64::from(MTU) * u64::from(WINDOW - 1), false, Some(u64::from(i)));
        c.on_sent(t, u64::from(MTU), u64::from(i + WINDOW));
    }
    t
}

#[test]
fn acks_produce_a_rate_and_a_window() {
    let (mut c, t0) = controller(Arc::new(NoEvents));
    assert!(c.initial_window() >= u64::from(MTU));
    drive(&mut c, t0, 0, 40);
    let l = &c;
    assert!(l.stats().samples > 1000, "{:?}", l.stats());
    let v = l.view();
    assert!(v.bbw_a > 0, "{v:?}");
    // The model found the path's rate (1.5 MB/s) within a factor of two.
    assert!(v.bbw_a > 700_000 && v.bbw_a < 3_000_000, "bbw_a {}", v.bbw_a);
    assert!(c.window() >= 2 * u64::from(MTU));
}

#[test]
fn a_window_never_drops_below_two_datagrams_even_after_persistent_congestion() {
    let (mut c, t0) = controller(Arc::new(NoEvents));
    let t = drive(&mut c, t0, 0, 5);
    c.on_congestion_event(t, t, true, 100_000);
    assert_eq!(c.window(), 2 * u64::from(MTU));
    assert_eq!(c.stats().congestion_events, 1);
}

#[test]
fn shared_signal_events_reach_the_core_once() {
    let shared = Arc::new(SharedSignal::default());
    let (mut c, t0) = controller(shared.clone());
    let t = drive(&mut c, t0, 0, 10);
    // On the controller's own clock: the core clamps an event from its future to its present.
    let when = c.clock.us(t) * 1000;
    shared.set(Signal { reconfig_time_ns: when, seq: 1, probe_time_ns: when, term_pop_rtt_us: 20_000, confidence: 100 });
    drive(&mut c, t0, 10, 2);
    let l = &c;
    assert_eq!(l.stats().reconfigs_seen, 1, "one event, forwarded once however many batches see it");
    assert_eq!(l.stats().paths_seen, 1);
    assert_eq!(l.view().last_reconfig_us, when / 1000);
}

#[test]
fn events_from_the_daemon_socket_reach_the_controller() {
    let dir = std::env::temp_dir().join(format!("leocc-quic-ctl-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(leocc_probe::subscribe::SOCKET_NAME);
    let mut server = SubscriptionServer::bind(&path).unwrap();
    let sub = Subscription::start(&path);
    let (mut c, t0) = controller(sub.clone());
    let t = drive(&mut c, t0, 0, 10);
    let when = c.clock.us(t) * 1000;
    let sig = Signal { reconfig_time_ns: when, seq: 7, probe_time_ns: when, term_pop_rtt_us: 25_000, confidence: 90 };
    // The subscriber connects asynchronously: keep publishing (as the daemon does every
    // 50 ms) until it has the event. Bounded so that a broken subscription fails the test.
    for _ in 0..200 {
        server.send(&sig);
        if sub.latest() == Some(sig) {
            break;
        }
        std::thread::sleep(Duration::from_millis(25));
    }
    assert_eq!(sub.latest(), Some(sig), "the subscription never delivered the event");
    drive(&mut c, t0, 10, 2);
    let l = &c;
    assert_eq!(l.stats().reconfigs_seen, 1);
    assert_eq!(l.view().last_reconfig_us, when / 1000);
    assert_eq!(sub.lines().1, 0, "no malformed lines");
    drop(server);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn monotonic_clock_mapping_is_consistent_and_saturates() {
    let c = MonoClock::new();
    let now = Instant::now();
    let a = c.us(now);
    let b = c.us(now + Duration::from_millis(5));
    assert_eq!(b - a, 5000);
    let mono = monotonic_ns() / 1000;
    assert!(mono.abs_diff(c.us(Instant::now())) < 50_000, "Instant and CLOCK_MONOTONIC agree");
    // An Instant long before the reference does not wrap.
    let _ = c.us(now.checked_sub(Duration::from_secs(1)).unwrap_or(now));
}
