// SPDX-License-Identifier: GPL-2.0
/*
 * leocc.bpf.c — LeoCC as a BPF struct_ops tcp_congestion_ops ("leocc") for the stock kernel.
 *
 * This file is glue: every congestion decision is taken by the LeoCC core (core/leocc.c, the
 * one source of the algorithm, compiled into this object). What the glue does:
 *
 *   ACK path (cong_control, called by tcp_cong_control() for every ACK that advances state):
 *     1. find the flow's core state in the sk_storage map `flow_state`;
 *     2. feed the detector signal (pinned ARRAY `signal`, see leocc_signal.h; or, on a
 *        connection whose peer sends it in a TCP option, the peer's signal that
 *        leocc_option.bpf.c parsed into the sk_storage `opt_flow`): a new reconfiguration
 *        becomes leocc_on_reconfig(), a new terminal-PoP RTT becomes leocc_on_path(); a stale,
 *        absent or torn signal is not fed at all, which is the core's no-detector behaviour;
 *     3. translate the kernel's struct rate_sample and tcp_sock into struct leocc_ack_sample
 *        and call leocc_on_ack();
 *     4. apply struct leocc_output: with cong_control the kernel neither paces nor reduces
 *        cwnd on its own, so we write tp->snd_cwnd and sk->sk_pacing_rate ourselves (the two
 *        writes bpf_tcp_ca_btf_struct_access() permits); pacing is TCP's internal pacing
 *        (SK_PACING_NEEDED, set in init) since these hosts have no sch_fq;
 *     5. every LEOCC_STATS_PERIOD_US, copy leocc_view() into the pinned HASH `stats`, keyed by
 *        the flow's addresses, for `leocc kernel stats`.
 *   init: the core starts from the pinned ARRAY `params` when it is set (`leocc kernel params`,
 *     emulator sweeps), else from leocc_default_params().
 *
 * State split: struct leocc_ca lives in inet_csk_ca() (ICSK_CA_PRIV_SIZE = 104 bytes, free
 * to touch on every ACK) and holds only the glue's bookkeeping; the core's struct leocc_state
 * (1016 bytes) lives in sk_storage (struct leocc_flow, with the flow's `stats` key), created in
 * init and deleted in release.
 * If sk_storage cannot be allocated (memory pressure) the flow keeps the cwnd and pacing it
 * has: a fixed window, never an unbounded one.
 *
 * Times: the core runs on TCP's clock (tp->tcp_mstamp, microseconds of CLOCK_MONOTONIC); the
 * signal carries CLOCK_MONOTONIC nanoseconds, so the two compare directly after a division.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_endian.h>

#define LEOCC_BPF
#include "leocc_signal.h"
#include "../core/leocc.c"

char _license[] SEC("license") = "GPL";

/* Microseconds between two refreshes of a flow's entry in `stats`: often enough for a human
 * or a test polling `leocc kernel stats`, rare enough to stay off the per-ACK cost. */
#define LEOCC_STATS_PERIOD_US 10000ULL
/* Upper bound on flows shown by `leocc kernel stats`; flows beyond it still run LeoCC. */
#define LEOCC_STATS_MAX_FLOWS 4096
#define NSEC_PER_USEC 1000ULL
/* A cwnd of 0 would stall the flow for good; TCP itself never goes below 1. */
#define LEOCC_MIN_CWND_PKTS 1U
/* AF_INET6 from <linux/socket.h>; vmlinux.h has no macros. */
#define LEOCC_AF_INET6 10

/* Glue bookkeeping, kept in inet_csk_ca() (at most ICSK_CA_PRIV_SIZE bytes). */
struct leocc_ca {
	__u64 start_us;         /* tcp clock when the flow got LeoCC: older events are history */
	__u64 signal_seq;       /* reconfiguration sequence number last handled */
	__u64 probe_time_ns;    /* probe time of the terminal-PoP RTT last fed to the core */
	__u64 stats_due_us;     /* next refresh of the flow's `stats` entry */
	__u64 acks;             /* cong_control calls */
	__u64 reconfigs;        /* reconfigurations fed to the core */
	__u64 last_reconfig_ns; /* CLOCK_MONOTONIC time of the last one fed */
	__u64 remote_events;    /* peer events (opt_flow.events) last handled */
	__u64 fed_us;           /* tcp clock when the last reconfiguration was handed to the core */
	__u32 term_pop_rtt_us;  /* last terminal-PoP RTT fed */
	__u32 signal_state;     /* enum leocc_signal_state, as seen on the last ACK */
	__u32 signal_source;    /* enum leocc_signal_source */
	__u32 pad;
};
_Static_assert(sizeof(struct leocc_ca) <= sizeof(((struct inet_connection_sock *)0)->icsk_ca_priv),
	       "leocc_ca must fit in ICSK_CA_PRIV_SIZE");

