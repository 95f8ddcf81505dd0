//! The daemon loop: probe every 10 ms, validate replies, run the detector, publish.
//!
//! One iteration: send the probe that is due (a failed send — interface down, no route — is
//! counted and reported with back-off, never fatal), wait with poll() until the next send is
//! due or a reply arrives, then drain and validate every queued datagram, timestamping each on
//! CLOCK_MONOTONIC right after the receive. Detector outputs go to the JSON-lines log, to
//! stdout, to the publisher (the kernel signal map) and into the state file.
//!
//! Reachability. When the PoP has not answered for `unreachable_after`, the daemon says so,
//! repeating the announcement with exponential back-off (1 s, 2 s, 4 s ... 5 min), and slows
//! its probing to one per `UNREACHABLE_INTERVAL_NS` so that a dead path is not hammered; the
//! detector sees the slower sends and does not mistake the resulting long RIs for outages. The
//! first reply restores the 10 ms rate. With `--auto`, a PoP silent for `rediscover_after` is
//! looked up again (the terminal may have moved to another PoP).
//!
//! Signals. SIGTERM/SIGINT end the loop cleanly (log flushed, pid file removed, lock
//! released); SIGHUP re-discovers the PoP (with `--auto`) and reopens the log file (for log
//! rotation). The handlers only set atomic flags; the loop polls with a bounded timeout.

use std::collections::VecDeque;
use std::fs::{File, OpenOptions};
use std::io::{self, BufWriter, Write};
use std::net::IpAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};

use serde_json::json;

use crate::detect::{Detector, DetectorConfig, Output, ReconfigEvent, Reply};
use crate::discover::{self, Prefix};
use crate::icmp::{self, Validator};
use crate::instance::Instance;
use crate::net::{self, IcmpSocket, Target};

/// The paper's probe interval, ns: 10 ms (seed §4.1.1).
pub const DEFAULT_INTERVAL_NS: u64 = 10_000_000;
/// Silence after which the PoP is declared unreachable, ns: 1 s = 100 probes unanswered, far
/// beyond the longest reconfiguration outage (~120 ms bent-pipe, ~750 ms over ISLs).
pub const DEFAULT_UNREACHABLE_AFTER_NS: u64 = 1_000_000_000;
/// Silence after which `--auto` discovers the PoP again, ns: 10 s.
pub const DEFAULT_REDISCOVER_AFTER_NS: u64 = 10_000_000_000;
/// Probe interval while the PoP is unreachable, ns: 200 ms (5 probes/s keep watch cheaply).
const UNREACHABLE_INTERVAL_NS: u64 = 200_000_000;
/// First and largest gap between repeated "unreachable" announcements, ns.
const ANNOUNCE_FIRST_NS: u64 = 1_000_000_000;
const ANNOUNCE_MAX_NS: u64 = 300_000_000_000;
/// State file refresh period, ns: 1 s.
const STATE_PERIOD_NS: u64 = 1_000_000_000;
/// Retry period for a publisher that failed (map not loaded yet), ns: 5 s.
const PUBLISH_RETRY_NS: u64 = 5_000_000_000;
/// Events kept in the state file.
const RECENT_EVENTS: usize = 16;
/// Receive buffer: a reply to our probe is 20 + 8 + 8 bytes; errors quote more.
const RECV_BUF: usize = 2048;

static STOP: AtomicBool = AtomicBool::new(false);
static RELOAD: AtomicBool = AtomicBool::new(false);

extern "C" fn on_stop(_: libc::c_int) {
    STOP.store(true, Ordering::SeqCst);
}

extern "C" fn on_hup(_: libc::c_int) {
    RELOAD.store(true, Ordering::SeqCst);
}

fn install_signal_handlers() {
    use leocc_base::signal::{install, Handler};
    // The handlers only store to atomics, which is async-signal-safe. No SA_RESTART, so
    // poll() returns EINTR and the loop sees the flag at once.
    install(&[libc::SIGTERM, libc::SIGINT], Handler::Plain(on_stop), false);
    install(&[libc::SIGHUP], Handler::Plain(on_hup), false);
}

