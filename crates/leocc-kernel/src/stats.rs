//! `leocc kernel stats`: what LeoCC thinks of each flow. Every flow copies the core's
//! `leocc_view` plus the glue's counters into the pinned HASH map [`STATS_PIN`] (keyed by its
//! addresses) every 10 ms and on every reconfiguration; the entry goes when the flow releases
//! LeoCC. Key and value types come from the skeleton's BTF, so they cannot drift from the C.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::path::Path;

use serde::Serialize;

use crate::signal::STATS_PIN;
use crate::KernelError;

/// One flow's model state and what the glue applied.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct FlowStats {
    /// Local address of the sending socket.
    pub local: SocketAddr,
    /// Remote address.
    pub remote: SocketAddr,
    /// LEOCC_MODE_* of the core.
    pub mode: u32,
    /// The mode by name.
    pub mode_name: &'static str,
    /// Eq. 4: bRTT_latest >= bRTT_h + Delta_RTT.
    pub congested: bool,
    /// Aggressive bandwidth estimate (max filter), bytes/s.
    pub bbw_a: u64,
    /// Moderate bandwidth estimate (Kalman), bytes/s.
    pub bbw_m: u64,
    /// rate_target of eq. 4, bytes/s.
    pub target_rate: u64,
    /// Lower end of the base RTT range, us.
    pub brtt_l_us: u32,
    /// Upper end of the base RTT range, us.
    pub brtt_h_us: u32,
    /// Kalman-filtered latest RTT, us.
    pub brtt_latest_us: u32,
    /// bRTT_latest - terminal-PoP RTT, us (0 if unknown).
    pub rtt_nonsat_us: u32,
    /// Section 4.3 verdict: the bottleneck is terrestrial.
    pub terrestrial_bottleneck: bool,
    /// Phase of the cruise cycle.
    pub cycle_phase: u32,
    /// Judging against its own RTT range next to another flow's standing queue.
    pub competing: bool,
    /// Round trips counted by the core.
    pub rounds: u64,
    /// Time of the last reconfiguration the core accepted or skipped (tcp clock us, 0 none).
    pub core_last_reconfig_us: u64,
    /// Reconfigurations that cut the windows.
    pub core_reconfigs: u64,
    /// Reconfigurations skipped (terrestrial bottleneck).
    pub core_reconfigs_skipped: u64,
    /// Pacing rate applied to the socket, bytes/s.
    pub pacing_rate: u64,
    /// cwnd applied to the socket, packets.
    pub cwnd: u32,
    /// The kernel's smoothed RTT, us.
    pub srtt_us: u32,
    /// ACKs (cong_control calls) handled.
    pub acks: u64,
    /// Reconfiguration events handed to the core.
    pub reconfigs_fed: u64,
    /// Signal sequence number last handled.
    pub signal_seq: u64,
    /// CLOCK_MONOTONIC ns of the last event handed to the core (0 none).
    pub last_reconfig_ns: u64,
    /// Terminal-PoP RTT last handed to the core, us.
    pub term_pop_rtt_us: u32,
    /// "fresh", "stale" or "absent", as seen on the last ACK.
    pub signal: &'static str,
    /// Where the flow's signal comes from: "local" (this host's map) or "remote" (the
    /// peer's TCP option).
    pub signal_source: &'static str,
    /// tcp clock (us) when the last reconfiguration was handed to the core (0 none).
    pub reconfig_fed_us: u64,
    /// Signal options received from the peer on this flow.
    pub remote_options: u64,
    /// tcp clock (us) of the refresh.
    pub updated_us: u64,
    /// tcp clock (us) when the flow got LeoCC.
    pub start_us: u64,
}

/// Name of a LEOCC_MODE_* value.
pub fn mode_name(mode: u32) -> &'static str {
    match mode {
        0 => "startup",
        1 => "drain",
        2 => "cruise",
        3 => "reconf-adapt",
        _ => "unknown",
    }
}

#[cfg_attr(leocc_no_bpf, allow(dead_code))] // used by the stats reader
fn signal_name(state: u32) -> &'static str {
    match state {
        1 => "fresh",
        2 => "stale",
        _ => "absent",
    }
}

/// Every flow in the pinned stats map, sorted by local address.
pub fn read_stats() -> Result<Vec<FlowStats>, KernelError> {
    read_stats_at(Path::new(STATS_PIN))
}

#[cfg(leocc_no_bpf)]
fn read_stats_at(_path: &Path) -> Result<Vec<FlowStats>, KernelError> {
    Err(KernelError::NotBuilt(crate::missing_bpf_reason().unwrap_or("unknown")))
}

#[cfg(not(leocc_no_bpf))]
fn read_stats_at(path: &Path) -> Result<Vec<FlowStats>, KernelError> {
    use crate::skel::types::{leocc_flow_key, leocc_flow_stats};
    use libbpf_rs::{MapCore, MapFlags, MapHandle};

    let err = |reason: String| KernelError::StatsMap {
        path: path.to_path_buf(),
        reason,
    };
    let map = MapHandle::from_pinned_path(path)
        .map_err(|e| err(format!("{e} (is leocc loaded? `leocc kernel load`)")))?;
    let mut flows = Vec::new();
    for key in map.keys() {
        // A flow may close between keys() and lookup(): skip it.
        let Some(value) = map
            .lookup(&key, MapFlags::ANY)
            .map_err(|e| err(format!("lookup: {e}")))?
        else {
            continue;
        };
        let k: leocc_flow_key = decode(&key).ok_or_else(|| err(size_msg("key", key.len())))?;
        let v: leocc_flow_stats =
            decode(&value).ok_or_else(|| err(size_msg("value", value.len())))?;
        flows.push(to_flow_stats(&k, &v));
    }
    flows.sort_by_key(|f| (f.local, f.remote));
    Ok(flows)
}