enum leocc_signal_state {
	LEOCC_SIGNAL_ABSENT = 0, /* never written, or torn on this read */
	LEOCC_SIGNAL_FRESH = 1,
	LEOCC_SIGNAL_STALE = 2,
};

/* Where a flow's detector signal comes from, fixed when the connection is established. */
enum leocc_signal_source {
	LEOCC_SOURCE_LOCAL = 0,  /* this host's `signal` map */
	LEOCC_SOURCE_REMOTE = 1, /* the peer's TCP option (leocc_option.bpf.c): the local map is
				  * ignored, it describes this host's satellite hop, not the peer's */
};

/* Key of `stats`: the flow's addresses, ports in host byte order. */
struct leocc_flow_key {
	__u32 saddr[4]; /* IPv4 in saddr[0], network order */
	__u32 daddr[4];
	__u16 sport;
	__u16 dport;
	__u16 family;
	__u16 pad;
};

/* Value of `stats`: what LeoCC thinks of one flow, refreshed every LEOCC_STATS_PERIOD_US. */
struct leocc_flow_stats {
	struct leocc_view view;
	__u64 updated_us;       /* tcp clock of this refresh */
	__u64 start_us;
	__u64 acks;
	__u64 reconfigs;
	__u64 signal_seq;
	__u64 last_reconfig_ns;
	__u64 pacing_rate;      /* bytes/s, as applied to sk_pacing_rate */
	__u32 cwnd;             /* packets, as applied to snd_cwnd */
	__u32 srtt_us;
	__u32 term_pop_rtt_us;
	__u32 signal_state;
	__u32 signal_source;    /* enum leocc_signal_source */
	__u32 pad;
	__u64 reconfig_fed_us;  /* tcp clock when the last reconfiguration reached the core */
	__u64 remote_options;   /* signal options received on this flow */
};

/* A flow's sk_storage: the core's state, and the `stats` key it is listed under. The key is
 * kept because by release() the kernel has already cleared the socket's local port. */
struct leocc_flow {
	struct leocc_state core;
	struct leocc_flow_key key;
	__u32 listed; /* key is valid and an entry may exist in `stats` */
	__u32 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_SK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct leocc_flow);
} flow_state SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct leocc_signal);
} signal SEC(".maps");

/* The parameters new flows start from (`leocc kernel params`, parameter sweeps in the
 * emulator): when `set`, `p` instead of leocc_default_params(). A flow keeps the parameters it
 * started with. Any value is safe: leocc_init clamps every field into its row of
 * LEOCC_PARAMS (core/leocc.h), whichever tool wrote the map. */
struct leocc_params_entry {
	__u32 set;
	struct leocc_params p;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct leocc_params_entry);
} params SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, LEOCC_STATS_MAX_FLOWS);
	__type(key, struct leocc_flow_key);
	__type(value, struct leocc_flow_stats);
} stats SEC(".maps");

/* Template for a new `stats` entry (a map value too large for the 512-byte BPF stack). */
static const struct leocc_flow_stats zero_stats;

static __always_inline struct tcp_sock *tcp_sk(const struct sock *sk)
{
	return (struct tcp_sock *)sk;
}

static __always_inline struct leocc_ca *leocc_ca(const struct sock *sk)
{
	return (struct leocc_ca *)((struct inet_connection_sock *)sk)->icsk_ca_priv;
}

static __always_inline __u32 packets_in_flight(const struct tcp_sock *tp)
{
	return tp->packets_out - (tp->sacked_out + tp->lost_out) + tp->retrans_out;
}

/* The signal entry if it is whole (check matches) and was ever written, else NULL. */
static __always_inline const struct leocc_signal *read_signal(void)
{
	__u32 zero = 0;
	const struct leocc_signal *s = bpf_map_lookup_elem(&signal, &zero);

	if (!s || s->probe_time_ns == 0 || s->check != leocc_signal_check(s))
		return NULL;
	return s;
}

/* A probe reply within LEOCC_SIGNAL_STALE_NS of now; a reply stamped slightly after the ACK
 * (the daemon runs concurrently) counts as fresh. */