/// Where the PoP address comes from.
#[derive(Clone, Debug)]
pub enum PopSource {
    /// Given on the command line.
    Fixed(Target),
    /// Discovered by TTL-limited probes toward `dest`, first hop in `prefixes`.
    Auto {
        /// The destination traced toward.
        dest: Target,
        /// Prefixes the PoP lies in.
        prefixes: Vec<Prefix>,
    },
}

/// Daemon options (the command line, parsed).
#[derive(Clone, Debug)]
pub struct Options {
    /// Where the PoP comes from.
    pub pop: PopSource,
    /// Probe interval, ns.
    pub interval_ns: u64,
    /// Detector tunables (threshold, schedule, hold-off).
    pub detector: DetectorConfig,
    /// JSON-lines event log.
    pub log: Option<PathBuf>,
    /// Stop after this long, ns.
    pub duration_ns: Option<u64>,
    /// Run directory for the lock, pid and state files.
    pub run_dir: PathBuf,
    /// Silence before the PoP is declared unreachable, ns.
    pub unreachable_after_ns: u64,
    /// Silence before `--auto` rediscovers, ns.
    pub rediscover_after_ns: u64,
    /// Print each event on stdout.
    pub verbose: bool,
    /// Serve the measurements in Prometheus' format at this address (`--metrics`).
    pub metrics: Option<std::net::SocketAddr>,
}

/// The signal the daemon publishes (mirrors the kernel's `struct leocc_signal` data fields).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SignalUpdate {
    /// CLOCK_MONOTONIC ns at which the last reconfiguration was detected (0: none yet).
    pub reconfig_time_ns: u64,
    /// Reconfigurations so far (continues from what the map held at start).
    pub seq: u64,
    /// CLOCK_MONOTONIC ns of the latest valid reply (freshness).
    pub probe_time_ns: u64,
    /// Latest terminal–PoP RTT, µs (0: unknown).
    pub term_pop_rtt_us: u32,
    /// Confidence of the last reconfiguration, 0..=100 (the kernel's core ignores events
    /// below its `rcf_min_confidence`).
    pub confidence: u8,
}

/// A sink for the signal: the pinned kernel map in production.
pub trait Publisher {
    /// What it writes to, for messages.
    fn describe(&self) -> String;
    /// The sequence number already in the sink (so that a restarted daemon continues it).
    fn current_seq(&mut self) -> Option<u64>;
    /// Writes the signal; an error (e.g. the map is not loaded) is reported once and retried.
    fn publish(&mut self, s: &SignalUpdate) -> Result<(), String>;
    /// Called once the daemon holds its run directory's instance lock, before the first
    /// probe (the subscription socket is bound here).
    fn start(&mut self) {}
    /// A descriptor the daemon's loop waits on besides its probe socket (the subscription's
    /// listening socket), so that connections are served when they arrive, not only when the
    /// daemon next publishes. `None`: nothing to watch now.
    fn wake_fd(&self) -> Option<std::os::fd::RawFd> {
        None
    }
    /// Serves what made [`Publisher::wake_fd`] readable (accepts subscribers). Must not
    /// block.
    fn service(&mut self) {}
    /// Facts for the state file's `subscribers` entry (`leocc probe status`), if any.
    fn state(&self) -> Option<serde_json::Value> {
        None
    }
}

/// How a run ended.
#[derive(Debug, Clone, Copy, Default)]
pub struct Summary {
    /// Probes sent.
    pub sent: u64,
    /// Valid replies.
    pub replies: u64,
    /// Reconfigurations detected.
    pub events: u64,
    /// Long response intervals explained by our own send pauses (not events).
    pub suppressed: u64,
}

struct Log {
    path: PathBuf,
    out: BufWriter<File>,
}

impl Log {
    fn open(path: &PathBuf) -> io::Result<Log> {
        let f = OpenOptions::new().create(true).append(true).open(path)?;
        Ok(Log { path: path.clone(), out: BufWriter::new(f) })
    }

    fn line(&mut self, v: &serde_json::Value) {
        let r = writeln!(self.out, "{v}").and_then(|_| self.out.flush());
        if let Err(e) = r {
            eprintln!("leocc probe: writing {}: {e}", self.path.display());
        }
    }
}

fn ms(ns: u64) -> f64 {
    ns as f64 / 1e6
}

