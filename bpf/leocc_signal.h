/* SPDX-License-Identifier: MIT */
/*
 * leocc_signal.h — the layout of the maps that leocc's BPF congestion control pins under
 * /sys/fs/bpf/leocc/, shared by the BPF program (bpf/leocc.bpf.c), the Rust loader
 * (crates/leocc-kernel), the Rust mirror of struct leocc_signal (crates/leocc-signal, tested
 * against this header compiled for the host, and against the compiled object's BTF in
 * leocc-kernel) and the reconfiguration detector daemon.
 *
 * The detector signal is ONE entry of a BPF_MAP_TYPE_ARRAY (key 0), written by the daemon with
 * an ordinary map update and read by every flow on its ACK path:
 *
 *   reconfig_time_ns  CLOCK_MONOTONIC time (the clock of bpf_ktime_get_ns() and of TCP's
 *                     tcp_clock_ns()) at which the last satellite reconfiguration was detected.
 *   seq               number of reconfigurations detected so far; a flow reacts when the value
 *                     differs from the one it saw last. 0 means "none yet".
 *   probe_time_ns     CLOCK_MONOTONIC time of the daemon's last probe reply. A signal whose probe
 *                     is older than LEOCC_SIGNAL_STALE_NS (or that was never written, all zero)
 *                     is ignored: LeoCC then runs its no-detector behaviour.
 *   term_pop_rtt_us   latest terminal-to-PoP round-trip time in microseconds, 0 when unknown;
 *                     it lets LeoCC tell a satellite bottleneck from a terrestrial one.
 *   flags             bits 0..7: the confidence (0..100) of the last reconfiguration, valid when
 *                     LEOCC_SIGNAL_CONF_GIVEN is set; an entry without that bit (written by an
 *                     older daemon) means full confidence. Other bits reserved, write 0.
 *   check             leocc_signal_check() of the other fields. A map update copies the value
 *                     without a lock, so an ACK may read an entry half-written; the check makes
 *                     such a torn read visible and the flow simply reads again on its next ACK.
 *
 * The per-flow statistics map (/sys/fs/bpf/leocc/stats) is defined in leocc.bpf.c; its key and
 * value types reach Rust through the generated skeleton's BTF types, not through this header.
 */
#ifndef LEOCC_SIGNAL_H
#define LEOCC_SIGNAL_H

#ifndef LEOCC_BPF
#include <linux/types.h>
#endif

/* Where the loader pins everything (a bpffs directory). */
#define LEOCC_PIN_DIR "/sys/fs/bpf/leocc"
/* The struct_ops link: while this pin exists, "leocc" stays registered. */
#define LEOCC_LINK_PIN LEOCC_PIN_DIR "/link"
/* The detector signal: ARRAY, 1 entry of struct leocc_signal, key __u32 0. */
#define LEOCC_SIGNAL_PIN LEOCC_PIN_DIR "/signal"
/* Per-flow model state for `leocc kernel stats`: HASH keyed by the flow's addresses. */
#define LEOCC_STATS_PIN LEOCC_PIN_DIR "/stats"

/* A probe reply older than this (ns) makes the whole signal stale. The detector probes every
 * 10 ms (DESIGN.md), so one second is a hundred missed probes: the daemon is gone or stuck. */
#define LEOCC_SIGNAL_STALE_NS 1000000000ULL

/* Mixed into the check so that an all-zero (never written) entry does not pass as valid. */
#define LEOCC_SIGNAL_MAGIC 0x4c454f4343534947ULL /* "LEOCCSIG" */

/* flags: the confidence of the last reconfiguration is in LEOCC_SIGNAL_CONF_MASK. */
#define LEOCC_SIGNAL_CONF_GIVEN (1u << 8)
#define LEOCC_SIGNAL_CONF_MASK 0xffu
/* The full confidence, the core's LEOCC_CONF_FULL (bpf/leocc.bpf.c checks they agree). */
#define LEOCC_SIGNAL_CONF_FULL 100u

struct leocc_signal {
	__u64 reconfig_time_ns;
	__u64 seq;
	__u64 probe_time_ns;
	__u32 term_pop_rtt_us;
	__u32 flags;
	__u64 check;
};

/* The value `check` must hold for the entry to be believed. */
static inline __u64 leocc_signal_check(const struct leocc_signal *s)
{
	return s->reconfig_time_ns ^ (s->seq << 1) ^ (s->probe_time_ns << 2) ^
	       ((__u64)s->term_pop_rtt_us << 3) ^ ((__u64)s->flags << 35) ^ LEOCC_SIGNAL_MAGIC;
}

/* The confidence (0..LEOCC_SIGNAL_CONF_FULL) the entry gives its last reconfiguration. */
static inline __u32 leocc_signal_confidence(const struct leocc_signal *s)
{
	__u32 c = s->flags & LEOCC_SIGNAL_CONF_MASK;

	if (!(s->flags & LEOCC_SIGNAL_CONF_GIVEN))
		return LEOCC_SIGNAL_CONF_FULL;
	return c > LEOCC_SIGNAL_CONF_FULL ? LEOCC_SIGNAL_CONF_FULL : c;
}

#endif /* LEOCC_SIGNAL_H */
