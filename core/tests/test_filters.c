/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of the core's filters and event handling. This file includes leocc.c itself so
 * that it can reach the internal filters; the public functions it defines are the ones the
 * scenario tests link against.
 */
#include "../leocc.c"
#include "check.h"
#include <string.h>

void test_kalman(void)
{
	struct leocc_params p;
	struct leocc_kalman k = {0};
	int i;

	leocc_default_params(&p);
	kal_update(&k, 1000, &p);
	CHECK(k.valid && k.x == 1000, "first measurement adopted, got %llu", (unsigned long long)k.x);
	/* A step to 2000 is followed within 5 measurements to 2 % (steady gain 0.62). */
	for (i = 0; i < 5; i++)
		kal_update(&k, 2000, &p);
	CHECK(k.x >= 1960 && k.x <= 2000, "step tracked, got %llu", (unsigned long long)k.x);
	/* Steady-state gain: with Q = R = 4 the posterior covariance converges to
	 * (-4 + sqrt(80)) / 2 = 2.47, gain 0.618. */
	for (i = 0; i < 50; i++)
		kal_update(&k, 2000, &p);
	CHECK(k.p >= 2 * KAL_P_SCALE && k.p <= 3 * KAL_P_SCALE, "covariance %u/256", k.p);
	kal_update(&k, 3000, &p);
	CHECK(k.x >= 2590 && k.x <= 2650, "one update moves ~62 %%, got %llu",
	      (unsigned long long)k.x);
	/* Symmetric noise around a mean stays around the mean and inside the noise. */
	kal_seed(&k, 1000, p.kal_p0);
	for (i = 0; i < 100; i++)
		kal_update(&k, i % 2 ? 900 : 1100, &p);
	CHECK(k.x >= 900 && k.x <= 1100, "noise filtered, got %llu", (unsigned long long)k.x);
	/* Downward steps never underflow. */
	kal_seed(&k, 5, p.kal_p0);
	kal_update(&k, 0, &p);
	CHECK(k.x <= 5, "no underflow, got %llu", (unsigned long long)k.x);
}

void test_highest_bit(void)
{
	leocc_u32 i;

	for (i = 0; i < 64; i++) {
		CHECK(highest_bit(1ull << i) == i, "2^%u -> %u", i, highest_bit(1ull << i));
		CHECK(highest_bit((1ull << i) | 1) == i, "2^%u + 1 -> %u", i,
		      highest_bit((1ull << i) | 1));
		CHECK(highest_bit(~0ull >> (63 - i)) == i, "all ones to %u", i);
	}
}

void test_maxfilt_expiry(void)
{
	struct leocc_maxfilt f;
	const leocc_u32 win = 10;
	leocc_u32 r;

	maxfilt_reset(&f, 0, 0);
	maxfilt_update(&f, win, 0, 100);
	for (r = 1; r <= win; r++) {
		maxfilt_update(&f, win, r, 50 + r);
		CHECK(maxfilt_get(&f) == 100, "round %u: max held, got %llu", r,
		      (unsigned long long)maxfilt_get(&f));
	}
	/* One round past the window the old max is gone and the best later sample rules. */
	maxfilt_update(&f, win, win + 1, 40);
	CHECK(maxfilt_get(&f) < 100 && maxfilt_get(&f) >= 50,
	      "expired after %u rounds, got %llu", win, (unsigned long long)maxfilt_get(&f));
	/* After a long gap a lone sample is the max. */
	maxfilt_update(&f, win, 100, 7);
	CHECK(maxfilt_get(&f) == 7, "gap resets, got %llu", (unsigned long long)maxfilt_get(&f));
	/* A larger sample takes over at once. */
	maxfilt_update(&f, win, 101, 70);
	CHECK(maxfilt_get(&f) == 70, "new max, got %llu", (unsigned long long)maxfilt_get(&f));
}

/* Deterministic pseudo-random jitter in [0, span). */
static leocc_u32 jitter(leocc_u32 *seed, leocc_u32 span)
{
	*seed = *seed * 1103515245u + 12345u;
	return (*seed >> 8) % span;
}