/// The JSON log line of an event.
pub fn event_json(e: &ReconfigEvent, wall_ns: i64) -> serde_json::Value {
    json!({
        "type": "reconfig",
        "t_mono_ms": ms(e.start_mono_ns),
        "detect_mono_ms": ms(e.detect_mono_ns),
        "wall": e.start_wall_ns as f64 / 1e9,
        "detect_wall": wall_ns as f64 / 1e9,
        "ri_ms": ms(e.ri_ns),
        "kind": e.kind.as_str(),
        "slot_offset_ms": e.slot_offset_ns.map(|o| o as f64 / 1e6),
        "rtt_ms": ms(e.rtt.latest_ns),
        "rtt_min_ms": ms(e.rtt.min_ns),
        "srtt_ms": ms(e.rtt.srtt_ns),
        "seq": e.seq,
        "reply_seq": e.reply_seq,
        "confidence": e.confidence,
        "send_gap_ms": ms(e.send_gap_ns),
        "rtt_step_ms": e.rtt_step_ns as f64 / 1e6,
        "p_normal": e.p_normal,
        "prior": e.prior,
        "period_ms": e.grid_period_ns.map(|p| p as f64 / 1e6),
        "grid_offset_ms": e.grid_offset_ns.map(|o| o as f64 / 1e6),
    })
}

/// The JSON log line of a weak candidate (not acted on): the event's fields, another type.
pub fn weak_json(e: &ReconfigEvent, wall_ns: i64) -> serde_json::Value {
    let mut v = event_json(e, wall_ns);
    v["type"] = json!("weak");
    v
}

/// Counts of packets that were not our replies, by reason.
#[derive(Default, Debug, Clone, Copy, serde::Serialize)]
struct Rejects {
    unparsable: u64,
    not_echo_reply: u64,
    foreign_id: u64,
    wrong_source: u64,
    not_outstanding: u64,
    /// Valid second replies: duplicated by the network, or a sign of an on-path host
    /// answering early (see icmp.rs).
    duplicate: u64,
    bad_cookie: u64,
}

impl Rejects {
    fn count(&mut self, r: icmp::Reject) {
        match r {
            icmp::Reject::NotEchoReply => self.not_echo_reply += 1,
            icmp::Reject::ForeignId => self.foreign_id += 1,
            icmp::Reject::WrongSource => self.wrong_source += 1,
            icmp::Reject::NotOutstanding => self.not_outstanding += 1,
            icmp::Reject::Duplicate => self.duplicate += 1,
            icmp::Reject::BadCookie => self.bad_cookie += 1,
        }
    }
}

/// Exponential back-off of a repeated message.
struct Backoff {
    next_ns: u64,
    gap_ns: u64,
}

impl Backoff {
    fn new(now: u64) -> Self {
        Backoff { next_ns: now, gap_ns: ANNOUNCE_FIRST_NS }
    }
    /// Whether to speak now; if so, the next time is twice as far.
    fn due(&mut self, now: u64) -> bool {
        if now < self.next_ns {
            return false;
        }
        self.next_ns = now + self.gap_ns;
        self.gap_ns = (self.gap_ns * 2).min(ANNOUNCE_MAX_NS);
        true
    }
}

struct PublishState {
    sink: Option<Box<dyn Publisher>>,
    ok: Option<bool>,
    retry_at_ns: u64,
    seq_base: u64,
}

/// The running daemon.
struct Daemon {
    opts: Options,
    sock: IcmpSocket,
    pop: Target,
    validator: Validator,
    detector: Detector,
    log: Option<Log>,
    instance: Instance,
    publish: PublishState,
    start_mono: u64,
    start_wall: i64,
    seq: u16,
    sent: u64,
    send_errors: u64,
    send_backoff: Option<Backoff>,
    rejects: Rejects,
    reachable: bool,
    unreachable_backoff: Option<Backoff>,
    last_heard: u64,
    /// Set when the PoP answers again: the next probe goes out at once, at the fast rate.
    resume_fast: bool,
    recent: VecDeque<serde_json::Value>,
    last_signal: SignalUpdate,
    /// Reconfigurations published (the signal's sequence counts these).
    published: u64,
    /// Confidence of an event declared from a silence after a send, for the sample of the reply
    /// that ends it: the triggers and the metrics see the stream reply by reply.
    silence_event: Option<u8>,
    /// `--trigger` / `--exec` pairs, fed every reply.
    actions: Vec<crate::trigger::Action>,
    /// RI and loss of the probe stream, for the triggers.
    stream: crate::trigger::Stream,
    /// `--metrics`: the Prometheus exporter's snapshot.
    metrics: Option<crate::metrics::Exporter>,
}

