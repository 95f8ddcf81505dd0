// SPDX-License-Identifier: GPL-2.0
/*
 * leocc_test_peer.bpf.c — a scriptable TCP peer for the option carrier's tests (never loaded by
 * `leocc kernel load`). Attached (sock_ops) to a test cgroup, it makes the kernel TCP of that
 * cgroup's processes
 *   - write the raw bytes of `peer_cfg.synack` into every SYN-ACK it sends (e.g. a handshake
 *     option offering PRODUCE, so that a sender negotiates with it), and the raw bytes of
 *     `peer_cfg.ack` into every other segment (well-formed or not: wrong length, unknown
 *     version, another ExID), optionally adding one to a 16-bit big-endian field at
 *     `peer_cfg.bump_at` on every segment (a peer claiming a reconfiguration per ACK);
 *   - count what it receives: segments and SYN-ACKs carrying an option with leocc's kind and
 *     ExID (`peer_seen`), so a test can assert that a host never sent it one.
 * The kernel checks every option we store for basic syntax (kind, length), so malformed here
 * means "wrong for leocc", which is what the parser must survive.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include "leocc_option.h"

char _license[] SEC("license") = "GPL";

#define PEER_MAX_OPT 16
#define TCPHDR_SYN 0x02
#define TCPHDR_ACK 0x10

struct peer_cfg {
	__u8 synack[PEER_MAX_OPT];
	__u8 ack[PEER_MAX_OPT];
	__u32 synack_len; /* 0: write nothing in SYN-ACKs */
	__u32 ack_len;    /* 0: write nothing in other segments */
	__u32 bump_at;    /* offset in ack[] of a 16-bit field bumped per segment, 0 = none */
	__u32 pad;
};

/* peer_seen slots. */
enum {
	SEEN_SEGMENTS = 0, /* established segments received with leocc's kind + ExID */
	SEEN_SYNACK = 1,   /* SYN-ACKs received with it */
	SEEN_WRITTEN = 2,  /* segments we wrote cfg.ack into */
	SEEN_MAX = 3,
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct peer_cfg);
} peer_cfg SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, SEEN_MAX);
	__type(key, __u32);
	__type(value, __u64);
} peer_seen SEC(".maps");

/* The running value of the bumped field (one peer, one test at a time). */
__u32 bump_value;

static __always_inline void seen(__u32 slot)
{
	__u64 *v = bpf_map_lookup_elem(&peer_seen, &slot);

	if (v)
		__sync_fetch_and_add(v, 1);
}

static __always_inline bool carries_leocc(struct bpf_sock_ops *skops)
{
	__u8 opt[PEER_MAX_OPT] = { LEOCC_OPT_KIND, 4, LEOCC_OPT_EXID >> 8, LEOCC_OPT_EXID & 0xff };
	long n = bpf_load_hdr_opt(skops, opt, sizeof(opt), 0);

	return n > 0 || n == -28 /* ENOSPC: found, longer than our buffer */;
}

static __always_inline void write_cfg(struct bpf_sock_ops *skops, bool write)
{
	__u32 zero = 0;
	struct peer_cfg *c = bpf_map_lookup_elem(&peer_cfg, &zero);
	__u8 buf[PEER_MAX_OPT];
	bool synack = skops->skb_tcp_flags & TCPHDR_SYN;
	__u32 len;

	if (!c)
		return;
	if (synack && !(skops->skb_tcp_flags & TCPHDR_ACK))
		return; /* our own SYN: nothing */
	len = synack ? c->synack_len : c->ack_len;
	if (!len || len > PEER_MAX_OPT)
		return;
	if (!write) {
		bpf_reserve_hdr_opt(skops, len, 0);
		return;
	}
	__builtin_memcpy(buf, synack ? c->synack : c->ack, PEER_MAX_OPT);
	if (!synack && c->bump_at) {
		__u32 v = ++bump_value; /* racy across CPUs: any change is a new claim */
		__u32 at = c->bump_at & (PEER_MAX_OPT - 1);

		if (at + 1 < PEER_MAX_OPT) {
			buf[at] = v >> 8;
			buf[at + 1] = v;
		}
	}
	if (!bpf_store_hdr_opt(skops, buf, len, 0) && !synack)
		seen(SEEN_WRITTEN);
}

SEC("sockops")
int leocc_test_peer(struct bpf_sock_ops *skops)
{
	__u32 flags = BPF_SOCK_OPS_WRITE_HDR_OPT_CB_FLAG | BPF_SOCK_OPS_PARSE_ALL_HDR_OPT_CB_FLAG;

	switch (skops->op) {
	case BPF_SOCK_OPS_TCP_LISTEN_CB:
	case BPF_SOCK_OPS_TCP_CONNECT_CB:
		bpf_sock_ops_cb_flags_set(skops, skops->bpf_sock_ops_cb_flags | flags);
		break;
	case BPF_SOCK_OPS_ACTIVE_ESTABLISHED_CB:
		if (carries_leocc(skops))
			seen(SEEN_SYNACK);
		bpf_sock_ops_cb_flags_set(skops, skops->bpf_sock_ops_cb_flags | flags);
		break;
	case BPF_SOCK_OPS_PASSIVE_ESTABLISHED_CB:
		bpf_sock_ops_cb_flags_set(skops, skops->bpf_sock_ops_cb_flags | flags);
		break;
	case BPF_SOCK_OPS_HDR_OPT_LEN_CB:
		write_cfg(skops, false);
		break;
	case BPF_SOCK_OPS_WRITE_HDR_OPT_CB:
		write_cfg(skops, true);
		break;
	case BPF_SOCK_OPS_PARSE_HDR_OPT_CB:
		if (carries_leocc(skops))
			seen(SEEN_SEGMENTS);
		break;
	}
	return 1;
}