void test_mpf_bands(void)
{
	struct leocc_params p;
	struct leocc_mpf m;
	leocc_u32 lo = 0, hi = 0, floor = 0, seed = 7, i, rtt;

	leocc_default_params(&p);
	mpf_reset(&m, 0);
	/* Two bands (40 ms: 65 %, 52 ms: 30 %) with 0.8 ms of jitter, 2 % low outliers at 31 ms
	 * and 3 % spikes spread over 60..100 ms. The middle-pass filter must return the outer
	 * edges of the two bands and ignore the rest. */
	for (i = 0; i < 2000; i++) {
		leocc_u32 k = i % 100;

		if (k < 65)
			rtt = 40000 + jitter(&seed, 800);
		else if (k < 95)
			rtt = 52000 + jitter(&seed, 800);
		else if (k < 97)
			rtt = 31000 + jitter(&seed, 200);
		else
			rtt = 60000 + jitter(&seed, 40000);
		mpf_add(&m, rtt, p.mpf_bin_us);
	}
	CHECK(mpf_range(&m, &p, &lo, &hi, &floor), "range available");
	CHECK(lo >= 39000 && lo <= 40100, "bRTT_l at the low band, got %u", lo);
	CHECK(hi >= 52800 && hi <= 54000, "bRTT_h at the high band's top, got %u", hi);
	/* A sample far below the first one shifts the histogram without losing the bands. */
	mpf_add(&m, 10000, p.mpf_bin_us);
	CHECK(mpf_range(&m, &p, &lo, &hi, &floor), "range after shift");
	CHECK(lo >= 39000 && lo <= 40100 && hi >= 52800 && hi <= 54000,
	      "bands kept after a low outlier: %u..%u", lo, hi);
}

void test_mpf_expiry(void)
{
	struct leocc_params p;
	struct leocc_mpf m;
	leocc_u32 lo = 0, hi = 0, floor = 0, i;
	leocc_u64 t = 0;

	leocc_default_params(&p);
	mpf_reset(&m, 0);
	for (i = 0; i < 200; i++)
		mpf_add(&m, 40000, p.mpf_bin_us);
	/* W_RT later the 40 ms band is forgotten and a 60 ms path is the whole range. */
	for (t = 0; t <= p.rtt_win_us + p.rtt_win_us / 2; t += 100000) {
		mpf_expire(&m, t, p.rtt_win_us);
		for (i = 0; i < 20; i++)
			mpf_add(&m, 60000, p.mpf_bin_us);
	}
	CHECK(mpf_range(&m, &p, &lo, &hi, &floor), "range available");
	CHECK(lo >= 59000 && lo <= 60000 && hi <= 61000, "old band expired: %u..%u", lo, hi);
	/* A gap longer than W_RT empties the filter. */
	mpf_expire(&m, t + p.rtt_win_us, p.rtt_win_us);
	CHECK(!mpf_range(&m, &p, &lo, &hi, &floor), "empty after a long gap");
}

/* Feed `n` ACKs of a steady flow at `rate` bytes/s and `rtt` us, starting at *t. */
static void feed(struct leocc_state *s, leocc_u64 *t, leocc_u64 *delivered, leocc_u64 rate,
		 leocc_u32 rtt, int n)
{
	struct leocc_ack_sample a = {0};
	struct leocc_output out;
	const leocc_u32 mss = 1500;
	leocc_u64 gap = (leocc_u64)mss * 1000000 / rate;
	leocc_u32 per_rtt = (leocc_u32)(rtt / gap);
	int i;

	for (i = 0; i < n; i++) {
		*t += gap;
		++*delivered;
		a.now_us = *t;
		a.delivered_total = *delivered;
		a.delivered = per_rtt;
		a.interval_us = (leocc_u64)per_rtt * gap;
		a.rtt_us = rtt;
		a.acked_sacked = 1;
		a.prior_in_flight = per_rtt + 1;
		a.in_flight = per_rtt;
		a.mss = mss;
		leocc_on_ack(s, &a, &out);
	}
}