fn resolve_pop(src: &PopSource) -> Result<Target, String> {
    match src {
        PopSource::Fixed(t) => Ok(*t),
        PopSource::Auto { dest, prefixes } => {
            let (pop, hops) = discover::discover(*dest, prefixes, discover::DEFAULT_MAX_TTL).map_err(|e| e.to_string())?;
            println!("leocc probe: discovered PoP {pop} toward {dest} ({} hops traced)", hops.len());
            Ok(pop)
        }
    }
}

/// Runs the daemon until SIGTERM/SIGINT or the duration ends.
pub fn run(opts: Options, publisher: Option<Box<dyn Publisher>>) -> Result<Summary, String> {
    run_with_triggers(opts, publisher, Vec::new())
}

/// [`run`], also feeding every reply to `actions` (`--trigger EXPR --exec CMD`); a firing is
/// logged (type "trigger") and its command started without waiting for it.
pub fn run_with_triggers(opts: Options, publisher: Option<Box<dyn Publisher>>, actions: Vec<crate::trigger::Action>) -> Result<Summary, String> {
    let instance = Instance::acquire(&opts.run_dir).map_err(|e| e.to_string())?;
    STOP.store(false, Ordering::SeqCst);
    RELOAD.store(false, Ordering::SeqCst);
    install_signal_handlers();
    let pop = resolve_pop(&opts.pop)?;
    let sock = IcmpSocket::open(pop.addr.is_ipv6())
        .map_err(|e| format!("opening a raw ICMP socket: {e} (needs root or CAP_NET_RAW)"))?;
    let log = match &opts.log {
        Some(p) => Some(Log::open(p).map_err(|e| format!("{}: {e}", p.display()))?),
        None => None,
    };
    let metrics = match opts.metrics {
        Some(addr) => {
            let e = crate::metrics::Exporter::start(addr)?;
            println!("leocc probe: metrics at http://{}/metrics", e.addr());
            Some(e)
        }
        None => None,
    };
    let now = net::mono_ns();
    let mut d = Daemon {
        validator: Validator::new(discover::random_u64() as u16, discover::random_cookie_key(), pop.addr),
        detector: Detector::new(opts.detector.clone()),
        sock,
        pop,
        log,
        instance,
        publish: PublishState { sink: publisher, ok: None, retry_at_ns: 0, seq_base: 0 },
        start_mono: now,
        start_wall: net::wall_ns(),
        seq: 0,
        sent: 0,
        send_errors: 0,
        send_backoff: None,
        rejects: Rejects::default(),
        reachable: true,
        unreachable_backoff: None,
        last_heard: now,
        resume_fast: false,
        recent: VecDeque::new(),
        // Until our first event the map's old event (if any) keeps full confidence, as an
        // older daemon would have published it.
        last_signal: SignalUpdate { confidence: crate::detect::CONF_FULL, ..SignalUpdate::default() },
        published: 0,
        silence_event: None,
        opts,
        actions,
        stream: crate::trigger::Stream::default(),
        metrics,
    };
    d.init_publisher();
    println!(
        "leocc probe: probing PoP {} every {} ms, threshold {} ms (pid {})",
        d.pop,
        ms(d.opts.interval_ns),
        ms(d.opts.detector.threshold_ns),
        std::process::id()
    );
    d.run_loop();
    d.write_state();
    let c = d.detector.counters();
    println!("leocc probe: stopped after {} probes, {} replies, {} reconfigurations", d.sent, c.replies, c.events);
    Ok(Summary { sent: d.sent, replies: c.replies, events: c.events, suppressed: c.suppressed })
}

impl Daemon {
    fn init_publisher(&mut self) {
        let Some(sink) = self.publish.sink.as_mut() else {
            println!("leocc probe: kernel publishing disabled; events are only logged");
            return;
        };
        self.publish.seq_base = sink.current_seq().unwrap_or(0);
        sink.start();
    }

