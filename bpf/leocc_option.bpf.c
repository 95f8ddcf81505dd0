// SPDX-License-Identifier: GPL-2.0
/*
 * leocc_option.bpf.c — the reconfiguration signal in a TCP option (seed 000 §5.1): a sock_ops
 * program that a satellite-side RECEIVER uses to put its detector's output on its ACKs, and a
 * LeoCC SENDER uses to read it into the flow's LeoCC state. Wire format: leocc_option.h.
 *
 * Included by leocc.bpf.c, so both live in ONE object: the struct_ops congestion control reads
 * the per-flow remote signal from this file's sk_storage map `opt_flow` on every ACK, and the
 * receiver reads the same `signal` map the local path uses. One object means one load, maps
 * shared by construction, and no way for a congestion control and an option parser of two
 * different builds to disagree on a map layout.
 *
 * Per-connection life (each callback enabled per socket with bpf_sock_ops_cb_flags_set):
 *   connect (TCP_CONNECT_CB)      WRITE flag, so the SYN carries our role's capabilities.
 *                                 (Every socket of the cgroup offers them: applications such
 *                                 as iperf3 choose the congestion control after connect(), so
 *                                 a non-leocc socket may get the signal; its CC ignores it.)
 *   listen (TCP_LISTEN_CB)        TCP_SAVE_SYN (the SYN's options are needed again once the
 *                                 connection is established) and the WRITE flag, so that each
 *                                 SYN-ACK passes through us.
 *   SYN-ACK (HDR_OPT_LEN/WRITE)   answer with our capabilities only if the SYN carried a valid
 *                                 option: a stranger's SYN gets nothing.
 *   established (ACTIVE/PASSIVE)  the peer's capabilities from the SYN-ACK / saved SYN decide:
 *                                 PRODUCING (we PRODUCE, peer CONSUMEs) keeps the WRITE flag,
 *                                 CONSUMING (we CONSUME, peer PRODUCEs) sets the parse flag;
 *                                 neither clears every flag: not a byte more on that connection.
 *   ACKs (HDR_OPT_LEN/WRITE)      a producing socket always reserves LEOCC_OPT_SIG_LEN bytes
 *                                 (also for the kernel's MSS computation, so segment sizes stay
 *                                 consistent) and fills them from the local `signal` map when
 *                                 it is fresh; otherwise the kernel pads the space with NOPs.
 *                                 When SACK blocks leave no room the reservation fails and the
 *                                 segment goes without: the sender tolerates missing options.
 *   parse (PARSE_HDR_OPT_CB)      on a consuming socket, for segments with an option the kernel
 *                                 does not know: validate, rate-limit, store in opt_flow.
 *
 * Ordering on the sender (checked on 6.18, counted in LEOCC_CNT_SAME_ACK): a segment carrying
 * our option has a longer header than header prediction expects, so tcp_rcv_established()
 * takes the slow path, where tcp_validate_incoming() ends with bpf_skops_parse_hdr() and only
 * then tcp_ack() runs cong_control. The option is therefore in opt_flow when cong_control runs
 * for the very ACK that carried it.
 *
 * The option is untrusted input. A malformed one (wrong length, unknown version, a kind-253
 * option with another ExID where ours was expected) is ignored and counted. Reconfigurations
 * claimed less than LEOCC_OPT_MIN_EVENT_GAP_NS apart are dropped and counted. Why a hostile
 * receiver cannot make the sender faster: the option carries no rate and no window, only
 * (a) "a reconfiguration happened", which makes the core enter Reconfiguration Adaptation:
 * inflight is capped at 0.5 x bBW_m x bRTT_l and the new rate is measured from delivered
 * data, i.e. from the ACK clock, and (b) the terminal-PoP RTT, which only decides whether a
 * reconfiguration is skipped (terrestrial bottleneck), i.e. whether the flow behaves as if it
 * had no detector. Every pacing rate the core sets is a gain times a delivery-rate estimate
 * measured from ACKs, with or without the option; the option can only choose when the flow is
 * cautious, at most once a second.
 */