void test_window_cut(void)
{
	struct leocc_params p;
	struct leocc_state s;
	struct leocc_view v;
	struct leocc_reconfig_event e = {0, 0, LEOCC_CONF_FULL, 0};
	leocc_u64 t = 0, d = 0;

	leocc_default_params(&p);
	leocc_init(&s, &p, 0);
	feed(&s, &t, &d, 5000000, 40000, 3000); /* 0.9 s at 40 Mbit/s */
	leocc_view(&s, &v);
	CHECK(v.bbw_a >= 4500000 && v.bbw_a <= 5500000, "bBW_a learned, got %llu",
	      (unsigned long long)v.bbw_a);
	CHECK(v.brtt_l >= 39000 && v.brtt_l <= 40000, "bRTT_l learned, got %u", v.brtt_l);
	CHECK(v.mode != LEOCC_MODE_STARTUP, "left Startup, mode %u", v.mode);
	e.time_us = t;
	e.seq = 1;
	CHECK(leocc_on_reconfig(&s, &e) == LEOCC_RCF_ADAPT, "event accepted");
	leocc_view(&s, &v);
	CHECK(v.mode == LEOCC_MODE_RECONF, "Reconfiguration Adaptation, mode %u", v.mode);
	CHECK(v.bbw_a == 0 && v.bbw_m == 0 && v.brtt_latest == 0, "windows cut: %llu %llu %u",
	      (unsigned long long)v.bbw_a, (unsigned long long)v.bbw_m, v.brtt_latest);
	CHECK(v.last_reconfig_us == t, "event time kept");
	/* ACKs of packets sent before the event (RTT spans it) are dropped from every window. */
	feed(&s, &t, &d, 5000000, 40000, 50); /* 15 ms < RTT */
	leocc_view(&s, &v);
	CHECK(v.bbw_a == 0 && v.brtt_latest == 0, "stale samples dropped: bw %llu rtt %u",
	      (unsigned long long)v.bbw_a, v.brtt_latest);
	CHECK(s.mpf.half[0].total + s.mpf.half[1].total == 0, "MPF got no stale sample");
	/* Fresh samples enter. */
	feed(&s, &t, &d, 5000000, 40000, 200);
	leocc_view(&s, &v);
	CHECK(v.brtt_latest >= 39000 && v.brtt_latest <= 41000, "fresh RTT in, got %u",
	      v.brtt_latest);
}

void test_event_dedup(void)
{
	struct leocc_params p;
	struct leocc_state s;
	struct leocc_reconfig_event e = {0, 0, LEOCC_CONF_FULL, 0};
	leocc_u64 t = 0, d = 0;

	leocc_default_params(&p);
	leocc_init(&s, &p, 0);
	feed(&s, &t, &d, 5000000, 40000, 3000);
	e.time_us = t - 1000;
	e.seq = 5;
	CHECK(leocc_on_reconfig(&s, &e) == LEOCC_RCF_ADAPT, "first event accepted");
	CHECK(leocc_on_reconfig(&s, &e) == LEOCC_RCF_IGNORED, "same seq ignored");
	e.seq = 4;
	CHECK(leocc_on_reconfig(&s, &e) == LEOCC_RCF_IGNORED, "older seq ignored");
	e.seq = 0;
	CHECK(leocc_on_reconfig(&s, &e) == LEOCC_RCF_IGNORED, "seq 0 ignored");
	feed(&s, &t, &d, 5000000, 40000, 40000); /* 12 s later: the adaptation budget refilled */
	e.seq = 6;
	e.time_us = t - p.rcf_max_age_us - 1;
	CHECK(leocc_on_reconfig(&s, &e) == LEOCC_RCF_IGNORED, "stale event ignored");
	CHECK(s.reconfigs == 1, "one reconfiguration counted, got %llu",
	      (unsigned long long)s.reconfigs);
	/* A detector clock slightly ahead is clamped, not a cut in the future. */
	e.seq = 7;
	e.time_us = t + 5000;
	CHECK(leocc_on_reconfig(&s, &e) == LEOCC_RCF_ADAPT, "future event accepted");
	CHECK(s.window_start_us == t, "cut clamped to now");
}

