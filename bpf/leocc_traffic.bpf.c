// SPDX-License-Identifier: GPL-2.0
/*
 * leocc_traffic.bpf.c — counts what one cgroup's sockets send and receive (`leocc kernel
 * traffic`). The testbed's scavenger mode needs a terminal's *user* traffic: the interface's
 * counters less the experiment's own bytes. An experiment runs in a cgroup of its own with these
 * two programs attached, so its own bytes are counted whatever the protocol (TCP, QUIC, LEOTP)
 * and whatever ports it picks.
 *
 * Lengths are the IP packet's (skb->len at the cgroup hooks, which sit above the link layer); a
 * GSO/GRO packet counts its segments, so a reader can add the link header per segment.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>

char _license[] SEC("license") = "GPL";

/* traffic slots; user space sums them over CPUs. */
enum {
	TX_BYTES = 0,
	TX_PACKETS = 1,
	RX_BYTES = 2,
	RX_PACKETS = 3,
	TRAFFIC_SLOTS = 4,
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, TRAFFIC_SLOTS);
	__type(key, __u32);
	__type(value, __u64);
} traffic SEC(".maps");

static __always_inline void add(__u32 slot, __u64 n)
{
	__u64 *v = bpf_map_lookup_elem(&traffic, &slot);

	if (v)
		*v += n; /* per-CPU: no other writer */
}

static __always_inline void count(struct __sk_buff *skb, __u32 bytes_slot)
{
	__u32 segs = skb->gso_segs;

	add(bytes_slot, skb->len);
	add(bytes_slot + 1, segs ? segs : 1);
}

SEC("cgroup_skb/egress")
int leocc_traffic_tx(struct __sk_buff *skb)
{
	count(skb, TX_BYTES);
	return 1; /* count, never drop */
}

SEC("cgroup_skb/ingress")
int leocc_traffic_rx(struct __sk_buff *skb)
{
	count(skb, RX_BYTES);
	return 1;
}
