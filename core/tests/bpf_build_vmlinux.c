/* SPDX-License-Identifier: MIT */
/*
 * The BPF build test again, against the running kernel's vmlinux.h (generated into build/ by
 * the Makefile when bpftool and kernel BTF exist), exactly as bpf/ includes the core.
 */
#include "vmlinux.h"
#ifndef __always_inline
#define __always_inline inline __attribute__((always_inline))
#endif
#define LEOCC_BPF
#include "../leocc.c"

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