static __always_inline bool signal_is_fresh(const struct leocc_signal *s, __u64 now_us)
{
	__u64 now_ns = now_us * NSEC_PER_USEC;

	return s->probe_time_ns >= now_ns || now_ns - s->probe_time_ns <= LEOCC_SIGNAL_STALE_NS;
}

#include "leocc_option.bpf.c"

_Static_assert(LEOCC_SIGNAL_CONF_FULL == LEOCC_CONF_FULL, "the signal's full confidence is the core's");

/* One reconfiguration to the core, with the detector's confidence in it (the core acts fully
 * on confident events and not at all below params.rcf_min_confidence). */
static __always_inline void feed_reconfig(struct leocc_state *st, struct leocc_ca *ca,
					  __u64 seq, __u64 time_ns, __u32 confidence, __u64 now_us)
{
	__u64 time_us = time_ns / NSEC_PER_USEC;
	struct leocc_reconfig_event ev = {
		.time_us = time_us,
		.seq = seq,
		.confidence = confidence,
	};

	if (time_us < ca->start_us)
		return;
	leocc_on_reconfig(st, &ev);
	ca->reconfigs++;
	ca->last_reconfig_ns = time_ns;
	ca->fed_us = now_us;
	ca->stats_due_us = 0; /* show the reaction at once */
}

/* The peer's signal, as parsed from its options into opt_flow: the same two core calls as the
 * local path, on the same conditions (fresh, each event once, none from before the flow). */
static __always_inline void feed_remote(struct leocc_state *st, struct leocc_ca *ca,
					struct leocc_opt_flow *ofl, __u32 ack, __u64 now_us)
{
	__u64 now_ns = now_us * NSEC_PER_USEC;

	if (ofl->opt_unclaimed) {
		if (ofl->opt_ack == ack)
			opt_count(LEOCC_CNT_SAME_ACK);
		ofl->opt_unclaimed = 0;
	}
	if (!ofl->probe_ns) {
		ca->signal_state = LEOCC_SIGNAL_ABSENT;
		return;
	}
	if (ofl->probe_ns < now_ns && now_ns - ofl->probe_ns > LEOCC_SIGNAL_STALE_NS) {
		ca->signal_state = LEOCC_SIGNAL_STALE;
		return;
	}
	ca->signal_state = LEOCC_SIGNAL_FRESH;
	if (ofl->events != ca->remote_events) {
		ca->remote_events = ofl->events;
		ca->signal_seq = ofl->events;
		feed_reconfig(st, ca, ofl->events, ofl->event_ns, ofl->confidence, now_us);
	}
	if (ofl->term_pop_rtt_us && ofl->probe_ns != ca->probe_time_ns) {
		ca->probe_time_ns = ofl->probe_ns;
		ca->term_pop_rtt_us = ofl->term_pop_rtt_us;
		leocc_on_path(st, now_us, ofl->term_pop_rtt_us);
	}
}

/* Hand a fresh detector signal to the core: each reconfiguration once, each new terminal-PoP
 * RTT once. Reconfigurations from before the flow started are recorded, not replayed. */
static __always_inline void feed_signal(struct leocc_state *st, struct leocc_ca *ca, __u64 now_us)
{
	const struct leocc_signal *s = read_signal();

	if (!s) {
		ca->signal_state = LEOCC_SIGNAL_ABSENT;
		return;
	}
	if (!signal_is_fresh(s, now_us)) {
		ca->signal_state = LEOCC_SIGNAL_STALE;
		return;
	}
	ca->signal_state = LEOCC_SIGNAL_FRESH;

	if (s->seq != ca->signal_seq) {
		ca->signal_seq = s->seq;
		feed_reconfig(st, ca, s->seq, s->reconfig_time_ns, leocc_signal_confidence(s), now_us);
	}
	if (s->term_pop_rtt_us && s->probe_time_ns != ca->probe_time_ns) {
		ca->probe_time_ns = s->probe_time_ns;
		ca->term_pop_rtt_us = s->term_pop_rtt_us;
		leocc_on_path(st, now_us, s->term_pop_rtt_us);
	}
}