#include "leocc_option.h"

/* <linux/tcp.h>, <linux/socket.h>, <linux/errno.h>: vmlinux.h has no macros. */
#define LEOCC_SOL_TCP 6
#define LEOCC_TCP_SAVE_SYN 27
#define LEOCC_ENOMSG 42
#define LEOCC_ENOSPC 28
#define LEOCC_TCPHDR_SYN 0x02
#define LEOCC_TCPHDR_ACK 0x10
#define NSEC_PER_MSEC 1000000ULL
/* Longest TCP header (doff = 15 words) and its fixed part, bytes. */
#define LEOCC_TCP_MAX_HDR 60
#define LEOCC_TCP_MIN_HDR 20
/* Our buffer for a found option: room for a few bytes more than the longest valid one, so a
 * too-long option is seen as such (length != LEOCC_OPT_SIG_LEN) rather than truncated. */
#define LEOCC_OPT_BUF 16
/* Saturation limits of the signal option's fields. */
#define LEOCC_OPT_U16_MAX 0xffffU
#define LEOCC_OPT_U8_MAX 0xffU

/* Connection modes after the handshake (opt_flow.mode). */
#define LEOCC_OPT_PRODUCING LEOCC_CAP_PRODUCE
#define LEOCC_OPT_CONSUMING LEOCC_CAP_CONSUME

/* What a consuming connection knows about the peer's signal, in sk_storage (created when the
 * connection is established). Times are CLOCK_MONOTONIC ns of THIS host. */
struct leocc_opt_flow {
	__u64 established_ns;  /* when the connection was established: older events are history */
	__u64 events;          /* reconfigurations accepted from the peer: the seq fed to the core */
	__u64 event_ns;        /* when the last accepted one happened (arrival minus its age) */
	__u64 last_accept_ns;  /* arrival of the last accepted one (rate limit) */
	__u64 probe_ns;        /* the peer detector's newest probe reply (arrival minus its age) */
	__u64 options;         /* well-formed options received */
	__u32 term_pop_rtt_us; /* the peer's terminal-PoP RTT, 0 unknown */
	__u32 opt_ack;         /* ACK number of the segment that carried the last option */
	__u16 rx_seq;          /* the peer's 16-bit sequence number last seen */
	__u8 rx_seen;          /* rx_seq is valid */
	__u8 mode;             /* LEOCC_OPT_PRODUCING | LEOCC_OPT_CONSUMING */
	__u8 opt_unclaimed;    /* an option was parsed and cong_control has not run since */
	__u8 confidence;       /* the peer's confidence in its last accepted event, 0..100 */
	__u8 pad[2];
};

struct {
	__uint(type, BPF_MAP_TYPE_SK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct leocc_opt_flow);
} opt_flow SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, LEOCC_CNT_MAX);
	__type(key, __u32);
	__type(value, __u64);
} option_counters SEC(".maps");

static __always_inline void opt_count(__u32 slot)
{
	__u64 *v = bpf_map_lookup_elem(&option_counters, &slot);

	if (v)
		*v += 1; /* per-CPU slot: no other writer */
}

static __always_inline __u64 sat_sub(__u64 a, __u64 b)
{
	return a > b ? a - b : 0;
}

/* The peer's capabilities from the handshake option in the SYN (from_syn) or in the segment
 * at hand; 0 when absent or malformed (malformed ones are counted). */
static __always_inline __u8 peer_caps(struct bpf_sock_ops *skops, bool from_syn)
{
	__u8 opt[LEOCC_OPT_BUF] = { LEOCC_OPT_KIND, 4, LEOCC_OPT_EXID >> 8, LEOCC_OPT_EXID & 0xff };
	long n = bpf_load_hdr_opt(skops, opt, sizeof(opt), from_syn ? BPF_LOAD_HDR_OPT_TCP_SYN : 0);

	/* -ENOMSG: none; -ENOENT: no saved SYN (a listener older than the program). */
	if (n < 0 && n != -LEOCC_ENOSPC)
		return 0;
	if (n != LEOCC_OPT_SYN_LEN) {
		opt_count(LEOCC_CNT_BAD_LEN);
		return 0;
	}
	if ((opt[4] >> 4) != LEOCC_OPT_VERSION) {
		opt_count(LEOCC_CNT_BAD_VERSION);
		return 0;
	}
	return opt[4] & (LEOCC_CAP_PRODUCE | LEOCC_CAP_CONSUME);
}

