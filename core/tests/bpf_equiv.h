/* SPDX-License-Identifier: MIT */
/* The command block the BPF equivalence test passes to its syscall program (as the program's
 * context, read and written back by BPF_PROG_TEST_RUN). Shared by bpf_equiv.bpf.c and
 * bpf_equiv.c; include after leocc.h. */
#ifndef LEOCC_TEST_BPF_EQUIV_H
#define LEOCC_TEST_BPF_EQUIV_H
#define EQUIV_OP_INIT 0u
#define EQUIV_OP_ACK 1u
#define EQUIV_OP_RECONFIG 2u
#define EQUIV_OP_PATH 3u

struct equiv_cmd {
	leocc_u32 op;
	leocc_u32 result;     /* out: leocc_on_reconfig's return */
	leocc_u64 now_us;     /* init, path */
	leocc_u32 rtt_us;     /* path */
	leocc_u32 _pad;
	struct leocc_ack_sample ack;
	struct leocc_reconfig_event event;
	struct leocc_output out;  /* out */
	struct leocc_view view;   /* out: after the call */
};
#endif