#[cfg(not(leocc_no_bpf))]
fn size_msg(what: &str, len: usize) -> String {
    format!("{what} of {len} bytes does not match this leocc's layout (pinned by another version? `leocc kernel unload`)")
}

/// Reads a plain-old-data C struct from exactly its size in bytes.
#[cfg(not(leocc_no_bpf))]
fn decode<T: Copy>(bytes: &[u8]) -> Option<T> {
    (bytes.len() == std::mem::size_of::<T>())
        // SAFETY: the skeleton's types are #[repr(C)] integers and arrays of integers, valid
        // for any bit pattern; the length is checked; read_unaligned needs no alignment.
        .then(|| unsafe { std::ptr::read_unaligned(bytes.as_ptr().cast::<T>()) })
}

#[cfg(not(leocc_no_bpf))]
fn to_flow_stats(
    k: &crate::skel::types::leocc_flow_key,
    v: &crate::skel::types::leocc_flow_stats,
) -> FlowStats {
    let view = &v.view;
    FlowStats {
        local: socket_addr(k.family, &k.saddr, k.sport),
        remote: socket_addr(k.family, &k.daddr, k.dport),
        mode: view.mode,
        mode_name: mode_name(view.mode),
        congested: view.congested != 0,
        bbw_a: view.bbw_a,
        bbw_m: view.bbw_m,
        target_rate: view.target_rate,
        brtt_l_us: view.brtt_l,
        brtt_h_us: view.brtt_h,
        brtt_latest_us: view.brtt_latest,
        rtt_nonsat_us: view.rtt_nonsat,
        terrestrial_bottleneck: view.terrestrial_bottleneck != 0,
        cycle_phase: view.cycle_phase,
        competing: view.competing != 0,
        rounds: view.rounds,
        core_last_reconfig_us: view.last_reconfig_us,
        core_reconfigs: view.reconfigs,
        core_reconfigs_skipped: view.reconfigs_skipped,
        pacing_rate: v.pacing_rate,
        cwnd: v.cwnd,
        srtt_us: v.srtt_us,
        acks: v.acks,
        reconfigs_fed: v.reconfigs,
        signal_seq: v.signal_seq,
        last_reconfig_ns: v.last_reconfig_ns,
        term_pop_rtt_us: v.term_pop_rtt_us,
        signal: signal_name(v.signal_state),
        signal_source: if v.signal_source == 1 { "remote" } else { "local" },
        reconfig_fed_us: v.reconfig_fed_us,
        remote_options: v.remote_options,
        updated_us: v.updated_us,
        start_us: v.start_us,
    }
}

/// AF_INET6 (<linux/socket.h>).
#[cfg_attr(leocc_no_bpf, allow(dead_code))] // used by the stats reader
const AF_INET6: u16 = 10;

#[cfg_attr(leocc_no_bpf, allow(dead_code))] // used by the stats reader
fn socket_addr(family: u16, addr: &[u32; 4], port: u16) -> SocketAddr {
    // The words hold network-order bytes as the kernel stored them.
    let bytes: Vec<u8> = addr.iter().flat_map(|w| w.to_ne_bytes()).collect();
    let ip = if family == AF_INET6 {
        // A dual-stack socket's IPv4 peer is an IPv4-mapped IPv6 address (::ffff:10.0.0.1);
        // shown as IPv4, so that one peer reads the same whichever socket family carries it.
        IpAddr::V6(Ipv6Addr::from(<[u8; 16]>::try_from(bytes).expect("16 bytes"))).to_canonical()
    } else {
        IpAddr::V4(Ipv4Addr::new(bytes[0], bytes[1], bytes[2], bytes[3]))
    };
    SocketAddr::new(ip, port)
}

/// Human-readable rate: bytes/s as Mbit/s.
pub fn mbps(bytes_per_s: u64) -> f64 {
    bytes_per_s as f64 * 8.0 / 1e6
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_decode_from_kernel_words() {
        let w = u32::from_ne_bytes([10, 0, 0, 1]);
        assert_eq!(
            socket_addr(2, &[w, 0, 0, 0], 5201),
            "10.0.0.1:5201".parse().unwrap()
        );
        let v6 = Ipv6Addr::LOCALHOST.octets();
        let words = [0, 1, 2, 3].map(|i| u32::from_ne_bytes(v6[i * 4..i * 4 + 4].try_into().unwrap()));
        assert_eq!(socket_addr(AF_INET6, &words, 80), "[::1]:80".parse().unwrap());
        let mapped = "::ffff:10.0.0.1".parse::<Ipv6Addr>().unwrap().octets();
        let words = [0, 1, 2, 3].map(|i| u32::from_ne_bytes(mapped[i * 4..i * 4 + 4].try_into().unwrap()));
        assert_eq!(socket_addr(AF_INET6, &words, 5201), "10.0.0.1:5201".parse().unwrap());
    }

    #[test]
    fn modes_have_names() {
        assert_eq!(mode_name(2), "cruise");
        assert_eq!(mode_name(3), "reconf-adapt");
        assert_eq!(mode_name(99), "unknown");
    }
}