    fn run_loop(&mut self) {
        let mut next_send = self.start_mono;
        let mut next_state = self.start_mono;
        let mut buf = [0u8; RECV_BUF];
        loop {
            let now = net::mono_ns();
            if STOP.load(Ordering::SeqCst) {
                println!("leocc probe: signal received, exiting");
                break;
            }
            if self.opts.duration_ns.is_some_and(|d| now - self.start_mono >= d) {
                break;
            }
            if RELOAD.swap(false, Ordering::SeqCst) {
                self.reload();
            }
            self.check_reachability(now);
            if now >= next_send {
                self.send_probe(now);
                let interval = if self.reachable { self.opts.interval_ns } else { UNREACHABLE_INTERVAL_NS };
                next_send += interval;
                if next_send <= now {
                    // We fell behind (descheduled): resume the grid instead of bursting.
                    next_send = now + interval;
                }
            }
            if now >= next_state {
                self.write_state();
                next_state = now + STATE_PERIOD_NS;
            }
            let wait = next_send.saturating_sub(net::mono_ns());
            let wake_fd = self.publish.sink.as_ref().and_then(|s| s.wake_fd());
            match self.sock.wait_readable_or(wake_fd, wait) {
                Ok((probe, wake)) => {
                    // Replies first: their receive timestamps are the measurement.
                    if probe {
                        self.drain(&mut buf);
                    }
                    if wake {
                        if let Some(s) = self.publish.sink.as_mut() {
                            s.service();
                        }
                    }
                }
                Err(e) => eprintln!("leocc probe: poll: {e}"),
            }
            if std::mem::take(&mut self.resume_fast) {
                next_send = net::mono_ns();
            }
        }
    }

    fn send_probe(&mut self, now: u64) {
        let pkt = self.validator.probe(self.seq, now);
        self.seq = self.seq.wrapping_add(1);
        match self.sock.send_to(&pkt, self.pop) {
            Ok(()) => {
                self.sent += 1;
                self.detector.on_send(now);
                self.stream.on_send(now);
                // An outage may already show in the silence since the last reply.
                for o in self.detector.on_tick(now) {
                    if let Output::Reconfig(e) = o {
                        self.note_event(&e, net::wall_ns());
                        self.publish_signal(now, true);
                        self.write_state();
                        self.silence_event = Some(e.confidence);
                    }
                }
                if let Some(m) = &self.metrics {
                    let sent = self.sent;
                    m.update(|s| s.sent = sent);
                }
                if self.send_backoff.take().is_some() {
                    println!("leocc probe: sending to {} works again", self.pop);
                }
            }
            Err(e) => {
                self.send_errors += 1;
                let b = self.send_backoff.get_or_insert_with(|| Backoff::new(now));
                if b.due(now) {
                    eprintln!("leocc probe: send to {} failed: {e} ({} failures so far; retrying)", self.pop, self.send_errors);
                }
            }
        }
    }

    fn drain(&mut self, buf: &mut [u8]) {
        loop {
            let (n, from) = match self.sock.recv(buf) {
                Ok(Some(x)) => x,
                Ok(None) => return,
                Err(e) => {
                    eprintln!("leocc probe: receive: {e}");
                    return;
                }
            };
            let t = net::mono_ns();
            let w = net::wall_ns();
            let parsed = match from {
                IpAddr::V6(src) if self.sock.is_v6() => icmp::parse_v6(&buf[..n], src),
                _ if self.sock.is_v6() => continue,
                _ => icmp::parse_v4(&buf[..n]),
            };
            let Ok(parsed) = parsed else {
                self.rejects.unparsable += 1;
                continue;
            };
            match self.validator.accept(&parsed, t) {
                Ok(a) => self.on_reply(Reply { seq: a.seq, recv_mono_ns: t, recv_wall_ns: w, rtt_ns: Some(t.saturating_sub(a.sent_ns)) }),
                Err(r) => self.rejects.count(r),
            }
        }
    }

