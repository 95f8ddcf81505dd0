//! Tests that cross the FFI boundary.
use super::*;

/// ACKs of a steady flow: `rate` bytes/s, `rtt_us`, one 1500-byte packet per ACK.
struct Flow {
    t: u64,
    delivered: u64,
}

impl Flow {
    fn feed(&mut self, core: &mut LeoccCore, rate: u64, rtt_us: u32, n: usize) -> Output {
        let mss = 1500u32;
        let gap = u64::from(mss) * 1_000_000 / rate;
        let per_rtt = (u64::from(rtt_us) / gap) as u32;
        let mut out = Output { pacing_rate: 0, cwnd: 0 };
        for _ in 0..n {
            self.t += gap;
            self.delivered += 1;
            out = core.on_ack(&AckSample {
                now_us: self.t,
                delivered_total: self.delivered,
                interval_us: u64::from(per_rtt) * gap,
                delivered: per_rtt,
                rtt_us,
                acked_sacked: 1,
                prior_in_flight: per_rtt + 1,
                in_flight: per_rtt,
                mss,
                ..AckSample::default()
            });
        }
        out
    }
}

#[test]
fn layouts_match_the_header() {
    // The same numbers are asserted on the C side (core/tests/test_filters.c).
    assert_eq!(std::mem::size_of::<Params>(), 180);
    assert_eq!(std::mem::size_of::<AckSample>(), 72);
    assert_eq!(std::mem::size_of::<ffi::RawOutput>(), 16);
    assert_eq!(std::mem::size_of::<ffi::RawReconfigEvent>(), 24);
    assert_eq!(std::mem::size_of::<ffi::RawView>(), 104);
    assert_eq!(std::mem::size_of::<ffi::RawParamRange>(), 48);
    assert!(LeoccCore::state_size() <= 1088, "state {} bytes", LeoccCore::state_size());
}

#[test]
fn default_params_are_the_documented_ones() {
    let p = Params::default();
    assert_eq!(p.bco, 1280); // 1.25
    assert_eq!(p.dco, 768); // 0.75
    assert_eq!(p.bco_congested, 1075); // 1.05
    assert_eq!(p.cycle_len, 8);
    assert_eq!(p.bw_win_rounds, p.cycle_len + 2);
    assert_eq!((p.kal_q, p.kal_r, p.kal_p0), (4, 4, 25));
    assert_eq!(p.ra_inflight_gain, 512); // 0.5
}

#[test]
fn startup_grows_the_rate_then_cruises() {
    let mut core = LeoccCore::new(Params::default());
    assert_eq!(core.view().mode, Mode::Startup);
    let mut flow = Flow { t: 0, delivered: 0 };
    let first = flow.feed(&mut core, 1_000_000, 40_000, 1);
    let later = flow.feed(&mut core, 6_250_000, 40_000, 200);
    assert!(
        later.pacing_rate > 2 * first.pacing_rate,
        "startup pacing {} -> {}",
        first.pacing_rate,
        later.pacing_rate
    );
    flow.feed(&mut core, 6_250_000, 40_000, 4000);
    let v = core.view();
    assert_eq!(v.mode, Mode::Cruise);
    assert!((5_900_000..=6_600_000).contains(&v.bbw_a), "bBW_a {}", v.bbw_a);
    assert!((40_000..=41_000).contains(&v.brtt_l_us), "bRTT_l {}", v.brtt_l_us);
    assert!(!v.congested);
    assert!(v.rounds > 10);
}

#[test]
fn a_reconfiguration_enters_adaptation_and_cuts_windows() {
    let mut core = LeoccCore::new(Params::default());
    let mut flow = Flow { t: 0, delivered: 0 };
    flow.feed(&mut core, 6_250_000, 40_000, 4000);
    assert_eq!(core.view().mode, Mode::Cruise);
    let t = flow.t;
    assert_eq!(core.on_reconfig(t, 1, CONF_FULL), ReconfigOutcome::Adapt);
    let v = core.view();
    assert_eq!(v.mode, Mode::Reconf);
    assert_eq!(v.last_reconfig_us, t);
    assert_eq!((v.bbw_a, v.bbw_m, v.brtt_latest_us), (0, 0, 0));
    assert_eq!(v.reconfigs, 1);
    // The same event again (the kernel may re-deliver it) changes nothing.
    assert_eq!(core.on_reconfig(t, 1, CONF_FULL), ReconfigOutcome::Ignored);
    // The adaptation ends and cruise resumes on the unchanged link (this open-loop stream
    // ignores the inflight cap, so the capped step ends by its 1 s bound).
    flow.feed(&mut core, 6_250_000, 40_000, 6000);
    let v = core.view();
    assert_eq!(v.mode, Mode::Cruise);
    assert!(v.bbw_a >= 5_900_000, "bBW_a {}", v.bbw_a);
}

#[test]
fn path_rtt_gives_the_non_satellite_rtt() {
    let mut core = LeoccCore::new(Params::default());
    let mut flow = Flow { t: 0, delivered: 0 };
    flow.feed(&mut core, 6_250_000, 40_000, 1000);
    core.on_path(flow.t, 25_000);
    flow.feed(&mut core, 6_250_000, 40_000, 10);
    let v = core.view();
    assert!((14_000..=16_000).contains(&v.rtt_nonsat_us), "non-sat {}", v.rtt_nonsat_us);
    assert!(!v.terrestrial_bottleneck);
    // The end-to-end RTT rises by 30 ms while the terminal-PoP RTT stays: terrestrial queue.
    core.on_path(flow.t, 25_000);
    flow.feed(&mut core, 6_250_000, 70_000, 50);
    let v = core.view();
    assert!(v.terrestrial_bottleneck, "non-sat {}", v.rtt_nonsat_us);
    // The verdict is reported, not acted on (docs/algorithm.md, "Bottleneck shift").
    assert_eq!(core.on_reconfig(flow.t, 7, CONF_FULL), ReconfigOutcome::Adapt);
    assert_eq!(core.view().mode, Mode::Reconf);
    // A weak event is not acted on; one right after the adaptation merges into it.
    assert_eq!(core.on_reconfig(flow.t, 8, 10), ReconfigOutcome::Weak);
    assert_eq!(core.on_reconfig(flow.t, 9, CONF_FULL), ReconfigOutcome::Merged);
}