static __always_inline void reserve(struct bpf_sock_ops *skops, __u32 len)
{
	if (bpf_reserve_hdr_opt(skops, len, 0))
		opt_count(LEOCC_CNT_NO_SPACE);
}

static __always_inline void write_handshake(struct bpf_sock_ops *skops, __u8 caps)
{
	__u8 opt[LEOCC_OPT_SYN_LEN] = {
		LEOCC_OPT_KIND, LEOCC_OPT_SYN_LEN, LEOCC_OPT_EXID >> 8, LEOCC_OPT_EXID & 0xff,
		(LEOCC_OPT_VERSION << 4) | caps,
	};

	if (bpf_store_hdr_opt(skops, opt, sizeof(opt), 0))
		opt_count(LEOCC_CNT_NO_SPACE);
	else
		opt_count(LEOCC_CNT_SYN_SENT);
}

/* The local detector's signal as a 12-byte option; false when there is no fresh signal. */
static __always_inline bool build_signal(__u8 *opt, __u64 now_ns)
{
	const struct leocc_signal *s = read_signal();
	__u64 age_ms, rtt, probe_age;

	if (!s || (s->probe_time_ns < now_ns && now_ns - s->probe_time_ns > LEOCC_SIGNAL_STALE_NS))
		return false;
	age_ms = sat_sub(now_ns, s->reconfig_time_ns) / NSEC_PER_MSEC;
	if (age_ms > LEOCC_OPT_U16_MAX)
		age_ms = LEOCC_OPT_U16_MAX;
	rtt = (s->term_pop_rtt_us + LEOCC_OPT_RTT_UNIT_US / 2) / LEOCC_OPT_RTT_UNIT_US;
	if (rtt > LEOCC_OPT_U16_MAX)
		rtt = LEOCC_OPT_U16_MAX;
	if (rtt == 0 && s->term_pop_rtt_us)
		rtt = 1; /* known but tiny: 0 would mean unknown */
	probe_age = sat_sub(now_ns, s->probe_time_ns) / (LEOCC_OPT_PROBE_AGE_UNIT_MS * NSEC_PER_MSEC);
	if (probe_age > LEOCC_OPT_U8_MAX)
		probe_age = LEOCC_OPT_U8_MAX;

	opt[0] = LEOCC_OPT_KIND;
	opt[1] = LEOCC_OPT_SIG_LEN;
	opt[2] = LEOCC_OPT_EXID >> 8;
	opt[3] = LEOCC_OPT_EXID & 0xff;
	opt[4] = (LEOCC_OPT_VERSION << 4) |
		 (s->seq ? LEOCC_SIGF_EVENT |
				   (leocc_opt_conf_grade(leocc_signal_confidence(s)) << LEOCC_SIGF_CONF_SHIFT)
			 : 0);
	opt[5] = s->seq >> 8;
	opt[6] = s->seq;
	opt[7] = age_ms >> 8;
	opt[8] = age_ms;
	opt[9] = rtt >> 8;
	opt[10] = rtt;
	opt[11] = probe_age;
	return true;
}

static __always_inline void write_signal_option(struct bpf_sock_ops *skops)
{
	__u8 opt[LEOCC_OPT_SIG_LEN];

	if (!build_signal(opt, bpf_ktime_get_ns())) {
		opt_count(LEOCC_CNT_NOT_FRESH);
		return;
	}
	if (bpf_store_hdr_opt(skops, opt, sizeof(opt), 0))
		opt_count(LEOCC_CNT_NO_SPACE);
	else
		opt_count(LEOCC_CNT_WRITTEN);
}

