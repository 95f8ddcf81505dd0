//! The option carrier against the running kernel: real TCP between two network namespaces, the
//! sender's and the receiver's processes in two cgroups so that each "host" has its own role on
//! the one kernel, iperf3 as traffic, and a scriptable BPF peer (lab::TestPeer) to play a plain
//! or a hostile receiver.
//!
//! Root only (skips with a message otherwise); every test holds lab::GlobalLock and unloads
//! leocc when it ends; namespaces, cgroups and links go on drop, also when a test fails.

use std::process::Stdio;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::sleep;
use std::time::{Duration, Instant};

use leocc_kernel::lab::{
    self, Iperf3Server, NetnsPair, PeerScript, TestCgroup, TestPeer, SERVER_ADDR,
};
use leocc_kernel::loader::{self, LoadOptions};
use leocc_kernel::option::{self, Counters, Role, OPT_EXID, OPT_KIND};
use leocc_kernel::signal::{self, Signal};
use leocc_kernel::stats::{self, FlowStats};

const PORT: u16 = 5211;
/// A valid handshake option offering PRODUCE: what a leocc receiver puts in its SYN-ACK.
const PRODUCER_SYNACK: [u8; 5] = [OPT_KIND, 5, (OPT_EXID >> 8) as u8, OPT_EXID as u8, 0x11];

fn exclusive(test: &str) -> Option<lab::Exclusive> {
    let held = lab::exclusive(test, &["ip", "iperf3"])?;
    if let Err(e) = option::cgroup2_root() {
        eprintln!("SKIP {test}: {e}");
        return None;
    }
    loader::load(&LoadOptions::default()).expect("leocc loads");
    Some(held)
}

/// The leocc flows to the test server.
fn flows() -> Vec<FlowStats> {
    flows_to(SERVER_ADDR)
}

fn flows_to(server: &str) -> Vec<FlowStats> {
    stats::read_stats()
        .expect("stats map")
        .into_iter()
        .filter(|f| f.remote.ip().to_string() == server && f.remote.port() == PORT)
        .collect()
}

fn wait_flow(timeout: Duration, pred: impl Fn(&FlowStats) -> bool) -> Option<FlowStats> {
    wait_flow_to(SERVER_ADDR, timeout, pred)
}

fn wait_flow_to(
    server: &str,
    timeout: Duration,
    pred: impl Fn(&FlowStats) -> bool,
) -> Option<FlowStats> {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(f) = flows_to(server).into_iter().find(|f| pred(f)) {
            return Some(f);
        }
        if Instant::now() > deadline {
            return None;
        }
        sleep(Duration::from_millis(20));
    }
}

fn counters() -> Counters {
    option::read_counters().expect("option counters")
}

