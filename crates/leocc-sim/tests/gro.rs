//! The receiving host behind GRO (issue 28): segments one delivery opportunity released reach
//! the receiver in the same instant and get one ACK per coalesced skb, as the kernel's receiver
//! ACKs the super-packets the emulator hands it; so the sender's RTT sample per ACK is the
//! burst's newest segment's, not one per two segments across the burst.

use std::path::Path;
use std::sync::Arc;

use leocc_sim::tcp::GRO_MAX_SEGS;
use leocc_sim::{Scenario, World};
use leocc_trace::Trace;

const S: u64 = 1_000_000;

/// (ACKs the receiver sent, data segments that arrived, the sender's median RTT sample in µs)
/// for one flow of `cc` over the first 10 s of the bundled uplink, 150 ms of buffer.
fn acks(cc: &str, gro: u32) -> Option<(u64, u64, f64)> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../traces/starlink-up-60s.trace");
    let Ok(trace) = Trace::load(&path) else {
        println!("skipping: no bundled uplink at {}", path.display());
        return None;
    };
    let trace = Arc::new(trace);
    let mut sc = Scenario::new(trace.clone(), "starlink-up-60s", cc, 10 * S);
    sc.data_dir = trace.meta.direction.primary();
    sc.queue = leocc_sim::QueueLimit::Time(150_000);
    sc.gro_segs = gro;
    let mut w = World::new(&sc).unwrap();
    w.run(&mut |_| {});
    let s = w.stats(0);
    Some((s.acks_sent, s.arrived, s.rtt.quantile(0.5)))
}

#[test]
fn a_burst_of_segments_gets_one_ack_behind_gro() {
    for cc in ["bbr", "leocc", "cubic"] {
        let (Some((a_gro, n_gro, rtt_gro)), Some((a_seg, n_seg, rtt_seg))) = (acks(cc, GRO_MAX_SEGS), acks(cc, 1)) else { return };
        let (per_gro, per_seg) = (a_gro as f64 / n_gro as f64, a_seg as f64 / n_seg as f64);
        eprintln!("{cc}: ACKs per segment {per_gro:.3} behind GRO, {per_seg:.3} per segment; median RTT sample {:.1} / {:.1} ms", rtt_gro / 1e3, rtt_seg / 1e3);
        // Per segment: every second one (delayed ACKs), and one per segment after a loss until
        // the hole is filled (the trace's 0.2 % random loss).
        assert!(per_seg > 0.5, "{cc}: {per_seg}");
        // Behind GRO: about one per uplink grant, which carries 4-30 of the flow's packets
        // (the kernel: 0.07 ACKs per segment for BBRv1 and LeoCC, 0.22 for Cubic).
        assert!(per_gro < 0.3 && per_gro < per_seg / 2.0, "{cc}: {per_gro}");
    }
}