    fn on_reply(&mut self, r: Reply) {
        self.last_heard = r.recv_mono_ns;
        if !self.reachable {
            self.reachable = true;
            self.resume_fast = true;
            self.unreachable_backoff = None;
            println!("leocc probe: PoP {} answers again; probing every {} ms", self.pop, ms(self.opts.interval_ns));
            self.log_line(json!({"type": "pop_reachable", "pop": self.pop.to_string(), "t_mono_ms": ms(r.recv_mono_ns)}));
        }
        let mut new_event = false;
        let mut confidence = 0u8;
        for o in self.detector.on_reply(r) {
            match o {
                Output::Reconfig(e) => {
                    new_event = true;
                    confidence = e.confidence;
                    self.note_event(&e, r.recv_wall_ns);
                }
                Output::Weak(e) => {
                    // Logged for analysis; not published: the core would not act on it, and a
                    // remote sender's 1 s rate limit could then drop a real event behind it.
                    self.log_line(weak_json(&e, r.recv_wall_ns));
                }
                Output::MissedSlot { slot_wall_ns } => {
                    if self.opts.verbose {
                        println!("missed scheduled slot at wall {:.3}", slot_wall_ns as f64 / 1e9);
                    }
                    self.log_line(json!({"type": "missed_slot", "slot_wall": slot_wall_ns as f64 / 1e9, "t_mono_ms": ms(r.recv_mono_ns)}));
                }
                Output::Suppressed { ri_ns, send_gap_ns } => {
                    self.log_line(json!({"type": "suppressed", "ri_ms": ms(ri_ns), "send_gap_ms": ms(send_gap_ns), "t_mono_ms": ms(r.recv_mono_ns)}));
                }
                Output::WallClockJump { jump_ns } => {
                    println!("leocc probe: wall clock jumped by {:.3} s; schedule accounting restarted", jump_ns as f64 / 1e9);
                    self.log_line(json!({"type": "wall_clock_jump", "jump_s": jump_ns as f64 / 1e9, "t_mono_ms": ms(r.recv_mono_ns)}));
                }
            }
        }
        self.last_signal.probe_time_ns = r.recv_mono_ns;
        self.last_signal.term_pop_rtt_us = r.rtt_ns.map_or(0, |n| (n / 1000).min(u64::from(u32::MAX)) as u32);
        self.publish_signal(r.recv_mono_ns, new_event);
        if new_event {
            self.write_state();
        }
        // An event already published from the silence this reply ends: its sample carries it.
        if let Some(c) = self.silence_event.take() {
            new_event = true;
            confidence = c;
        }
        if self.actions.is_empty() && self.metrics.is_none() {
            return;
        }
        let mut s = self.stream.on_reply(r.recv_mono_ns, r.rtt_ns);
        let rtt = self.detector.rtt();
        s.event = if new_event { 1.0 } else { 0.0 };
        s.confidence = f64::from(confidence);
        s.srtt = rtt.srtt_ns as f64 / 1e6;
        s.min_rtt = rtt.min_ns as f64 / 1e6;
        self.export(&s, new_event.then_some(r.recv_wall_ns));
        self.run_triggers(r, &s);
    }

    /// An event, from a reply or from a silence (`Detector::on_tick`): printed, logged, kept
    /// for `status`, and set in the signal the next publication carries.
    fn note_event(&mut self, e: &crate::detect::ReconfigEvent, detect_wall_ns: i64) {
        let line = event_json(e, detect_wall_ns);
        if self.opts.verbose {
            println!(
                "reconfig #{} {} confidence {} ri={:.1} ms rtt={:.1} ms srtt={:.1} ms min={:.1} ms",
                e.seq,
                e.kind.as_str(),
                e.confidence,
                ms(e.ri_ns),
                ms(e.rtt.latest_ns),
                ms(e.rtt.srtt_ns),
                ms(e.rtt.min_ns)
            );
        }
        self.recent.push_back(line.clone());
        if self.recent.len() > RECENT_EVENTS {
            self.recent.pop_front();
        }
        self.log_line(line);
        self.published += 1;
        self.last_signal.reconfig_time_ns = e.detect_mono_ns;
        self.last_signal.seq = self.publish.seq_base + self.published;
        self.last_signal.confidence = e.confidence;
        if let Some(m) = &self.metrics {
            let (events, c) = (self.detector.counters().events, f64::from(e.confidence));
            m.update(|x| {
                x.reconfigurations = events;
                x.last_confidence = c;
                x.last_reconfiguration_s = detect_wall_ns as f64 / 1e9;
            });
        }
    }

