/* SPDX-License-Identifier: MIT */
/*
 * BPF side of the equivalence test: one BPF_PROG_TYPE_SYSCALL program that runs one core call
 * per invocation on a state kept in an ARRAY map. Loading it runs the kernel verifier over the
 * whole core; bpf_equiv.c then replays a simulated flow through it and compares every output
 * with the host build's.
 */
#include "vmlinux.h"
#define LEOCC_BPF
#include "../leocc.c"
#include "bpf_equiv.h"

#define SEC(name) __attribute__((section(name), used))
#define MAP_UINT(name, val) int (*name)[val]
#define MAP_TYPE(name, val) typeof(val) *name
/* Helper 1 is bpf_map_lookup_elem (include/uapi/linux/bpf.h). */
static void *(*map_lookup)(void *map, const void *key) = (void *)1;

struct {
	MAP_UINT(type, BPF_MAP_TYPE_ARRAY);
	MAP_UINT(max_entries, 1);
	MAP_TYPE(key, __u32);
	MAP_TYPE(value, struct leocc_state);
} states SEC(".maps");

SEC("syscall") int leocc_core_equiv(struct equiv_cmd *c)
{
	__u32 key = 0, op = c->op, result = 0;
	struct leocc_state *s = map_lookup(&states, &key);
	/* Copies: the verifier forbids passing a moved context pointer around. */
	struct leocc_ack_sample ack = c->ack;
	struct leocc_reconfig_event event = c->event;
	struct leocc_output out = {};
	struct leocc_view view;
	struct leocc_params params;

	if (!s)
		return 1;
	if (op == EQUIV_OP_INIT) {
		leocc_default_params(&params);
		leocc_init(s, &params, c->now_us);
	} else if (op == EQUIV_OP_ACK) {
		leocc_on_ack(s, &ack, &out);
	} else if (op == EQUIV_OP_RECONFIG) {
		result = leocc_on_reconfig(s, &event);
	} else {
		leocc_on_path(s, c->now_us, c->rtt_us);
	}
	leocc_view(s, &view);
	c->out = out;
	c->view = view;
	c->result = result;
	return 0;
}

char _license[] SEC("license") = "GPL";