/* HDR_OPT_LEN_CB and WRITE_HDR_OPT_CB: what goes into the segment being built. */
static __always_inline void on_header(struct bpf_sock_ops *skops, __u8 role_caps, bool write)
{
	__u8 flags = skops->skb_tcp_flags;
	struct leocc_opt_flow *fl;
	struct bpf_sock *sk;

	if (!(flags & LEOCC_TCPHDR_SYN)) {
		/* Only producing sockets keep the WRITE flag after the handshake. (The MSS
		 * computation also lands here, without a segment: reserve all the same.) */
		if (write)
			write_signal_option(skops);
		else
			reserve(skops, LEOCC_OPT_SIG_LEN);
		return;
	}
	if (flags & LEOCC_TCPHDR_ACK) {
		/* SYN-ACK, built for a request socket: echo only to a SYN that offered. */
		if (!peer_caps(skops, true))
			return;
		if (write)
			write_handshake(skops, role_caps);
		else
			reserve(skops, LEOCC_OPT_SYN_LEN);
		return;
	}
	/* Our SYN (the WRITE flag was set at connect): our capabilities. */
	if (write)
		write_handshake(skops, role_caps);
	else
		reserve(skops, LEOCC_OPT_SYN_LEN);
}

static __always_inline void on_connect(struct bpf_sock_ops *skops)
{
	bpf_sock_ops_cb_flags_set(skops, skops->bpf_sock_ops_cb_flags |
					 BPF_SOCK_OPS_WRITE_HDR_OPT_CB_FLAG);
}

static __always_inline void on_listen(struct bpf_sock_ops *skops)
{
	int one = 1;

	bpf_setsockopt(skops, LEOCC_SOL_TCP, LEOCC_TCP_SAVE_SYN, &one, sizeof(one));
	bpf_sock_ops_cb_flags_set(skops, skops->bpf_sock_ops_cb_flags |
					 BPF_SOCK_OPS_WRITE_HDR_OPT_CB_FLAG);
}

/* The handshake is over: decide what this connection does with the option, for good. */
static __always_inline void on_established(struct bpf_sock_ops *skops, __u8 my_caps, bool passive)
{
	__u32 cb = skops->bpf_sock_ops_cb_flags &
		   ~(BPF_SOCK_OPS_WRITE_HDR_OPT_CB_FLAG | BPF_SOCK_OPS_PARSE_UNKNOWN_HDR_OPT_CB_FLAG);
	struct bpf_sock *sk = skops->sk;
	struct leocc_opt_flow *fl;
	__u8 peer, mode = 0;

	if (!sk)
		return;
	peer = peer_caps(skops, passive);
	if (!peer) {
		opt_count(LEOCC_CNT_PEER_PLAIN);
		bpf_sock_ops_cb_flags_set(skops, cb);
		return;
	}
	opt_count(LEOCC_CNT_PEER_CAPABLE);
	if ((my_caps & LEOCC_CAP_PRODUCE) && (peer & LEOCC_CAP_CONSUME)) {
		mode |= LEOCC_OPT_PRODUCING;
		cb |= BPF_SOCK_OPS_WRITE_HDR_OPT_CB_FLAG;
		opt_count(LEOCC_CNT_PRODUCING);
	}
	if ((my_caps & LEOCC_CAP_CONSUME) && (peer & LEOCC_CAP_PRODUCE)) {
		mode |= LEOCC_OPT_CONSUMING;
		cb |= BPF_SOCK_OPS_PARSE_UNKNOWN_HDR_OPT_CB_FLAG;
		opt_count(LEOCC_CNT_CONSUMING);
	}
	bpf_sock_ops_cb_flags_set(skops, cb);
	if (!(mode & LEOCC_OPT_CONSUMING))
		return; /* producing needs no per-flow state */
	fl = bpf_sk_storage_get(&opt_flow, sk, 0, BPF_SK_STORAGE_GET_F_CREATE);
	if (!fl)
		return; /* no memory: the flow keeps the local signal */
	fl->mode = mode;
	fl->established_ns = bpf_ktime_get_ns();
}

