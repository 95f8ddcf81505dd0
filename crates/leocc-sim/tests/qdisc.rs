//! Queue disciplines in the simulator: one Cubic flow over a deep buffer, under drop-tail,
//! drop-front and CoDel.

use std::sync::Arc;

use leocc_sim::{constant_trace, run, Qdisc, QueueLimit, RunResult, Scenario, World};

const MS: u64 = 1000;
const S: u64 = 1_000_000;

/// A constant 20 Mbit/s path, 20 ms each way (40 ms base RTT), 500 ms of queue, 30 s of Cubic.
fn deep(qdisc: Qdisc) -> Scenario {
    let t = Arc::new(constant_trace(20.0, 20 * MS, 10 * S, &[]));
    let mut sc = Scenario::new(t, "constant-20", "cubic", 30 * S);
    sc.queue = QueueLimit::Time(500 * MS);
    sc.qdisc = qdisc;
    sc
}

fn show(r: &RunResult) -> String {
    format!(
        "{}: {:.2} Mbit/s, utilisation {:.3}, qdelay mean/p95 {:.1}/{:.1} ms, RTT p95 {:.1} ms, loss {:.3} %",
        r.qdisc,
        r.throughput_mbps,
        r.utilization,
        r.qdelay_avg_ms,
        r.qdelay_p95_ms,
        r.rtt_p95_ms,
        r.loss_rate * 100.0
    )
}

#[test]
fn codel_keeps_the_queue_short_and_drop_front_keeps_the_throughput() {
    let tail = run(&deep(Qdisc::DropTail)).unwrap();
    let front = run(&deep(Qdisc::DropFront)).unwrap();
    let codel = run(&deep(Qdisc::CoDel)).unwrap();
    for r in [&tail, &front, &codel] {
        eprintln!("{}", show(r));
    }
    assert_eq!((tail.qdisc.as_str(), front.qdisc.as_str(), codel.qdisc.as_str()), (Qdisc::DropTail.name(), Qdisc::DropFront.name(), Qdisc::CoDel.name()));
    // Cubic fills a 500 ms drop-tail buffer: a standing queue of hundreds of ms.
    assert!(tail.qdelay_p95_ms > 200.0, "{}", show(&tail));
    // CoDel holds the queueing delay near its 5 ms target (bursts and the ACK delay aside)...
    assert!(codel.qdelay_p95_ms < tail.qdelay_p95_ms / 5.0 && codel.qdelay_p95_ms < 40.0, "{}", show(&codel));
    // ... without starving the link.
    assert!(codel.utilization > 0.85, "{}", show(&codel));
    // Drop-front drops as many packets as drop-tail, only older ones: the throughput stays.
    assert!(front.throughput_mbps > 0.95 * tail.throughput_mbps, "{} vs {}", show(&front), show(&tail));
    assert!(front.utilization > 0.9, "{}", show(&front));
}

#[test]
fn packets_are_conserved_under_every_discipline() {
    for q in Qdisc::ALL {
        let mut sc = deep(q);
        sc.queue = QueueLimit::Packets(40);
        sc.duration_us = 8 * S;
        sc.flows = leocc_sim::parse_flows("cubic@0-8,bbr@1-6", "", 8 * S).unwrap();
        let mut w = World::new(&sc).unwrap();
        w.run(&mut |_| {});
        for f in 0..2 {
            let (sent, arrived, dropped, in_net) = w.packet_balance(f);
            assert!(dropped > 0, "{q} flow {f}: the scenario must drop packets");
            assert_eq!(w.stats(f).dropped_queue, dropped, "{q} flow {f}: every drop is a queue drop");
            assert_eq!(sent, arrived + dropped + in_net, "{q} flow {f}: sent = delivered + lost + in flight");
        }
    }
}

#[test]
fn the_default_is_drop_tail_and_the_result_names_the_discipline() {
    let t = Arc::new(constant_trace(20.0, 20 * MS, 10 * S, &[]));
    let sc = Scenario::new(t, "constant-20", "cubic", 3 * S);
    assert_eq!(sc.qdisc, Qdisc::DropTail);
    let r = run(&sc).unwrap();
    let v = serde_json::to_value(&r).unwrap();
    assert_eq!(v["qdisc"], "droptail");
    let mut explicit = sc.clone();
    explicit.qdisc = "droptail".parse().unwrap();
    assert_eq!(run(&explicit).unwrap(), r);
}