    /// The reply's sample into the metrics snapshot (`--metrics`); `event_wall_ns` when the
    /// reply declared a reconfiguration.
    fn export(&self, s: &crate::trigger::Sample, event_wall_ns: Option<i64>) {
        let Some(m) = &self.metrics else { return };
        let c = self.detector.counters();
        let reachable = self.reachable;
        m.update(|x| {
            x.replies = c.replies;
            x.reconfigurations = c.events;
            x.weak = c.weak;
            if s.rtt.is_finite() {
                x.observe_rtt(s.rtt / 1e3);
            }
            x.srtt_s = s.srtt / 1e3;
            x.min_rtt_s = s.min_rtt / 1e3;
            x.loss = s.loss;
            x.reachable = reachable;
            if let Some(w) = event_wall_ns {
                x.last_confidence = s.confidence;
                x.last_reconfiguration_s = w as f64 / 1e9;
            }
        });
    }

    /// Evaluates the triggers on this reply's sample: within one probe interval of the condition.
    fn run_triggers(&mut self, r: Reply, s: &crate::trigger::Sample) {
        let mut lines = Vec::new();
        for a in &mut self.actions {
            let Some(f) = a.trigger_sample(s) else { continue };
            let values: serde_json::Map<String, serde_json::Value> =
                f.values.iter().filter(|(_, v)| v.is_finite()).map(|(n, v)| (n.clone(), json!(v))).collect();
            let (pid, error) = match &f.outcome {
                Ok(pid) => (json!(pid), serde_json::Value::Null),
                Err(e) => (serde_json::Value::Null, json!(e)),
            };
            if self.opts.verbose || f.outcome.is_err() {
                println!("trigger '{}' fired: {}", a.trigger.expr.source(), f.outcome.as_ref().map_or_else(|e| e.clone(), |p| format!("started pid {p}")));
            }
            lines.push(json!({"type": "trigger", "expr": a.trigger.expr.source(), "t_mono_ms": ms(r.recv_mono_ns), "values": values, "pid": pid, "error": error}));
        }
        for l in lines {
            self.log_line(l);
        }
    }

    /// Every valid reply is published: its RTT is one sample of the terminal-PoP path for
    /// LeoCC's band range (`leocc_on_path`, which needs `path_min_samples` of them, 200 ms of
    /// probes at 10 ms). Throttled to one write per 50 ms, a flow waited a second for its range
    /// and saw a fifth of the probes the simulator gives it (docs/simulator.md).
    fn publish_signal(&mut self, now: u64, force: bool) {
        let p = &mut self.publish;
        let Some(sink) = p.sink.as_mut() else { return };
        if p.ok == Some(false) && now < p.retry_at_ns && !force {
            return;
        }
        match sink.publish(&self.last_signal) {
            Ok(()) => {
                if p.ok != Some(true) {
                    println!("leocc probe: publishing to {}", sink.describe());
                }
                p.ok = Some(true);
            }
            Err(e) => {
                if p.ok != Some(false) {
                    println!("leocc probe: not publishing ({e}); events are only logged until it appears");
                }
                p.ok = Some(false);
                p.retry_at_ns = now + PUBLISH_RETRY_NS;
            }
        }
    }

    fn check_reachability(&mut self, now: u64) {
        let silence = now.saturating_sub(self.last_heard);
        if silence < self.opts.unreachable_after_ns {
            return;
        }
        if self.reachable {
            self.reachable = false;
            if let Some(m) = &self.metrics {
                m.update(|x| x.reachable = false);
            }
            self.unreachable_backoff = Some(Backoff::new(now));
            self.log_line(json!({"type": "pop_unreachable", "pop": self.pop.to_string(), "t_mono_ms": ms(now)}));
        }
        if self.unreachable_backoff.as_mut().is_some_and(|b| b.due(now)) {
            println!(
                "leocc probe: PoP {} unreachable for {:.1} s; probing every {} ms until it answers",
                self.pop,
                silence as f64 / 1e9,
                ms(UNREACHABLE_INTERVAL_NS)
            );
        }
        if matches!(self.opts.pop, PopSource::Auto { .. }) && silence >= self.opts.rediscover_after_ns {
            self.rediscover();
            self.last_heard = net::mono_ns().saturating_sub(self.opts.unreachable_after_ns);
        }
    }