void test_reconfig_in_startup(void)
{
	struct leocc_params p;
	struct leocc_state s;
	struct leocc_reconfig_event e = {0, 0, LEOCC_CONF_FULL, 0};
	struct leocc_view v;
	leocc_u64 t = 0, d = 0, bw;

	leocc_default_params(&p);
	leocc_init(&s, &p, 0);
	feed(&s, &t, &d, 2000000, 40000, 30); /* a few ACKs: still in Startup */
	leocc_view(&s, &v);
	CHECK(v.mode == LEOCC_MODE_STARTUP && v.bbw_a > 0, "startup with an estimate, mode %u",
	      v.mode);
	bw = v.bbw_a;
	e.time_us = t;
	e.seq = 1;
	CHECK(leocc_on_reconfig(&s, &e) == LEOCC_RCF_CUT_ONLY, "startup: windows cut only");
	leocc_view(&s, &v);
	/* Still searching, from the old estimate (kept as a short-lived seed), not from zero. */
	CHECK(v.mode == LEOCC_MODE_STARTUP && v.bbw_a == bw && v.bbw_m == 0 && v.brtt_latest == 0,
	      "mode %u bBW_a %llu (was %llu) bBW_m %llu", v.mode, (unsigned long long)v.bbw_a,
	      (unsigned long long)bw, (unsigned long long)v.bbw_m);
	CHECK(v.reconfigs == 1, "counted");
}

void test_params_sanitized(void)
{
	struct leocc_params p;
	struct leocc_state s;
	leocc_u64 t = 0, d = 0;

	leocc_default_params(&p);
	p.cycle_len = 0;
	p.mpf_bin_us = 0;
	p.bw_win_rounds = 0;
	p.kal_q = p.kal_r = 0;
	p.min_cwnd = 0;
	p.default_rtt_us = 0;
	leocc_init(&s, &p, 0);
	feed(&s, &t, &d, 5000000, 40000, 3000); /* must not divide by zero or trap */
	CHECK(s.p.cycle_len >= 4 && s.p.mpf_bin_us >= 1 && s.cwnd >= 1, "repaired");
}

void test_state_size(void)
{
	CHECK(leocc_state_size() == sizeof(struct leocc_state), "size function");
	/* BPF sk_storage holds it comfortably; keep it near 1 KiB. */
	CHECK(sizeof(struct leocc_state) <= 1088, "state is %zu bytes", sizeof(struct leocc_state));
	CHECK(sizeof(struct leocc_state) == 1064, "state is %zu bytes, leocc.h says 1064",
	      sizeof(struct leocc_state));
	CHECK(sizeof(struct leocc_state) % 8 == 0, "8-byte multiple");
	/* The FFI layouts crates/leocc-core-sys mirrors (asserted there with the same numbers). */
	CHECK(sizeof(struct leocc_params) == 180, "params %zu", sizeof(struct leocc_params));
	CHECK(sizeof(struct leocc_ack_sample) == 72, "sample %zu", sizeof(struct leocc_ack_sample));
	CHECK(sizeof(struct leocc_output) == 16, "output %zu", sizeof(struct leocc_output));
	CHECK(sizeof(struct leocc_reconfig_event) == 24, "event %zu",
	      sizeof(struct leocc_reconfig_event));
	CHECK(sizeof(struct leocc_view) == 104, "view %zu", sizeof(struct leocc_view));
	CHECK(sizeof(struct leocc_param_range) == 48, "param row %zu",
	      sizeof(struct leocc_param_range));
}

/* Malformed or hostile inputs (random samples, clocks going backwards, zero MSS, absurd
 * counters) must never trap, divide by zero or break the invariants (run under ASan/UBSan). */
