//! Kernel LeoCC's model state over an emulator run, so that its time series carries the same
//! `state` column as the simulator's (mode, eq. 4's verdict, the competing mode, the
//! estimates): where the two engines differ, the time series then shows which branch each
//! took. The BPF glue copies every flow's `leocc_view` into the pinned stats map every 10 ms
//! and on every event (`leocc kernel stats`); a thread reads that map every
//! [`SAMPLE_EVERY`] during the run, keyed by emulation time (= trace time).

use leocc_emu::clock::EmuClock;
use leocc_kernel::FlowStats;
use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

/// How often the stats map is read: half the time series' 100 ms, so that every row has a
/// sample taken within its interval.
pub const SAMPLE_EVERY: Duration = Duration::from_millis(50);

/// A running sampler; [`Sampler::finish`] stops it and hands over what it read.
pub struct Sampler {
    stop: Arc<AtomicBool>,
    handle: JoinHandle<States>,
}

/// What the sampler read: per server port (the flow's iperf3 port), (emulation µs, stats) in
/// time order.
#[derive(Debug, Default)]
pub struct States {
    by_port: HashMap<u16, Vec<(u64, FlowStats)>>,
    /// Reads of the stats map that failed (leocc not loaded, map gone): the run goes on
    /// without the column.
    pub failed_reads: u64,
}

impl Sampler {
    /// Samples the LeoCC flows whose remote end is `receiver` on one of `ports`.
    pub fn start(clock: EmuClock, receiver: Ipv4Addr, ports: Vec<u16>) -> Sampler {
        let stop = Arc::new(AtomicBool::new(false));
        let halt = stop.clone();
        let handle = std::thread::spawn(move || {
            let mut states = States::default();
            while !halt.load(Ordering::Relaxed) {
                match leocc_kernel::read_stats() {
                    Ok(flows) => {
                        let t_us = clock.now_us();
                        for f in flows {
                            if f.remote.ip() == IpAddr::V4(receiver) && ports.contains(&f.remote.port()) {
                                states.push(f.remote.port(), t_us, f);
                            }
                        }
                    }
                    Err(_) => states.failed_reads += 1,
                }
                std::thread::sleep(SAMPLE_EVERY);
            }
            states
        });
        Sampler { stop, handle }
    }

    /// Stops the thread and returns its samples (none if it panicked).
    pub fn finish(self) -> States {
        self.stop.store(true, Ordering::Relaxed);
        self.handle.join().unwrap_or_default()
    }
}

impl States {
    /// Whether no flow was ever read.
    pub fn is_empty(&self) -> bool {
        self.by_port.is_empty()
    }

    /// A state read for `port`, at emulation time `t_us` (µs).
    pub fn push(&mut self, port: u16, t_us: u64, f: FlowStats) {
        self.by_port.entry(port).or_default().push((t_us, f));
    }

    /// The last sample of `port` taken at or before `t_us`.
    pub fn at(&self, port: u16, t_us: u64) -> Option<&FlowStats> {
        let v = self.by_port.get(&port)?;
        let n = v.partition_point(|(t, _)| *t <= t_us);
        n.checked_sub(1).map(|i| &v[i].1)
    }
}

/// The time series' `pacing_mbps` and `state` cells of one sample, `state` with the keys and
/// units of the simulator's LeoCC state (crates/leocc-sim/src/cc/leocc.rs) that the kernel
/// reports, plus its cycle phase.
pub fn cells(f: &FlowStats) -> (String, String) {
    let mbps = |b: u64| b as f64 * 8.0 / 1e6;
    let ms = |us: u32| f64::from(us) / 1e3;
    let state = format!(
        "mode={};congested={};competing={};bbw_a_mbps={:.3};bbw_m_mbps={:.3};brtt_l_ms={:.3};\
         brtt_h_ms={:.3};brtt_latest_ms={:.3};target_mbps={:.3};rtt_nonsat_ms={:.3};\
         terrestrial_bottleneck={};reconfigs_adapted={};reconfigs_skipped={};cycle_phase={}",
        f.mode,
        u8::from(f.congested),
        u8::from(f.competing),
        mbps(f.bbw_a),
        mbps(f.bbw_m),
        ms(f.brtt_l_us),
        ms(f.brtt_h_us),
        ms(f.brtt_latest_us),
        mbps(f.target_rate),
        ms(f.rtt_nonsat_us),
        u8::from(f.terrestrial_bottleneck),
        f.core_reconfigs,
        f.core_reconfigs_skipped,
        f.cycle_phase,
    );
    (format!("{:.3}", mbps(f.pacing_rate)), state)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::SocketAddr;

    fn stats(mode: u32, competing: bool) -> FlowStats {
        let a: SocketAddr = "10.0.0.1:40000".parse().unwrap();
        FlowStats {
            local: a,
            remote: "10.0.0.2:5301".parse().unwrap(),
            mode,
            mode_name: leocc_kernel::stats::mode_name(mode),
            congested: false,
            bbw_a: 12_500_000,
            bbw_m: 10_000_000,
            target_rate: 12_500_000,
            brtt_l_us: 40_000,
            brtt_h_us: 52_500,
            brtt_latest_us: 45_000,
            rtt_nonsat_us: 0,
            terrestrial_bottleneck: false,
            cycle_phase: 3,
            competing,
            rounds: 0,
            core_last_reconfig_us: 0,
            core_reconfigs: 2,
            core_reconfigs_skipped: 0,
            pacing_rate: 12_500_000,
            cwnd: 100,
            srtt_us: 45_000,
            acks: 0,
            reconfigs_fed: 0,
            signal_seq: 0,
            last_reconfig_ns: 0,
            term_pop_rtt_us: 0,
            signal: "fresh",
            signal_source: "local",
            reconfig_fed_us: 0,
            remote_options: 0,
            updated_us: 0,
            start_us: 0,
        }
    }

    #[test]
    fn a_row_gets_the_last_sample_taken_at_or_before_its_time() {
        let mut s = States::default();
        s.push(5301, 1_000_000, stats(0, false));
        s.push(5301, 1_050_000, stats(2, true));
        assert!(s.at(5301, 999_999).is_none(), "nothing read yet");
        assert_eq!(s.at(5301, 1_000_000).unwrap().mode, 0);
        assert_eq!(s.at(5301, 1_049_999).unwrap().mode, 0);
        assert!(s.at(5301, 9_000_000).unwrap().competing);
        assert!(s.at(5302, 9_000_000).is_none(), "another flow");
    }

    #[test]
    fn cells_use_the_simulators_names_and_units() {
        let (pacing, state) = cells(&stats(2, true));
        assert_eq!(pacing, "100.000");
        assert!(state.starts_with("mode=2;congested=0;competing=1;bbw_a_mbps=100.000;bbw_m_mbps=80.000;brtt_l_ms=40.000;brtt_h_ms=52.500;"), "{state}");
        assert!(state.ends_with("reconfigs_adapted=2;reconfigs_skipped=0;cycle_phase=3"), "{state}");
        assert!(!state.contains(','), "a CSV cell: {state}");
    }
}
