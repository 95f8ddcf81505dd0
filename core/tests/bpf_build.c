/* SPDX-License-Identifier: MIT */
/*
 * BPF build test: core/leocc.c compiled as the kernel side will compile it (LEOCC_BPF, every
 * function inlined into one program). Each entry point is reached from a global function so
 * that nothing is optimised away; the object must contain no calls (no libc, no helpers).
 * Built twice: against the minimal tests/bpf_types.h, and with LEOCC_TEST_VMLINUX against the
 * running kernel's vmlinux.h (generated into build/ when bpftool and kernel BTF exist), exactly
 * as bpf/ includes the core.
 */
#define LEOCC_BPF
#ifdef LEOCC_TEST_VMLINUX
#include "vmlinux.h"
#ifndef __always_inline
#define __always_inline inline __attribute__((always_inline))
#endif
#else
#include "bpf_types.h"
#endif
#include "../leocc.c"

/* The state size leocc.h documents, as the BPF target lays it out. */
_Static_assert(sizeof(struct leocc_state) == 1064, "struct leocc_state size changed: update leocc.h");

__attribute__((section("struct_ops/leocc_test"), used)) int leocc_test_ack(
	struct leocc_state *s, const struct leocc_ack_sample *a, struct leocc_output *out,
	const struct leocc_reconfig_event *e, struct leocc_view *v)
{
	struct leocc_params p;

	leocc_default_params(&p);
	if (a->now_us == 0)
		leocc_init(s, &p, a->now_us);
	leocc_on_path(s, a->now_us, a->rtt_us / 2);
	leocc_on_reconfig(s, e);
	leocc_on_ack(s, a, out);
	leocc_view(s, v);
	return (int)out->cwnd;
}

char _license[] __attribute__((section("license"), used)) = "GPL";