void test_garbage_inputs(void)
{
	struct leocc_params p;
	struct leocc_state s;
	struct leocc_ack_sample a;
	struct leocc_output out;
	struct leocc_reconfig_event e = {0, 0, LEOCC_CONF_FULL, 0};
	struct leocc_view v;
	leocc_u32 seed = 12345, i;

	leocc_default_params(&p);
	leocc_init(&s, &p, 0);
	for (i = 0; i < 200000; i++) {
		leocc_u32 r = jitter(&seed, 1u << 30);

		a.now_us = (leocc_u64)jitter(&seed, 1u << 30) * (r & 1 ? 1 : 4096);
		a.delivered_total = r & 2 ? jitter(&seed, 1u << 30) : ~0ull - r;
		a.lost_total = r;
		a.interval_us = r & 4 ? 0 : jitter(&seed, 1u << 24);
		a.delivered = r & 8 ? 0 : jitter(&seed, 1u << 20);
		a.rtt_us = r & 16 ? 0 : jitter(&seed, 1u << 26);
		a.acked_sacked = jitter(&seed, 1u << 16);
		a.losses = r & 32 ? jitter(&seed, 1000) : 0;
		a.prior_in_flight = jitter(&seed, 1u << 20);
		a.in_flight = jitter(&seed, 1u << 20);
		a.app_limited = r & 64 ? 1 : 0;
		a.mss = r & 128 ? 0 : jitter(&seed, 9000);
		a.ca_state = r % 5;
		a._pad = 0;
		leocc_on_ack(&s, &a, &out);
		CHECK(out.cwnd >= p.min_cwnd, "cwnd %u below the floor", out.cwnd);
		CHECK(out.pacing_rate > 0, "pacing rate 0");
		if ((r & 0x3ff) == 0) {
			e.time_us = jitter(&seed, 1u << 30);
			e.seq = jitter(&seed, 64);
			leocc_on_reconfig(&s, &e);
		}
		if ((r & 0x3ff) == 1)
			leocc_on_path(&s, a.now_us, jitter(&seed, 1u << 20));
		leocc_view(&s, &v);
		CHECK(v.mode <= LEOCC_MODE_RECONF, "mode %u", v.mode);
		CHECK(v.cycle_phase < p.cycle_len, "phase %u", v.cycle_phase);
		if (check_failures > 20)
			return;
	}
}

/* A clock that steps back must not make any age underflow (QUIC stacks, samples from another
 * CPU): the ACK is taken as arriving at the latest time seen. */
void test_clock_backwards(void)
{
	struct leocc_params p;
	struct leocc_state s;
	struct leocc_ack_sample a;
	struct leocc_output out;
	leocc_u64 t = 0, d = 0;

	leocc_default_params(&p);
	leocc_init(&s, &p, 0);
	feed(&s, &t, &d, 5000000, 40000, 3000);
	memset(&a, 0, sizeof(a));
	a.now_us = t - 500000;
	a.delivered_total = d + 1;
	a.delivered = 1;
	a.interval_us = 40000;
	a.rtt_us = 40000;
	a.acked_sacked = 1;
	a.in_flight = 10;
	a.mss = 1500;
	leocc_on_ack(&s, &a, &out);
	CHECK(s.last_now_us == t - 0 || s.last_now_us >= t - 1000, "time did not go back: %llu",
	      (unsigned long long)s.last_now_us);
	CHECK(s.phase_start_us <= s.last_now_us && s.mode_start_us <= s.last_now_us,
	      "no start lies in the future");
	CHECK(out.pacing_rate > 0 && out.pacing_rate < 100000000ull, "sane rate %llu",
	      (unsigned long long)out.pacing_rate);
}


/* A congested flow meets a loss once per cycle with a drain: the first loss ends the phase it
 * is in and drains, a second loss in the same cycle does nothing, and the next burst re-arms
 * it. (A drain at every loss, where losses go on, kept the cycle from ever reaching its burst.) */
void test_loss_drains_once_per_cycle(void)
{
	struct leocc_params p;
	struct leocc_state s;
	struct leocc_ack_sample a;

	leocc_default_params(&p);
	leocc_init(&s, &p, 0);
	s.mode = LEOCC_MODE_CRUISE;
	s.brtt_l = 40000;
	s.brtt_h = 45000;
	kal_seed(&s.rtt_kal, 60000, p.kal_p0); /* above the range: congested */
	memset(&a, 0, sizeof(a));
	a.losses = 1;
	a.in_flight = 100;
	a.mss = 1500;

	set_phase(&s, PHASE_FIRST_STEADY + 1, 1000);
	a.now_us = 2000;
	run_cruise(&s, &a);
	CHECK(s.cycle_phase == PHASE_DRAIN, "first loss of the cycle drains (phase %u)", s.cycle_phase);

	set_phase(&s, PHASE_FIRST_STEADY, 3000);
	a.now_us = 3100;
	run_cruise(&s, &a);
	CHECK(s.cycle_phase == PHASE_FIRST_STEADY, "a second loss in the cycle does not (phase %u)",
	      s.cycle_phase);

	set_phase(&s, PHASE_BURST, 4000);
	a.now_us = 4100;
	run_cruise(&s, &a);
	CHECK(s.cycle_phase == PHASE_DRAIN, "the next burst's loss drains again (phase %u)",
	      s.cycle_phase);
}