/* The TCP option list of a segment, copied to the stack, and a cursor over it (bpf_loop). */
struct opt_walk {
	__u8 buf[LEOCC_TCP_MAX_HDR - LEOCC_TCP_MIN_HDR];
	__u32 off;   /* next option's offset in buf */
	__u32 len;   /* bytes of options in buf */
	__u32 found; /* a kind-253 option with another ExID was seen */
};

/* One option of the walk: stop at the end, step over NOP, look at kind 253's ExID. */
static long walk_one(__u64 index, void *ctx)
{
	struct opt_walk *w = ctx;
	__u32 off = w->off;
	__u8 kind, len;

	if (off + 1 > w->len || off >= sizeof(w->buf) - 1)
		return 1;
	kind = w->buf[off];
	if (kind == 0)
		return 1;
	if (kind == 1) { /* NOP */
		w->off = off + 1;
		return 0;
	}
	len = w->buf[off + 1];
	if (len < 2 || off + len > w->len)
		return 1;
	if (kind == LEOCC_OPT_KIND && len >= 4 && off + 3 < sizeof(w->buf) &&
	    ((__u32)w->buf[off + 2] << 8 | w->buf[off + 3]) != LEOCC_OPT_EXID) {
		w->found = 1;
		return 1;
	}
	w->off = off + len;
	return 0;
}

/* Whether the segment has a kind-253 option with an ExID other than ours (only asked when
 * ours was not found). The options are copied a word at a time, as far as the header goes. */
static __always_inline bool has_foreign_experiment(struct bpf_sock_ops *skops)
{
	__u8 *data = skops->skb_data, *end = skops->skb_data_end;
	struct opt_walk w = {};
	__u32 hdr_len, i;

	if (data + LEOCC_TCP_MIN_HDR > end)
		return false;
	hdr_len = (data[12] >> 4) * 4;
	if (hdr_len <= LEOCC_TCP_MIN_HDR)
		return false;
	for (i = 0; i < sizeof(w.buf) / 4; i++) {
		__u8 *p = data + LEOCC_TCP_MIN_HDR + 4 * i;

		if (LEOCC_TCP_MIN_HDR + 4 * i + 4 > hdr_len || p + 4 > end)
			break;
		__builtin_memcpy(&w.buf[4 * i], p, 4);
		w.len = 4 * i + 4;
	}
	bpf_loop(sizeof(w.buf), walk_one, &w, 0);
	return w.found;
}

/* A new sequence number from the peer: a reconfiguration, unless it predates the connection
 * or comes too soon after the last one. */
static __always_inline void take_event(struct leocc_opt_flow *fl, __u16 seq, __u64 age_ms,
				       __u32 confidence, __u64 now_ns)
{
	__u64 event_ns = sat_sub(now_ns, age_ms * NSEC_PER_MSEC);

	if (fl->rx_seen && fl->rx_seq == seq)
		return;
	fl->rx_seen = 1;
	fl->rx_seq = seq;
	if (event_ns < fl->established_ns) {
		opt_count(LEOCC_CNT_HISTORY);
		return;
	}
	if (fl->events && now_ns - fl->last_accept_ns < LEOCC_OPT_MIN_EVENT_GAP_NS) {
		opt_count(LEOCC_CNT_RATE_LIMITED);
		return;
	}
	fl->events++;
	fl->event_ns = event_ns;
	fl->confidence = confidence;
	fl->last_accept_ns = now_ns;
	opt_count(LEOCC_CNT_EVENTS);
}