/* struct rate_sample + tcp_sock -> the core's view of one ACK. */
static __always_inline void fill_sample(struct leocc_ack_sample *smp, struct sock *sk,
					const struct rate_sample *rs, __u64 now_us)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct inet_connection_sock *icsk = (struct inet_connection_sock *)sk;
	long rtt_us = rs->rtt_us;
	long interval_us = rs->interval_us;
	int delivered = rs->delivered;
	int losses = rs->losses;

	smp->now_us = now_us;
	/* The kernel marks "no sample" with negative values; the core takes 0 for none. */
	smp->delivered = delivered > 0 ? delivered : 0;
	smp->interval_us = interval_us > 0 ? interval_us : 0;
	smp->rtt_us = rtt_us > 0 ? rtt_us : 0;
	smp->acked_sacked = rs->acked_sacked;
	smp->losses = losses > 0 ? losses : 0;
	smp->prior_in_flight = rs->prior_in_flight;
	smp->in_flight = packets_in_flight(tp);
	smp->app_limited = rs->is_app_limited;
	smp->mss = tp->mss_cache;
	smp->ca_state = BPF_CORE_READ_BITFIELD(icsk, icsk_ca_state);
	smp->delivered_total = tp->delivered;
	smp->lost_total = tp->lost;
}

/* Write the core's decision into the socket, within the limits the socket sets. */
static __always_inline void apply_output(struct sock *sk, const struct leocc_output *out)
{
	struct tcp_sock *tp = tcp_sk(sk);
	__u32 cwnd = out->cwnd;
	__u64 rate = out->pacing_rate;

	if (cwnd < LEOCC_MIN_CWND_PKTS)
		cwnd = LEOCC_MIN_CWND_PKTS;
	if (cwnd > tp->snd_cwnd_clamp)
		cwnd = tp->snd_cwnd_clamp;
	tp->snd_cwnd = cwnd;

	/* 0 means the core has no rate yet: keep the current one. */
	if (rate) {
		if (rate > sk->sk_max_pacing_rate)
			rate = sk->sk_max_pacing_rate;
		sk->sk_pacing_rate = rate;
	}
}

static __always_inline void flow_key(struct leocc_flow_key *key, const struct sock *sk)
{
	const struct sock_common *c = &sk->__sk_common;

	__builtin_memset(key, 0, sizeof(*key));
	key->family = c->skc_family;
	key->sport = c->skc_num;
	key->dport = bpf_ntohs(c->skc_dport);
	if (key->family == LEOCC_AF_INET6) {
		key->saddr[0] = c->skc_v6_rcv_saddr.in6_u.u6_addr32[0];
		key->saddr[1] = c->skc_v6_rcv_saddr.in6_u.u6_addr32[1];
		key->saddr[2] = c->skc_v6_rcv_saddr.in6_u.u6_addr32[2];
		key->saddr[3] = c->skc_v6_rcv_saddr.in6_u.u6_addr32[3];
		key->daddr[0] = c->skc_v6_daddr.in6_u.u6_addr32[0];
		key->daddr[1] = c->skc_v6_daddr.in6_u.u6_addr32[1];
		key->daddr[2] = c->skc_v6_daddr.in6_u.u6_addr32[2];
		key->daddr[3] = c->skc_v6_daddr.in6_u.u6_addr32[3];
	} else {
		key->saddr[0] = c->skc_rcv_saddr;
		key->daddr[0] = c->skc_daddr;
	}
}

/* Copy the model's view into the flow's `stats` entry when it is due. */
static __always_inline void publish_stats(struct sock *sk, struct leocc_flow *fl,
					  struct leocc_ca *ca, __u64 now_us)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct leocc_opt_flow *ofl;
	struct leocc_flow_stats *e;

	if (now_us < ca->stats_due_us)
		return;
	ca->stats_due_us = now_us + LEOCC_STATS_PERIOD_US;

	if (!fl->listed) {
		flow_key(&fl->key, sk);
		fl->listed = 1;
	}
	e = bpf_map_lookup_elem(&stats, &fl->key);
	if (!e) {
		bpf_map_update_elem(&stats, &fl->key, &zero_stats, BPF_NOEXIST);
		e = bpf_map_lookup_elem(&stats, &fl->key);
		if (!e) /* table full: the flow runs on, unlisted */
			return;
	}
	leocc_view(&fl->core, &e->view);
	e->updated_us = now_us;
	e->start_us = ca->start_us;
	e->acks = ca->acks;
	e->reconfigs = ca->reconfigs;
	e->signal_seq = ca->signal_seq;
	e->last_reconfig_ns = ca->last_reconfig_ns;
	e->pacing_rate = sk->sk_pacing_rate;
	e->cwnd = tp->snd_cwnd;
	e->srtt_us = tp->srtt_us >> 3;
	e->term_pop_rtt_us = ca->term_pop_rtt_us;
	e->signal_state = ca->signal_state;
	e->signal_source = ca->signal_source;
	e->reconfig_fed_us = ca->fed_us;
	ofl = bpf_sk_storage_get(&opt_flow, sk, 0, 0);
	e->remote_options = ofl ? ofl->options : 0;
}