/* Competing starts after competing_cycles cycles in a row whose queue stood, and ends only
 * after as many in a row in which it emptied: one empty cycle (BBRv1's ProbeRTT, an outage)
 * does not end it, and a standing cycle in between starts the count again. */
void test_competing_hysteresis(void)
{
	struct leocc_params p;
	struct leocc_state s;
	const leocc_u32 standing = 30000, empty = 1000;
	leocc_u32 i;

	leocc_default_params(&p);
	leocc_init(&s, &p, 0);
	CHECK(p.competing_cycles == 2, "test written for competing_cycles 2, got %u",
	      p.competing_cycles);
	s.brtt_l = 40000;
	s.path_lo_us = 30000;
	s.path_width_us = 5000;
	s.excess_floor_us[0] = s.excess_floor_us[1] = empty;

	for (i = 0; i < 2; i++) {
		s.cycle_excess_us = standing;
		judge_standing_queue(&s);
	}
	CHECK(s.competing, "two standing cycles make the flow compete");
	s.cycle_excess_us = empty;
	judge_standing_queue(&s);
	CHECK(s.competing, "one empty cycle does not end it");
	s.cycle_excess_us = standing;
	judge_standing_queue(&s);
	s.cycle_excess_us = empty;
	judge_standing_queue(&s);
	CHECK(s.competing, "a standing cycle in between restarts the count");
	s.cycle_excess_us = empty;
	judge_standing_queue(&s);
	CHECK(!s.competing, "two empty cycles in a row end it");
}

/* Bursts of the grid_ticked rule: the times at which `s` started a burst, run from `t0` to
 * `t1` with an ACK every millisecond. */
static int burst_times(struct leocc_state *s, leocc_u64 t0, leocc_u64 t1, leocc_u64 *out, int max)
{
	struct leocc_ack_sample a;
	leocc_u64 t;
	int n = 0;

	memset(&a, 0, sizeof(a));
	a.mss = 1500;
	for (t = t0; t < t1; t += 1000) {
		leocc_u32 before = s->cycle_phase;

		a.now_us = t;
		run_cruise(s, &a);
		if (s->cycle_phase == PHASE_BURST && before != PHASE_BURST && n < max)
			out[n++] = t;
	}
	return n;
}

/* Two flows that entered cruise at different times and phases burst at the same grid ticks
 * once each has finished its first cycle; with cycle_grid off they keep their own offsets. */
void test_cycles_share_the_grid(void)
{
	const leocc_u64 grid = 262144; /* the largest power of two <= 8 x 40 ms, in us */
	leocc_u64 ta[16], tb[16];
	int grid_on, i, na, nb, apart;

	for (grid_on = 1; grid_on >= 0; grid_on--) {
		struct leocc_params p;
		struct leocc_state a, b;

		leocc_default_params(&p);
		CHECK(p.cycle_len == 8, "test written for cycle_len 8, got %u", p.cycle_len);
		p.cycle_grid = (leocc_u32)grid_on;
		leocc_init(&a, &p, 0);
		leocc_init(&b, &p, 0);
		a.brtt_l = b.brtt_l = 40000;
		enter_cruise(&a, 1000, PHASE_FIRST_STEADY);
		enter_cruise(&b, 77000, PHASE_FIRST_STEADY + 3);
		burst_times(&a, 1000, 77000, ta, 16);
		na = burst_times(&a, 77000, 3000000, ta, 16);
		nb = burst_times(&b, 77000, 3000000, tb, 16);
		CHECK(na >= 8 && nb >= 8, "bursts in 3 s: %d and %d", na, nb);
		apart = 0;
		for (i = 1; i < 8; i++) {
			if (grid_on)
				CHECK(ta[i] % grid < 1000 && tb[i] % grid < 1000,
				      "burst %d on the grid: %llu and %llu us", i,
				      (unsigned long long)ta[i], (unsigned long long)tb[i]);
			if (ta[i] != tb[i])
				apart++;
		}
		if (grid_on)
			CHECK(!apart, "%d of 7 bursts apart on the grid", apart);
		else
			CHECK(apart, "off the grid the flows keep their own offsets");
	}
}