    fn rediscover(&mut self) {
        match resolve_pop(&self.opts.pop) {
            Ok(p) if p != self.pop => {
                println!("leocc probe: PoP changed {} -> {p}", self.pop);
                self.log_line(json!({"type": "pop_changed", "from": self.pop.to_string(), "to": p.to_string()}));
                self.pop = p;
                self.validator.set_peer(p.addr);
                self.detector.reset_path();
            }
            Ok(_) => {}
            Err(e) => eprintln!("leocc probe: rediscovery failed: {e}; keeping {}", self.pop),
        }
    }

    fn reload(&mut self) {
        println!("leocc probe: SIGHUP: reopening the log and re-resolving the PoP");
        self.log_line(json!({"type": "reload", "t_mono_ms": ms(net::mono_ns())}));
        if let Some(p) = self.opts.log.clone() {
            match Log::open(&p) {
                Ok(l) => self.log = Some(l),
                Err(e) => eprintln!("leocc probe: reopening {}: {e}; keeping the old handle", p.display()),
            }
        }
        self.rediscover();
    }

    fn log_line(&mut self, v: serde_json::Value) {
        if let Some(l) = self.log.as_mut() {
            l.line(&v);
        }
    }

    fn write_state(&mut self) {
        let now = net::mono_ns();
        let rtt = self.detector.rtt();
        let c = self.detector.counters();
        let kernel = match (&self.publish.sink, self.publish.ok) {
            (None, _) => "disabled".to_string(),
            (Some(s), Some(true)) => format!("publishing to {}", s.describe()),
            (Some(s), Some(false)) => format!("not available ({})", s.describe()),
            (Some(_), None) => "waiting for the first reply".to_string(),
        };
        let state = json!({
            "pid": std::process::id(),
            "started_wall": self.start_wall as f64 / 1e9,
            "uptime_s": (now - self.start_mono) as f64 / 1e9,
            "pop": self.pop.to_string(),
            "pop_mode": match &self.opts.pop { PopSource::Fixed(_) => "fixed".to_string(), PopSource::Auto { dest, .. } => format!("auto toward {dest}") },
            "reachable": self.reachable,
            "interval_ms": ms(self.opts.interval_ns),
            "threshold_ms": ms(self.opts.detector.threshold_ns),
            "scoring": self.opts.detector.scoring,
            "min_confidence": self.opts.detector.min_confidence,
            "learned_period_ms": self.detector.learned_grid().map(|g| g.period_ns as f64 / 1e6),
            "schedule_seeded": self.detector.schedule_seeded(),
            "spacing_ms": ms(self.detector.spacing_ns()),
            "schedule": self.opts.detector.schedule.is_some(),
            "probes_sent": self.sent,
            "send_errors": self.send_errors,
            "replies": c.replies,
            "rejected": self.rejects,
            "last_reply_age_ms": self.detector.last_reply_mono_ns().map(|t| ms(now.saturating_sub(t))),
            "rtt": {"latest_ms": ms(rtt.latest_ns), "srtt_ms": ms(rtt.srtt_ns), "min_ms": ms(rtt.min_ns)},
            "counters": c,
            "kernel": kernel,
            "subscribers": self.publish.sink.as_ref().and_then(|s| s.state()),
            "log": self.opts.log.as_ref().map(|p| p.display().to_string()),
            "recent_events": self.recent,
        });
        if let Err(e) = self.instance.write_state(&state) {
            eprintln!("leocc probe: {e}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_and_caps() {
        let mut b = Backoff::new(0);
        let mut spoken = Vec::new();
        for t in (0..2_000_000_000_000u64).step_by(100_000_000) {
            if b.due(t) {
                spoken.push(t / 1_000_000_000);
            }
        }
        assert_eq!(&spoken[..6], &[0, 1, 3, 7, 15, 31]);
        let gaps: Vec<u64> = spoken.windows(2).map(|w| w[1] - w[0]).collect();
        assert!(gaps.iter().all(|&g| g <= ANNOUNCE_MAX_NS / 1_000_000_000));
    }
}