SEC("struct_ops")
void BPF_PROG(leocc_cc_init, struct sock *sk)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct leocc_ca *ca = leocc_ca(sk);
	const struct leocc_signal *s;
	const struct leocc_params_entry *pe;
	struct leocc_params p;
	struct leocc_flow *fl;
	__u32 zero = 0;
	__u64 now_us = tp->tcp_mstamp;

	__builtin_memset(ca, 0, sizeof(*ca));
	ca->start_us = now_us;
	/* A reconfiguration that happened before the flow is not news to it. */
	s = read_signal();
	if (s)
		ca->signal_seq = s->seq;

	/* TCP's internal pacing, unless sch_fq already paces this socket (SK_PACING_FQ). */
	if (sk->sk_pacing_status == SK_PACING_NONE)
		sk->sk_pacing_status = SK_PACING_NEEDED;

	fl = bpf_sk_storage_get(&flow_state, sk, 0, BPF_SK_STORAGE_GET_F_CREATE);
	if (!fl)
		return;
	/* init runs again when a socket re-selects leocc: drop the old listing first. */
	if (fl->listed)
		bpf_map_delete_elem(&stats, &fl->key);
	fl->listed = 0;
	pe = bpf_map_lookup_elem(&params, &zero);
	if (pe && pe->set)
		__builtin_memcpy(&p, &pe->p, sizeof(p));
	else
		leocc_default_params(&p);
	leocc_init(&fl->core, &p, now_us);
}

SEC("struct_ops")
void BPF_PROG(leocc_cong_control, struct sock *sk, __u32 ack, int flag,
	      const struct rate_sample *rs)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct leocc_ca *ca = leocc_ca(sk);
	struct leocc_ack_sample smp;
	struct leocc_output out;
	struct leocc_opt_flow *ofl;
	struct leocc_flow *fl;
	__u64 now_us = tp->tcp_mstamp;

	fl = bpf_sk_storage_get(&flow_state, sk, 0, 0);
	if (!fl)
		return;
	ca->acks++;
	ofl = bpf_sk_storage_get(&opt_flow, sk, 0, 0);
	if (ofl && (ofl->mode & LEOCC_OPT_CONSUMING)) {
		ca->signal_source = LEOCC_SOURCE_REMOTE;
		feed_remote(&fl->core, ca, ofl, ack, now_us);
	} else {
		feed_signal(&fl->core, ca, now_us);
	}

	__builtin_memset(&smp, 0, sizeof(smp));
	__builtin_memset(&out, 0, sizeof(out));
	fill_sample(&smp, sk, rs, now_us);
	leocc_on_ack(&fl->core, &smp, &out);
	apply_output(sk, &out);
	publish_stats(sk, fl, ca, now_us);
}

/* Loss does not set the window: the next ACK's leocc_on_ack() does (it sees ca_state and
 * losses). Keeping ssthresh as it is (infinite from the start) stops the kernel's end of
 * recovery from snapping cwnd to a Reno-style ssthresh. */
SEC("struct_ops")
__u32 BPF_PROG(leocc_ssthresh, struct sock *sk)
{
	return tcp_sk(sk)->snd_ssthresh;
}

/* Nothing to undo: LeoCC never reduced cwnd through ssthresh. */
SEC("struct_ops")
__u32 BPF_PROG(leocc_undo_cwnd, struct sock *sk)
{
	return tcp_sk(sk)->snd_cwnd;
}

SEC("struct_ops")
void BPF_PROG(leocc_cc_release, struct sock *sk)
{
	struct leocc_flow *fl = bpf_sk_storage_get(&flow_state, sk, 0, 0);

	if (!fl)
		return;
	if (fl->listed)
		bpf_map_delete_elem(&stats, &fl->key);
	bpf_sk_storage_delete(&flow_state, sk);
}

SEC(".struct_ops.link")
struct tcp_congestion_ops leocc = {
	.init = (void *)leocc_cc_init,
	.release = (void *)leocc_cc_release,
	.cong_control = (void *)leocc_cong_control,
	.ssthresh = (void *)leocc_ssthresh,
	.undo_cwnd = (void *)leocc_undo_cwnd,
	.name = "leocc",
};