static __always_inline void on_parse(struct bpf_sock_ops *skops)
{
	__u8 opt[LEOCC_OPT_BUF] = { LEOCC_OPT_KIND, 4, LEOCC_OPT_EXID >> 8, LEOCC_OPT_EXID & 0xff };
	__u8 *data = skops->skb_data, *end = skops->skb_data_end;
	struct leocc_opt_flow *fl;
	struct bpf_sock *sk = skops->sk;
	__u64 now_ns, probe_ns, age_ms;
	long n;

	if (!sk)
		return;
	n = bpf_load_hdr_opt(skops, opt, sizeof(opt), 0);
	if (n == -LEOCC_ENOMSG) {
		if (has_foreign_experiment(skops))
			opt_count(LEOCC_CNT_BAD_MAGIC);
		return;
	}
	if (n < 0 && n != -LEOCC_ENOSPC)
		return; /* the kernel could not walk the options: nothing to read */
	if (n != LEOCC_OPT_SIG_LEN) {
		opt_count(LEOCC_CNT_BAD_LEN);
		return;
	}
	if ((opt[4] >> 4) != LEOCC_OPT_VERSION) {
		opt_count(LEOCC_CNT_BAD_VERSION);
		return;
	}
	fl = bpf_sk_storage_get(&opt_flow, sk, 0, 0);
	if (!fl || !(fl->mode & LEOCC_OPT_CONSUMING))
		return;
	opt_count(LEOCC_CNT_RECEIVED);
	now_ns = bpf_ktime_get_ns();
	fl->options++;
	if (data + LEOCC_TCP_MIN_HDR <= end) {
		fl->opt_ack = bpf_ntohl(*(__u32 *)(data + 8)); /* th->ack_seq */
		fl->opt_unclaimed = 1;
	}

	/* A newer probe (the field's resolution is one unit; half a unit of slack absorbs the
	 * ACK's own delay jitter) brings the terminal-PoP RTT. */
	probe_ns = sat_sub(now_ns, (__u64)opt[11] * LEOCC_OPT_PROBE_AGE_UNIT_MS * NSEC_PER_MSEC);
	if (probe_ns > fl->probe_ns + LEOCC_OPT_PROBE_AGE_UNIT_MS * NSEC_PER_MSEC / 2) {
		fl->probe_ns = probe_ns;
		fl->term_pop_rtt_us = ((__u32)opt[9] << 8 | opt[10]) * LEOCC_OPT_RTT_UNIT_US;
	}
	if (opt[4] & LEOCC_SIGF_EVENT) {
		age_ms = (__u64)opt[7] << 8 | opt[8];
		take_event(fl, (__u16)((__u16)opt[5] << 8 | opt[6]), age_ms,
			   leocc_opt_conf_of_grade((opt[4] & LEOCC_SIGF_CONF_MASK) >> LEOCC_SIGF_CONF_SHIFT),
			   now_ns);
	}
}

static __always_inline int leocc_sockops(struct bpf_sock_ops *skops, __u8 role_caps)
{
	switch (skops->op) {
	case BPF_SOCK_OPS_TCP_CONNECT_CB:
		on_connect(skops);
		break;
	case BPF_SOCK_OPS_TCP_LISTEN_CB:
		on_listen(skops);
		break;
	case BPF_SOCK_OPS_ACTIVE_ESTABLISHED_CB:
		on_established(skops, role_caps, false);
		break;
	case BPF_SOCK_OPS_PASSIVE_ESTABLISHED_CB:
		on_established(skops, role_caps, true);
		break;
	case BPF_SOCK_OPS_HDR_OPT_LEN_CB:
		on_header(skops, role_caps, false);
		break;
	case BPF_SOCK_OPS_WRITE_HDR_OPT_CB:
		on_header(skops, role_caps, true);
		break;
	case BPF_SOCK_OPS_PARSE_HDR_OPT_CB:
		on_parse(skops);
		break;
	}
	return 1;
}

/* One program per role, attached to a cgroup by `leocc kernel load --role`. */
SEC("sockops")
int leocc_opt_snd(struct bpf_sock_ops *skops)
{
	return leocc_sockops(skops, LEOCC_CAP_CONSUME);
}

SEC("sockops")
int leocc_opt_rcv(struct bpf_sock_ops *skops)
{
	return leocc_sockops(skops, LEOCC_CAP_PRODUCE);
}

SEC("sockops")
int leocc_opt_both(struct bpf_sock_ops *skops)
{
	return leocc_sockops(skops, LEOCC_CAP_PRODUCE | LEOCC_CAP_CONSUME);
}
