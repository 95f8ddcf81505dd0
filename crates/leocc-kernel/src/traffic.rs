//! What one command's sockets send and receive, counted in the kernel (`leocc kernel traffic`).
//!
//! The command runs in a cgroup of its own ([`Cgroup`]) with bpf/leocc_traffic.bpf.c's two
//! cgroup_skb programs attached; they add every packet's IP length and segment count to per-CPU
//! counters. This is how the testbed's scavenger mode tells an experiment's own traffic from the
//! terminal owner's on one interface, whatever protocol the experiment speaks.

use std::io;

use crate::cgroup::Cgroup;

/// Bytes (IP packets, link headers excluded) and segments one cgroup sent and received.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Traffic {
    /// Bytes sent.
    pub tx_bytes: u64,
    /// Segments sent (a GSO packet counts its segments).
    pub tx_packets: u64,
    /// Bytes received.
    pub rx_bytes: u64,
    /// Segments received (a GRO packet counts its segments).
    pub rx_packets: u64,
}

/// A cgroup with the traffic counter attached, until dropped.
#[cfg(not(leocc_no_bpf))]
pub struct CgroupTraffic {
    obj: libbpf_rs::Object,
    // Links before the cgroup: dropping them detaches the programs, then the cgroup can go.
    _links: [libbpf_rs::Link; 2],
    cgroup: Cgroup,
}

#[cfg(not(leocc_no_bpf))]
const TRAFFIC_OBJ: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/leocc_traffic.bpf.o"));

#[cfg(not(leocc_no_bpf))]
impl CgroupTraffic {
    /// Makes a fresh cgroup (`leocc-traffic-…` under the cgroup2 root) and attaches the counter.
    /// Needs root.
    pub fn new() -> io::Result<CgroupTraffic> {
        use libbpf_rs::ObjectBuilder;
        use std::os::fd::AsRawFd;
        let e = |what: &str, err: libbpf_rs::Error| io::Error::other(format!("traffic counter: {what}: {err}"));
        let cgroup = Cgroup::new("traffic")?;
        let obj = ObjectBuilder::default()
            .open_memory(TRAFFIC_OBJ)
            .map_err(|x| e("open", x))?
            .load()
            .map_err(|x| e("load", x))?;
        let dir = std::fs::File::open(&cgroup.path)?;
        let attach = |name: &str| -> io::Result<libbpf_rs::Link> {
            obj.progs_mut()
                .find(|p| p.name() == name)
                .ok_or_else(|| io::Error::other(format!("traffic counter: no program {name}")))?
                .attach_cgroup(dir.as_raw_fd())
                .map_err(|x| e("attach", x))
        };
        let links = [attach("leocc_traffic_tx")?, attach("leocc_traffic_rx")?];
        Ok(CgroupTraffic { obj, _links: links, cgroup })
    }

    /// Makes `cmd`'s process (and so its children) count here.
    pub fn join(&self, cmd: &mut std::process::Command) {
        self.cgroup.join(cmd);
    }

    /// The counts so far.
    pub fn read(&self) -> io::Result<Traffic> {
        use libbpf_rs::{MapCore, MapFlags};
        let map = self
            .obj
            .maps()
            .find(|m| m.name() == "traffic")
            .ok_or_else(|| io::Error::other("traffic counter: no traffic map"))?;
        let slot = |i: u32| -> io::Result<u64> {
            let per_cpu = map
                .lookup_percpu(&i.to_ne_bytes(), MapFlags::ANY)
                .map_err(|x| io::Error::other(format!("traffic counter: {x}")))?
                .unwrap_or_default();
            Ok(per_cpu
                .iter()
                .filter_map(|b| b.get(..8))
                .map(|b| u64::from_ne_bytes(b.try_into().expect("8 bytes")))
                .sum())
        };
        Ok(Traffic { tx_bytes: slot(0)?, tx_packets: slot(1)?, rx_bytes: slot(2)?, rx_packets: slot(3)? })
    }
}

/// Without the BPF programs (see [`crate::missing_bpf_reason`]) nothing is counted.
#[cfg(leocc_no_bpf)]
pub struct CgroupTraffic;

#[cfg(leocc_no_bpf)]
impl CgroupTraffic {
    /// Always fails: this build carries no BPF object.
    pub fn new() -> io::Result<CgroupTraffic> {
        Err(io::Error::other(crate::missing_bpf_reason().unwrap_or("no BPF object")))
    }
    /// Unreachable without an instance.
    pub fn join(&self, _cmd: &mut std::process::Command) {}
    /// Unreachable without an instance.
    pub fn read(&self) -> io::Result<Traffic> {
        Ok(Traffic::default())
    }
}

#[cfg(all(test, not(leocc_no_bpf)))]
mod tests {
    use super::*;
    use crate::is_root;
    use crate::lab::{NetnsPair, Side, SERVER_ADDR};

    #[test]
    fn counts_the_cgroups_sockets_and_nothing_else() {
        if !is_root() {
            eprintln!("skipped: needs root");
            return;
        }
        let pair = NetnsPair::new("traffic").expect("namespaces");
        let counter = CgroupTraffic::new().expect("counter");
        // Noise outside the cgroup: must not count.
        let noise = pair.command(Side::Client, "ping").args(["-c", "5", "-i", "0.01", "-q", SERVER_ADDR]).output().expect("ping");
        assert!(noise.status.success());
        assert_eq!(counter.read().unwrap(), Traffic::default(), "traffic outside the cgroup was counted");
        // 200 pings of 1000 bytes of payload inside it: 1028 IP bytes each way.
        let mut ping = pair.command(Side::Client, "ping");
        ping.args(["-c", "200", "-i", "0.002", "-s", "1000", "-q", SERVER_ADDR]);
        counter.join(&mut ping);
        assert!(ping.output().expect("ping").status.success());
        let t = counter.read().unwrap();
        assert_eq!((t.tx_packets, t.tx_bytes), (200, 200 * 1028), "{t:?}");
        assert_eq!((t.rx_packets, t.rx_bytes), (200, 200 * 1028), "{t:?}");
    }
}
