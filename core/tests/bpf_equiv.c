/* SPDX-License-Identifier: MIT */
/*
 * BPF equivalence test, host side: simulates flows with the host build of the core (recording
 * every call and its answer), then replays the same calls through the BPF build (the syscall
 * program of bpf_equiv.bpf.c, pinned at argv[1]) with BPF_PROG_TEST_RUN and requires identical
 * outputs and views. Needs root and a kernel with BPF syscall programs; the Makefile skips it
 * with a message otherwise.
 */
#define _GNU_SOURCE /* syscall() */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <linux/bpf.h>
#include "../leocc.h"
#include "bpf_equiv.h"
#include "link_model.h"

#define SEC_US 1000000ull
#define MBPS(x) ((uint64_t)(x) * 1000000ull / 8)
#define MAX_CALLS 400000

static long sys_bpf(int cmd, union bpf_attr *attr)
{
	return syscall(__NR_bpf, cmd, attr, sizeof(*attr));
}

static int run(int fd, struct equiv_cmd *c)
{
	union bpf_attr attr;

	memset(&attr, 0, sizeof(attr));
	attr.test.prog_fd = (uint32_t)fd;
	attr.test.ctx_in = (uint64_t)(uintptr_t)c;
	attr.test.ctx_size_in = sizeof(*c);
	if (sys_bpf(BPF_PROG_TEST_RUN, &attr) != 0) {
		fprintf(stderr, "bpf_equiv: BPF_PROG_TEST_RUN: %s\n", strerror(errno));
		return -1;
	}
	return (int)attr.test.retval;
}

/* Replays `s`'s recorded calls; returns the number of mismatches. */
static long replay(int fd, const char *name, const struct sim *s)
{
	struct equiv_cmd c;
	long bad = 0;
	size_t i;

	memset(&c, 0, sizeof(c));
	c.op = EQUIV_OP_INIT;
	if (run(fd, &c) != 0)
		return -1;
	for (i = 0; i < s->ncalls; i++) {
		const struct sim_call *k = &s->calls[i];

		memset(&c, 0, sizeof(c));
		c.op = k->op == SIM_CALL_ACK ? EQUIV_OP_ACK :
		       k->op == SIM_CALL_RECONFIG ? EQUIV_OP_RECONFIG : EQUIV_OP_PATH;
		c.ack = k->ack;
		c.event = k->event;
		c.now_us = k->now_us;
		c.rtt_us = k->rtt_us;
		if (run(fd, &c) != 0)
			return -1;
		if ((k->op == SIM_CALL_ACK && memcmp(&c.out, &k->out, sizeof(c.out)) != 0) ||
		    (k->op == SIM_CALL_RECONFIG && c.result != k->result) ||
		    memcmp(&c.view, &k->view, sizeof(c.view)) != 0) {
			if (bad < 5)
				fprintf(stderr,
					"bpf_equiv: %s: call %zu (op %d) differs: pacing %llu/%llu "
					"cwnd %u/%u mode %u/%u bBW_a %llu/%llu bRTT %u..%u/%u..%u\n",
					name, i, k->op, (unsigned long long)c.out.pacing_rate,
					(unsigned long long)k->out.pacing_rate, c.out.cwnd, k->out.cwnd,
					c.view.mode, k->view.mode, (unsigned long long)c.view.bbw_a,
					(unsigned long long)k->view.bbw_a, c.view.brtt_l, c.view.brtt_h,
					k->view.brtt_l, k->view.brtt_h);
			bad++;
		}
	}
	printf("  %-28s %zu calls replayed through BPF, %ld differ\n", name, s->ncalls, bad);
	return bad;
}

static struct sim *scenario(int which)
{
	struct sim *s = malloc(sizeof(*s));
	uint64_t t;
	int i = 0;

	if (!s)
		return NULL;
	sim_init(s, MBPS(50), 40000, 100 + (uint64_t)which);
	s->calls = calloc(MAX_CALLS, sizeof(*s->calls));
	s->max_calls = MAX_CALLS;
	if (!s->calls) {
		free(s);
		return NULL;
	}
	if (which == 0) {
		/* Reconfigurations with capacity steps, 1 % loss, the path probe on. */
		s->loss_ppm = 10000;
		s->path_probe = 1;
		s->queue_on_pop_path = 1;
		sim_add_outage(s, 2 * SEC_US, 80000);
		sim_add_seg(s, 2 * SEC_US, MBPS(100), 40000);
		sim_add_outage(s, 4 * SEC_US, 100000);
		sim_add_seg(s, 4 * SEC_US, MBPS(20), 45000);
		sim_run_until(s, 6 * SEC_US);
	} else {
		/* RTT bands and a terrestrial-looking RTT rise, no detector. */
		s->detector = 0;
		s->path_probe = 1;
		for (t = 500000; t < 5 * SEC_US; t += 500000, i++)
			sim_add_seg(s, t, MBPS(30), i % 2 ? 30000 : 46000);
		sim_run_until(s, 5 * SEC_US);
	}
	return s;
}

int main(int argc, char **argv)
{
	union bpf_attr attr;
	long bad = 0, r;
	int fd, i;

	if (argc != 2) {
		fprintf(stderr, "usage: bpf_equiv /sys/fs/bpf/PINNED_PROG\n");
		return 2;
	}
	memset(&attr, 0, sizeof(attr));
	attr.pathname = (uint64_t)(uintptr_t)argv[1];
	fd = (int)sys_bpf(BPF_OBJ_GET, &attr);
	if (fd < 0) {
		fprintf(stderr, "bpf_equiv: %s: %s\n", argv[1], strerror(errno));
		return 2;
	}
	for (i = 0; i < 2; i++) {
		struct sim *s = scenario(i);

		if (!s) {
			fprintf(stderr, "bpf_equiv: out of memory\n");
			return 2;
		}
		r = replay(fd, i == 0 ? "reconfigs, loss, probe" : "bands, no detector", s);
		free(s->calls);
		free(s);
		if (r < 0)
			return 2;
		bad += r;
	}
	close(fd);
	printf("core BPF equivalence: %ld differences\n", bad);
	return bad ? 1 : 0;
}