/// A detector stand-in: keeps the signal map fresh (a probe reply every 20 ms, terminal-PoP
/// RTT 25 ms) and publishes the reconfigurations `reconfigure` asks for.
struct Detector {
    stop: Arc<AtomicBool>,
    seq: Arc<AtomicU64>,
    when: Arc<AtomicU64>,
    confidence: Arc<AtomicU64>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Detector {
    fn start() -> Detector {
        let stop = Arc::new(AtomicBool::new(false));
        let seq = Arc::new(AtomicU64::new(0));
        let when = Arc::new(AtomicU64::new(0));
        let confidence = Arc::new(AtomicU64::new(100));
        let (s, q, w, c) = (stop.clone(), seq.clone(), when.clone(), confidence.clone());
        let thread = std::thread::spawn(move || {
            while !s.load(Ordering::Relaxed) {
                let now = signal::monotonic_ns();
                let sig = Signal::new(w.load(Ordering::SeqCst), q.load(Ordering::SeqCst), now, 25_000)
                    .with_confidence(c.load(Ordering::SeqCst) as u8);
                signal::write_signal(&sig).expect("signal written");
                sleep(Duration::from_millis(20));
            }
        });
        Detector { stop, seq, when, confidence, thread: Some(thread) }
    }

    /// Publishes one reconfiguration now; returns its CLOCK_MONOTONIC time.
    fn reconfigure(&self) -> u64 {
        self.reconfigure_with(100)
    }

    /// Publishes one reconfiguration with the given confidence now.
    fn reconfigure_with(&self, confidence: u8) -> u64 {
        let now = signal::monotonic_ns();
        self.confidence.store(u64::from(confidence), Ordering::SeqCst);
        self.when.store(now, Ordering::SeqCst);
        self.seq.fetch_add(1, Ordering::SeqCst);
        let sig = Signal::new(now, self.seq.load(Ordering::SeqCst), now, 25_000).with_confidence(confidence);
        signal::write_signal(&sig).expect("signal written");
        now
    }
}

impl Drop for Detector {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Runs a leocc transfer of `secs` from the client (in `snd`) while `during` runs; returns
/// the iperf3 result.
fn transfer(
    pair: &NetnsPair,
    snd: &TestCgroup,
    secs: u32,
    during: impl FnOnce(),
) -> lab::Iperf3Result {
    let mut cmd = lab::iperf3_client(pair, PORT, "leocc", secs, 1);
    snd.join(&mut cmd);
    let child = cmd.stdout(Stdio::piped()).spawn().expect("iperf3 client");
    during();
    let out = child.wait_with_output().expect("iperf3 ends");
    lab::parse_iperf3_json(&String::from_utf8_lossy(&out.stdout)).expect("iperf3 result")
}

#[test]
fn signal_crosses_from_receiver_map_to_sender_flow() {
    let Some(_x) = exclusive("signal_crosses") else { return };
    let snd = TestCgroup::new("snd").expect("cgroup");
    let rcv = TestCgroup::new("rcv").expect("cgroup");
    option::attach(Role::Sender, &snd.path).expect("sender role");
    option::attach(Role::Receiver, &rcv.path).expect("receiver role");
    let pair = NetnsPair::new("opt").expect("netns pair");
    let _server = Iperf3Server::start_in(&pair, PORT, &rcv).expect("iperf3 server");
    let detector = Detector::start();
    let before = counters();

    let mut seen = None;
    let mut fed = None;
    let mut when = 0;
    let r = transfer(&pair, &snd, 3, || {
        seen = wait_flow(Duration::from_secs(2), |f| {
            f.signal_source == "remote" && f.signal == "fresh" && f.remote_options > 10
        });
        when = detector.reconfigure();
        fed = wait_flow(Duration::from_secs(1), |f| f.reconfigs_fed == 1);
    });
    drop(detector);
    let c = counters().since(&before);
    eprintln!("counters:\n{c}\nbefore the event: {seen:?}\nafter: {fed:?}");

    assert_eq!(r.sender_cc, "leocc");
    let seen = seen.expect("the sender flow takes the signal from the option, fresh");
    assert_eq!(seen.term_pop_rtt_us, 25_000, "terminal-PoP RTT carried");
    assert_eq!(seen.reconfigs_fed, 0, "no event before the reconfiguration");
    let fed = fed.expect("the reconfiguration reached the sender flow");
    assert_eq!(fed.core_reconfigs + fed.core_reconfigs_skipped, 1, "the core took it");
    // Write to the receiver's map -> next ACK carries it -> parsed -> cong_control feeds it.
    // The veth RTT is tens of microseconds; allow for a loaded 2-core machine.
    let latency_us = fed.reconfig_fed_us.saturating_sub(when / 1000);
    eprintln!("map write to core: {latency_us} us");
    assert!(latency_us < 20_000, "event took {latency_us} us to reach the sender's core");
    // Dated by the sender as arrival minus the carried age: within a few ms of the truth.
    assert!(fed.last_reconfig_ns.abs_diff(when) < 5_000_000, "{fed:?} vs {when}");
    assert!(c.get("producing") >= 1 && c.get("consuming") >= 1, "{c}");
    assert!(c.get("written") > 0 && c.get("received") > 0, "{c}");
    // One event per consuming connection (iperf3's control connection consumes too).
    assert!(c.get("events") >= 1 && c.get("events") <= c.get("consuming"), "{c}");
    assert_eq!(c.get("bad_len") + c.get("bad_version") + c.get("bad_magic"), 0, "{c}");
    // Ordering on this kernel: the option is parsed before cong_control of the same ACK.
    // (If cong_control ran first, it would still see the previous option's ACK number and
    // never count. Not every option is claimed: the control connection's are not leocc's, and
    // ACKs that do not reach cong_control, e.g. duplicates, are not claimed either.)
    assert!(
        c.get("same_ack") * 2 >= c.get("received"),
        "cong_control ran before the parse on too many ACKs: {c}"
    );
}

#[test]
fn the_confidence_crosses_in_the_option() {
    let Some(_x) = exclusive("confidence") else { return };
    let snd = TestCgroup::new("sndc").expect("cgroup");
    let rcv = TestCgroup::new("rcvc").expect("cgroup");
    option::attach(Role::Sender, &snd.path).expect("sender role");
    option::attach(Role::Receiver, &rcv.path).expect("receiver role");
    let pair = NetnsPair::new("optc").expect("netns pair");
    let _server = Iperf3Server::start_in(&pair, PORT, &rcv).expect("iperf3 server");
    let detector = Detector::start();
    let (mut weak, mut strong) = (None, None);
    let r = transfer(&pair, &snd, 4, || {
        wait_flow(Duration::from_secs(2), |f| f.signal_source == "remote" && f.signal == "fresh");
        // Confidence 30 -> grade 2 on the wire -> 16 at the sender: fed, not acted on.
        detector.reconfigure_with(30);
        weak = wait_flow(Duration::from_secs(1), |f| f.reconfigs_fed == 1);
        // Past the sender's 1 s limit on option events, a confident one is acted on.
        sleep(Duration::from_millis(1100));
        detector.reconfigure_with(90);
        strong = wait_flow(Duration::from_secs(1), |f| f.reconfigs_fed == 2);
    });
    drop(detector);
    assert_eq!(r.sender_cc, "leocc");
    let weak = weak.expect("the weak event reached the sender flow");
    // Counted as not acted on (`reconfigs_skipped`), no adaptation.
    assert_eq!((weak.core_reconfigs, weak.core_reconfigs_skipped), (0, 1), "below the core's threshold: {weak:?}");
    let strong = strong.expect("the confident event reached the sender flow");
    assert_eq!((strong.core_reconfigs, strong.core_reconfigs_skipped), (1, 1), "{strong:?}");
}

#[test]
fn ipv6_connections_negotiate_and_carry_the_signal() {
    let Some(_x) = exclusive("ipv6") else { return };
    let snd = TestCgroup::new("snd6").expect("cgroup");
    let rcv = TestCgroup::new("rcv6").expect("cgroup");
    option::attach(Role::Both, &snd.path).expect("both roles");
    option::attach(Role::Both, &rcv.path).expect("both roles");
    let pair = NetnsPair::new("opt6").expect("netns pair");
    let _server = Iperf3Server::start_in(&pair, PORT, &rcv).expect("iperf3 server");
    let detector = Detector::start();
    let mut cmd = lab::iperf3_client_to(&pair, lab::SERVER_ADDR6, PORT, "leocc", 2, 1);
    snd.join(&mut cmd);
    let child = cmd.stdout(Stdio::null()).spawn().expect("iperf3 client");
    let seen = wait_flow_to(lab::SERVER_ADDR6, Duration::from_secs(2), |f| {
        f.signal_source == "remote" && f.signal == "fresh" && f.remote_options > 10
    });
    detector.reconfigure();
    let fed = wait_flow_to(lab::SERVER_ADDR6, Duration::from_secs(1), |f| f.reconfigs_fed == 1);
    let _ = child.wait_with_output();
    eprintln!("{seen:?}\n{fed:?}");
    assert!(seen.is_some(), "the IPv6 flow takes its signal from the option");
    assert!(fed.is_some(), "the reconfiguration crossed over IPv6");
}

#[test]
fn plain_peers_see_no_option_and_options_need_both_sides() {
    let Some(_x) = exclusive("plain_peers") else { return };
    let snd = TestCgroup::new("snd").expect("cgroup");
    let rcv = TestCgroup::new("rcv").expect("cgroup");
    let pair = NetnsPair::new("plain").expect("netns pair");
    let _detector = Detector::start();

    // 1. A leocc receiver, a plain sender (observed by the test peer): nothing in the SYN-ACK,
    //    nothing on the ACKs.
    option::attach(Role::Receiver, &rcv.path).expect("receiver role");
    let observer = TestPeer::attach(&snd, &PeerScript::default()).expect("observer");
    let server = Iperf3Server::start_in(&pair, PORT, &rcv).expect("iperf3 server");
    let before = counters();
    let r = transfer(&pair, &snd, 1, || {});
    let c = counters().since(&before);
    let seen = observer.seen().expect("observer counters");
    eprintln!("plain sender: {seen:?}\n{c}");
    assert!(r.received_bps > 0.0);
    assert_eq!(seen.synacks, 0, "a plain sender got our option in a SYN-ACK");
    assert_eq!(seen.segments, 0, "a plain sender got our option on ACKs");
    assert_eq!(c.get("producing") + c.get("written") + c.get("syn_sent"), 0, "{c}");
    drop(server);
    drop(observer);
    option::detach(&rcv.path).expect("detach");

    // 2. A leocc sender, a plain receiver (observed): the SYN offers, the receiver does not
    //    answer, so the sender neither writes nor parses anything more.
    option::attach(Role::Sender, &snd.path).expect("sender role");
    let observer = TestPeer::attach(&rcv, &PeerScript::default()).expect("observer");
    let _server = Iperf3Server::start_in(&pair, PORT, &rcv).expect("iperf3 server");
    let before = counters();
    let mut flow = None;
    transfer(&pair, &snd, 1, || {
        flow = wait_flow(Duration::from_secs(1), |f| f.acks > 100);
    });
    let c = counters().since(&before);
    let seen = observer.seen().expect("observer counters");
    eprintln!("plain receiver: {seen:?}\n{c}\n{flow:?}");
    assert_eq!(seen.segments, 0, "a plain receiver got our option after the handshake");
    assert!(c.get("syn_sent") >= 1, "the SYN offers the option: {c}");
    assert!(c.get("peer_plain") >= 1, "{c}");
    assert_eq!(c.get("consuming") + c.get("producing") + c.get("received"), 0, "{c}");
    let flow = flow.expect("leocc flow listed");
    assert_eq!(flow.signal_source, "local", "without a capable peer the flow keeps the local map");
}

/// A hostile receiver (test peer) that negotiates like a leocc receiver and then writes `ack`.
fn run_hostile(tag: &str, ack: Vec<u8>, bump_at: u32, secs: u32) -> (Counters, Vec<FlowStats>) {
    let snd = TestCgroup::new("snd").expect("cgroup");
    let rcv = TestCgroup::new(tag).expect("cgroup");
    option::attach(Role::Sender, &snd.path).expect("sender role");
    let script = PeerScript {
        synack: PRODUCER_SYNACK.to_vec(),
        ack,
        bump_at,
    };
    let peer = TestPeer::attach(&rcv, &script).expect("hostile peer");
    let pair = NetnsPair::new(tag).expect("netns pair");
    let _server = Iperf3Server::start_in(&pair, PORT, &rcv).expect("iperf3 server");
    let before = counters();
    let mut samples = Vec::new();
    let r = transfer(&pair, &snd, secs, || {
        let end = Instant::now() + Duration::from_secs(u64::from(secs));
        while Instant::now() < end {
            samples.extend(flows());
            sleep(Duration::from_millis(50));
        }
    });
    let c = counters().since(&before);
    let seen = peer.seen().expect("peer counters");
    eprintln!("{tag}: peer {seen:?}, {:.2} Gbit/s\n{c}", r.received_bps / 1e9);
    assert!(seen.written > 100, "the test peer wrote its options: {seen:?}");
    assert!(r.received_bps > 0.0, "the transfer survives the peer's options");
    assert!(samples.iter().all(|f| f.signal_source == "remote"), "flow negotiated");
    (c, samples)
}

#[test]
fn malformed_options_are_ignored_and_counted() {
    let Some(_x) = exclusive("malformed") else { return };
    let (hi, lo) = ((OPT_EXID >> 8) as u8, OPT_EXID as u8);
    let cases: [(&str, Vec<u8>, &str); 3] = [
        ("badlen", vec![OPT_KIND, 8, hi, lo, 0x11, 0, 7, 0], "bad_len"),
        ("badver", vec![OPT_KIND, 12, hi, lo, 0x21, 0, 7, 0, 0, 9, 0xc4, 0], "bad_version"),
        ("badmagic", vec![OPT_KIND, 12, hi, lo ^ 1, 0x11, 0, 7, 0, 0, 9, 0xc4, 0], "bad_magic"),
    ];
    for (tag, ack, counter) in cases {
        let (c, samples) = run_hostile(tag, ack, 0, 1);
        assert!(c.get(counter) > 100, "{tag}: {counter} not counted: {c}");
        assert_eq!(c.get("received") + c.get("events"), 0, "{tag}: malformed option used: {c}");
        assert!(!samples.is_empty(), "{tag}: flow listed");
        for f in &samples {
            assert_eq!(f.reconfigs_fed, 0, "{tag}: {f:?}");
            assert_eq!(f.remote_options, 0, "{tag}: {f:?}");
            assert_ne!(f.signal, "fresh", "{tag}: a malformed option made the signal fresh");
        }
    }
}

#[test]
fn reconfiguration_claims_are_rate_limited_and_only_make_the_flow_cautious() {
    let Some(_x) = exclusive("rate_limit") else { return };
    let (hi, lo) = ((OPT_EXID >> 8) as u8, OPT_EXID as u8);
    // A well-formed signal whose sequence number (bytes 5..6) changes on every segment:
    // a reconfiguration claimed per ACK, each "just now" (age 0), terminal-PoP RTT 25 ms.
    let ack = vec![OPT_KIND, 12, hi, lo, 0x11, 0, 0, 0, 0, 0x09, 0xc4, 0];
    let secs = 3;
    let (c, samples) = run_hostile("ratelimit", ack, 5, secs);
    let fed = samples.iter().map(|f| f.reconfigs_fed).max().unwrap_or(0);
    eprintln!("reconfigurations fed: {fed}");
    assert!(c.get("received") > 100, "{c}");
    assert!(c.get("rate_limited") > 100, "{c}");
    assert!(
        c.get("events") <= c.get("consuming") * (u64::from(secs) + 1),
        "more than one reconfiguration a second accepted per connection: {c}"
    );
    assert!(fed >= 2 && fed <= u64::from(secs) + 1, "fed {fed} in {secs} s");
    // Cautious, never faster: whatever the peer claims, the rate the core applies is a gain
    // (at most Startup's 2.885) times a bandwidth it measured from the ACK clock, now or before
    // the event (Reconfiguration Adaptation restores the pre-event target while its inflight
    // cap holds the window down).
    // The core's pacing floor, min_cwnd packets per bRTT_l, is the flow's own too (its RTT, not
    // the peer's claims). On this sub-millisecond link bRTT_l is the lower edge of the first
    // 1 ms bin, 1 µs, and the floor alone (4 packets per µs) lies above any measured rate:
    // the cap is the larger of the two (at most 1500 bytes a packet).
    let min_cwnd = u64::from(leocc_kernel::params::Params::default().get("min_cwnd").unwrap());
    let mut measured = 0u64;
    let mut in_adaptation = 0;
    for f in &samples {
        measured = measured.max(f.bbw_a).max(f.bbw_m).max(f.target_rate);
        let floor = min_cwnd * 1500 * 1_000_000 / u64::from(f.brtt_l_us).max(1);
        assert!(
            f.pacing_rate as f64 <= (2.9 * measured as f64).max(floor as f64),
            "pacing {} above 2.9 x the most the ACK clock ever measured ({measured}) and the floor ({floor}): {f:?}",
            f.pacing_rate
        );
        in_adaptation += usize::from(f.mode_name == "reconf-adapt");
    }
    eprintln!("{in_adaptation} of {} samples in reconfiguration adaptation", samples.len());
}
