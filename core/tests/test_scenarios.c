/* SPDX-License-Identifier: MIT */
/*
 * Scenario tests: the core drives the link model of link_model.c. Thresholds are stated with
 * each check; they leave a margin over what the current code measures (printed with
 * LEOCC_TEST_VERBOSE=1) so that they catch regressions, not noise.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "check.h"
#include "link_model.h"

#define MS 1000ull
#define SEC 1000000ull
/* Mbit/s to bytes/s. */
#define MBPS(x) ((uint64_t)(x) * 1000000ull / 8)

static int verbose(void) { return getenv("LEOCC_TEST_VERBOSE") != NULL; }
/* LEOCC_TEST_TRACE=1 prints the controller every 10 ms (run one test: leocc_tests NAME). */
static int trace(void) { return getenv("LEOCC_TEST_TRACE") != NULL; }

static struct sim *new_sim(uint64_t cap, uint32_t rtt, uint64_t seed)
{
	struct sim *s = malloc(sizeof(*s));

	if (!s) {
		fprintf(stderr, "out of memory\n");
		exit(2);
	}
	sim_init(s, cap, rtt, seed);
	return s;
}

#define QHIST_MS 1000
struct window_stats {
	uint32_t qhist[QHIST_MS + 1]; /* queueing delay samples per ms bucket */
	uint64_t max_qdelay_us;
	uint64_t sum_qdelay_us;
	uint64_t samples;
	uint64_t bytes;
	uint64_t congested;
};

/* Run [from, to) in 1 ms steps, recording queueing delay, delivered bytes and eq. 4's mode. */
static struct window_stats run_window(struct sim *s, uint64_t from, uint64_t to)
{
	struct window_stats w;
	uint64_t t, start_bytes;
	struct leocc_view v;

	memset(&w, 0, sizeof(w));
	sim_run_until(s, from);
	start_bytes = s->delivered_bytes;
	for (t = from; t < to; t += MS) {
		uint64_t q;

		sim_run_until(s, t + MS);
		q = sim_queue_delay_us(s);
		w.max_qdelay_us = q > w.max_qdelay_us ? q : w.max_qdelay_us;
		w.sum_qdelay_us += q;
		w.samples++;
		w.qhist[q / 1000 < QHIST_MS ? q / 1000 : QHIST_MS]++;
		leocc_view(&s->cc, &v);
		w.congested += v.congested;
		if (trace() && (t % (10 * MS) == 0 || v.congested))
			printf("    t %7.3f mode %u ph %u cong %u pace %6.1f cwnd %5u infl %5llu q %6.1f "
			       "a %6.1f m %6.1f rtt %u..%u latest %u\n", (double)t / 1e6, v.mode,
			       v.cycle_phase, v.congested, (double)v.pacing_rate * 8e-6, v.cwnd,
			       (unsigned long long)(s->sent - s->una), (double)q / 1000.0,
			       (double)v.bbw_a * 8e-6, (double)v.bbw_m * 8e-6, v.brtt_l, v.brtt_h,
			       v.brtt_latest);
	}
	w.bytes = s->delivered_bytes - start_bytes;
	return w;
}

/* Milliseconds of the window whose queueing delay was at least `ms`. */
static unsigned ms_above(const struct window_stats *w, unsigned ms)
{
	unsigned n = 0, i;

	for (i = ms; i <= QHIST_MS; i++)
		n += w->qhist[i];
	return n;
}

static double mean_q_ms(const struct window_stats *w)
{
	return w->samples ? (double)w->sum_qdelay_us / (double)w->samples / 1000.0 : 0;
}

/* Queueing delay (ms) not exceeded by `pct` % of the window's 1 ms samples. */
static double q_pct_ms(const struct window_stats *w, unsigned pct)
{
	uint64_t seen = 0, need = (w->samples * pct + 99) / 100;
	unsigned i;

	for (i = 0; i <= QHIST_MS; i++) {
		seen += w->qhist[i];
		if (seen >= need)
			return (double)i + 1.0;
	}
	return QHIST_MS;
}

/* Delivered rate over the window as a fraction of `cap`. */
static double util(const struct window_stats *w, uint64_t from, uint64_t to, uint64_t cap)
{
	return (double)w->bytes * 1e6 / (double)(to - from) / (double)cap;
}

static void show(const char *what, const struct sim *s, const struct window_stats *w,
		 double u)
{
	struct leocc_view v;

	if (!verbose())
		return;
	leocc_view(&s->cc, &v);
	printf("  %-34s util %.3f  q mean %.1f ms max %.1f ms  congested %llu ms  mode %u "
	       "bBW_a %.1f bBW_m %.1f Mbit/s  bRTT %u..%u latest %u\n",
	       what, u, mean_q_ms(w), (double)w->max_qdelay_us / 1000.0,
	       (unsigned long long)w->congested, v.mode, (double)v.bbw_a * 8e-6,
	       (double)v.bbw_m * 8e-6, v.brtt_l, v.brtt_h, v.brtt_latest);
}

void test_startup(void)
{
	struct sim *s = new_sim(MBPS(50), 40000, 1);
	struct window_stats w;
	struct leocc_view v;
	double u;

	w = run_window(s, 0, 1 * SEC);
	leocc_view(&s->cc, &v);
	CHECK(v.mode == LEOCC_MODE_CRUISE, "in cruise after 1 s, mode %u", v.mode);
	/* Startup finds the capacity: bBW_a within 10 %. */
	CHECK(v.bbw_a >= MBPS(45) && v.bbw_a <= MBPS(55), "bBW_a %.1f Mbit/s",
	      (double)v.bbw_a * 8e-6);
	CHECK(v.brtt_l >= 40000 && v.brtt_l <= 41500, "bRTT_l %u", v.brtt_l);
	w = run_window(s, 2 * SEC, 6 * SEC);
	u = util(&w, 2 * SEC, 6 * SEC, MBPS(50));
	show("startup, steady 2-6 s", s, &w, u);
	/* Steady state: >= 95 % utilisation, mean queue under a quarter of the base RTT (the
	 * 1.25 burst of each cycle queues 0.25 BDP for about one RTT in eight). */
	CHECK(u >= 0.95, "utilisation %.3f", u);
	CHECK(mean_q_ms(&w) <= 10.0, "mean queueing delay %.1f ms", mean_q_ms(&w));
	CHECK(w.congested == 0, "congested for %llu ms on a clean link",
	      (unsigned long long)w.congested);
	free(s);
}

/* Capacity doubles at a reconfiguration (80 ms outage, detector on). */
void test_step_up_at_reconfig(void)
{
	struct sim *s = new_sim(MBPS(50), 40000, 2);
	struct window_stats w;
	struct leocc_view v;
	double u;

	sim_add_outage(s, 5 * SEC, 80 * MS);
	sim_add_seg(s, 5 * SEC, MBPS(100), 40000);
	run_window(s, 4 * SEC, 5 * SEC + 91 * MS);
	leocc_view(&s->cc, &v);
	CHECK(v.mode == LEOCC_MODE_RECONF, "adaptation entered, mode %u", v.mode);
	CHECK(v.reconfigs == 1, "one event, got %llu", (unsigned long long)v.reconfigs);
	/* Within 10 RTTs (400 ms) of the event bBW_a has found >= 85 % of the new capacity. */
	run_window(s, 5 * SEC + 91 * MS, 5 * SEC + 491 * MS);
	leocc_view(&s->cc, &v);
	CHECK(v.bbw_a >= MBPS(85), "bBW_a %.1f Mbit/s 10 RTTs after the event",
	      (double)v.bbw_a * 8e-6);
	CHECK(v.mode == LEOCC_MODE_CRUISE, "back in cruise, mode %u", v.mode);
	w = run_window(s, 6 * SEC, 8 * SEC);
	u = util(&w, 6 * SEC, 8 * SEC, MBPS(100));
	show("step 50->100 at reconfig, 6-8 s", s, &w, u);
	CHECK(u >= 0.93, "utilisation of the new capacity %.3f", u);
	CHECK(mean_q_ms(&w) <= 10.0, "mean queueing delay %.1f ms", mean_q_ms(&w));
	free(s);
}

/* A reconfiguration that changes nothing (same capacity and RTT after the outage) must cost
 * little: the adaptation's capped drain and probe are short. */
void test_reconfig_unchanged(void)
{
	struct sim *s = new_sim(MBPS(50), 40000, 10);
	struct window_stats w;
	double u;

	sim_add_outage(s, 5 * SEC, 80 * MS);
	w = run_window(s, 5 * SEC + 80 * MS, 7 * SEC);
	u = util(&w, 5 * SEC + 80 * MS, 7 * SEC, MBPS(50));
	show("unchanged link, reconfig, 5.08-7 s", s, &w, u);
	/* Over the 2 s after the outage: >= 85 % utilisation (the queue built during the outage
	 * drains first) and a mean queueing delay under 15 ms. */
	CHECK(u >= 0.85, "utilisation %.3f", u);
	CHECK(mean_q_ms(&w) <= 15.0, "mean queueing delay %.1f ms", mean_q_ms(&w));
	w = run_window(s, 7 * SEC, 9 * SEC);
	u = util(&w, 7 * SEC, 9 * SEC, MBPS(50));
	CHECK(u >= 0.95 && mean_q_ms(&w) <= 10.0, "settled: utilisation %.3f, queue %.1f ms", u,
	      mean_q_ms(&w));
	free(s);
}

/* The reconfiguration moves the flow to a longer path with more capacity (30 -> 50 ms,
 * 40 -> 150 Mbit/s), then to a shorter one with less (50 -> 30 ms, 150 -> 60 Mbit/s). The
 * capped round must not mistake the longer RTT for a slower link. */
void test_path_change_at_reconfig(void)
{
	struct sim *s = new_sim(MBPS(40), 30000, 12);
	struct window_stats w;
	struct leocc_view v;
	double u;

	sim_add_outage(s, 4 * SEC, 80 * MS);
	sim_add_seg(s, 4 * SEC, MBPS(150), 50000);
	sim_add_outage(s, 8 * SEC, 80 * MS);
	sim_add_seg(s, 8 * SEC, MBPS(60), 30000);
	/* 15 RTTs (750 ms) after the first event bBW_a has found >= 85 % of 150 Mbit/s. */
	run_window(s, 3 * SEC, 4 * SEC + 90 * MS + 750 * MS);
	leocc_view(&s->cc, &v);
	CHECK(v.bbw_a >= MBPS(127), "bBW_a %.1f Mbit/s 750 ms after a longer, faster path",
	      (double)v.bbw_a * 8e-6);
	CHECK(v.brtt_l >= 50000 && v.brtt_l <= 52000, "bRTT_l %u on the 50 ms path", v.brtt_l);
	w = run_window(s, 5 * SEC, 8 * SEC);
	u = util(&w, 5 * SEC, 8 * SEC, MBPS(150));
	show("30->50 ms, 40->150 Mbit/s, 5-8 s", s, &w, u);
	CHECK(u >= 0.93, "utilisation %.3f", u);
	w = run_window(s, 8 * SEC + 90 * MS, 8 * SEC + 590 * MS);
	show("50->30 ms, 150->60 Mbit/s, first 0.5 s", s, &w, 0);
	/* The outage leaves an 80 ms backlog; the capped rounds must drain it, not keep it. */
	CHECK(mean_q_ms(&w) <= 25.0, "mean queue in the first 0.5 s %.1f ms", mean_q_ms(&w));
	w = run_window(s, 9 * SEC, 11 * SEC);
	u = util(&w, 9 * SEC, 11 * SEC, MBPS(60));
	leocc_view(&s->cc, &v);
	show("50->30 ms, 150->60 Mbit/s, 9-11 s", s, &w, u);
	CHECK(u >= 0.93 && mean_q_ms(&w) <= 5.0, "utilisation %.3f, queue %.1f ms", u,
	      mean_q_ms(&w));
	CHECK(v.brtt_l >= 30000 && v.brtt_l <= 31500, "bRTT_l %u on the 30 ms path", v.brtt_l);
	free(s);
}

/* Capacity falls to 30 % at a reconfiguration: adaptation must not leave a standing queue. */
void test_drop_at_reconfig(void)
{
	struct sim *s = new_sim(MBPS(100), 40000, 3);
	struct window_stats w;
	double u;

	sim_add_outage(s, 5 * SEC, 80 * MS);
	sim_add_seg(s, 5 * SEC, MBPS(30), 40000);
	w = run_window(s, 5 * SEC, 5 * SEC + 600 * MS);
	show("drop 100->30 at reconfig, first 0.6 s", s, &w, 0);
	/* 0.5 s (about 10 RTTs) after the event the backlog of the outage is gone and the capped
	 * rounds have measured the new capacity (no probe needed): mean under 5 ms. From 1 s after
	 * the event on the mean is under 5 ms and no queue exceeds 25 ms (cruise bursts only). */
	w = run_window(s, 5 * SEC + 600 * MS, 6 * SEC);
	show("drop 100->30 at reconfig, 5.6-6 s", s, &w, 0);
	CHECK(mean_q_ms(&w) <= 5.0, "mean queueing delay 5.6-6 s %.1f ms", mean_q_ms(&w));
	w = run_window(s, 6 * SEC, 9 * SEC);
	u = util(&w, 6 * SEC, 9 * SEC, MBPS(30));
	show("drop 100->30 at reconfig, 6-9 s", s, &w, u);
	CHECK(mean_q_ms(&w) <= 5.0, "mean queueing delay %.1f ms", mean_q_ms(&w));
	CHECK(w.max_qdelay_us <= 25000, "max queueing delay %.1f ms",
	      (double)w.max_qdelay_us / 1000.0);
	CHECK(u >= 0.90, "utilisation %.3f", u);
	free(s);
}

/* Capacity falls inside an interval (no outage, no event): eq. 4's congested mode and the
 * drain phase must remove the queue. */
void test_drop_without_reconfig(void)
{
	struct sim *s = new_sim(MBPS(100), 40000, 4);
	struct window_stats w;
	double u;

	sim_add_seg(s, 5 * SEC, MBPS(30), 40000);
	w = run_window(s, 5 * SEC, 7 * SEC);
	show("drop 100->30 no event, 5-7 s", s, &w, 0);
	w = run_window(s, 7 * SEC, 10 * SEC);
	u = util(&w, 7 * SEC, 10 * SEC, MBPS(30));
	show("drop 100->30 no event, 7-10 s", s, &w, u);
	/* Two seconds (50 RTTs) later there is no standing queue. */
	CHECK(mean_q_ms(&w) <= 8.0, "mean queueing delay %.1f ms", mean_q_ms(&w));
	CHECK(u >= 0.90, "utilisation %.3f", u);
	free(s);
}

/* 2 % random loss is noise: the rate must not be cut. */
void test_random_loss(void)
{
	struct sim *s = new_sim(MBPS(50), 40000, 5);
	struct window_stats w;
	struct leocc_view v;
	double u;

	s->loss_ppm = 20000;
	w = run_window(s, 2 * SEC, 8 * SEC);
	u = util(&w, 2 * SEC, 8 * SEC, MBPS(50));
	leocc_view(&s->cc, &v);
	show("2 % random loss, 2-8 s", s, &w, u);
	/* Delivered goodput >= 90 % of capacity (98 % is the most 2 % loss allows without
	 * retransmissions being counted) and the estimate stays at the capacity. */
	CHECK(u >= 0.90, "utilisation %.3f", u);
	CHECK(v.bbw_a >= MBPS(45), "bBW_a %.1f Mbit/s", (double)v.bbw_a * 8e-6);
	CHECK(s->cc.pacing_rate >= MBPS(45) * 3 / 4, "pacing %.1f Mbit/s",
	      (double)s->cc.pacing_rate * 8e-6);
	free(s);
}

/* Random loss while the capacity drifts (+-10 % every second, no reconfiguration): a real
 * queue now and then sets the congested verdict, and random losses must not turn it into a
 * spiral of drain phases (each loss restarting the drain before the verdict is re-taken). */
void test_loss_with_drift(void)
{
	struct sim *s = new_sim(MBPS(150), 50000, 13);
	struct window_stats w;
	uint64_t t, cap_bytes = 0;
	int j;
	double u;

	s->loss_ppm = 18000;
	for (j = 1; j < 20; j++)
		sim_add_seg(s, (uint64_t)j * SEC, MBPS(150) * (uint64_t)(j % 3 == 1 ? 90 : 100 + j % 3 * 5) / 100, 50000);
	w = run_window(s, 3 * SEC, 20 * SEC);
	for (t = 3 * SEC; t < 20 * SEC; t += MS)
		cap_bytes += sim_seg_at(s, t)->cap_Bps / 1000;
	u = (double)w.bytes / (double)cap_bytes;
	show("1.8 % loss, +-10 % drift, 3-20 s", s, &w, u);
	/* Goodput >= 88 % of the capacity (1.8 % is lost) with a mean queue under 10 ms. */
	CHECK(u >= 0.88, "utilisation %.3f", u);
	CHECK(mean_q_ms(&w) <= 10.0, "mean queueing delay %.1f ms", mean_q_ms(&w));
	free(s);
}

/* The base RTT switches between two bands 15 ms apart (more than Delta_RTT) every 500 ms,
 * with no reconfiguration. A rise into the upper band is not congestion: eq. 4 must not turn
 * to the moderate estimate for it (unless a real queue of Delta_RTT rides on it, left by the
 * ACK compression of the previous fall), and once both bands are in the window the range
 * covers them. (A fall into the lower band compresses ACKs, which briefly inflates bBW_a, so a real
 * queue of 15-30 ms can follow it; detecting that queue is right, hence the 10 % allowance.) */
void test_band_switch(void)
{
	struct sim *s = new_sim(MBPS(50), 40000, 6);
	struct window_stats w;
	struct leocc_view v;
	uint64_t t, total_congested = 0;
	int i = 0;
	double u;

	for (t = 500 * MS; t < 12 * SEC && s->nsegs < SIM_MAX_SEGS; t += 500 * MS, i++)
		sim_add_seg(s, t, MBPS(50), i % 2 ? 40000 : 55000);
	w = run_window(s, 0, 4 * SEC);
	show("bands 40/55 ms, learning 0-4 s", s, &w, util(&w, 0, 4 * SEC, MBPS(50)));
	for (t = 4 * SEC; t < 12 * SEC; t += 500 * MS) {
		int upward = sim_seg_at(s, t)->rtt_us == 55000;

		w = run_window(s, t, t + 300 * MS);
		/* Congested during a rise is only wrong without a real queue of Delta_RTT. */
		CHECK(!upward || w.congested == 0 || mean_q_ms(&w) >= 10.0,
		      "rise into the upper band at %.1f s read as congestion for %llu ms "
		      "(mean queue %.1f ms)", (double)t / 1e6, (unsigned long long)w.congested,
		      mean_q_ms(&w));
		total_congested += w.congested;
		w = run_window(s, t + 300 * MS, t + 500 * MS);
		total_congested += w.congested;
	}
	leocc_view(&s->cc, &v);
	/* 10 % for the queue that follows a fall; 12.5 % since the cycle grid (grid_ticked):
	 * the 262 ms grid puts bursts on two of the eight falls of this 500 ms pattern, and a
	 * burst across a fall lifts bBW_a by its ACK-compressed sample (834 ms, every window of
	 * it with a real queue of 12-33 ms; 0 ms off the grid). */
	CHECK(total_congested <= 1000, "congested mode for %llu of 8000 ms",
	      (unsigned long long)total_congested);
	CHECK(v.brtt_l >= 39000 && v.brtt_l <= 42000, "bRTT_l %u", v.brtt_l);
	CHECK(v.brtt_h >= 55000 && v.brtt_h <= 59000, "bRTT_h %u", v.brtt_h);
	w = run_window(s, 12 * SEC, 14 * SEC);
	u = util(&w, 12 * SEC, 14 * SEC, MBPS(50));
	show("bands, one band from 12 s", s, &w, u);
	if (verbose())
		printf("  bands: congested %llu of 8000 ms\n", (unsigned long long)total_congested);
	CHECK(u >= 0.90, "utilisation %.3f", u);
	free(s);
}

/* No detector: outages and capacity changes happen, no event arrives. The windows expire on
 * their own; LeoCC behaves as a BBR-like controller. */
void test_no_detector(void)
{
	struct sim *s = new_sim(MBPS(50), 40000, 7);
	struct window_stats w;
	struct leocc_view v;
	double u;

	s->detector = 0;
	sim_add_outage(s, 4 * SEC, 80 * MS);
	sim_add_seg(s, 4 * SEC, MBPS(100), 40000);
	sim_add_outage(s, 10 * SEC, 80 * MS);
	sim_add_seg(s, 10 * SEC, MBPS(30), 40000);
	w = run_window(s, 4 * SEC, 6 * SEC);
	u = util(&w, 4 * SEC, 6 * SEC, MBPS(100));
	show("no detector, 50->100, 4-6 s", s, &w, u);
	w = run_window(s, 6 * SEC, 10 * SEC);
	u = util(&w, 6 * SEC, 10 * SEC, MBPS(100));
	show("no detector, 6-10 s", s, &w, u);
	/* Slower than with the detector, but the step up is found within 2 s. */
	CHECK(u >= 0.90, "utilisation after the step up %.3f", u);
	w = run_window(s, 10 * SEC, 12 * SEC);
	show("no detector, 100->30, 10-12 s", s, &w, 0);
	w = run_window(s, 12 * SEC, 15 * SEC);
	u = util(&w, 12 * SEC, 15 * SEC, MBPS(30));
	show("no detector, 12-15 s", s, &w, u);
	CHECK(mean_q_ms(&w) <= 8.0, "no standing queue after the drop: %.1f ms", mean_q_ms(&w));
	CHECK(u >= 0.90, "utilisation after the drop %.3f", u);
	leocc_view(&s->cc, &v);
	CHECK(v.reconfigs == 0 && v.mode == LEOCC_MODE_CRUISE, "never adapted: %llu, mode %u",
	      (unsigned long long)v.reconfigs, v.mode);
	free(s);
}

/* Section 4.3: RTT_non-sat = bRTT_latest - RTT_term-PoP is computed and its spike reported,
 * but an event is adapted to whatever the verdict (the skip cost throughput and delay in the
 * ablation, docs/algorithm.md): a terrestrial rise is seen and the event still adapts, and
 * with a separate ICMP queue (appendix B) a satellite that got slower is followed. */
void test_bottleneck_discrimination(void)
{
	struct sim *s = new_sim(MBPS(50), 40000, 8);
	struct leocc_view v;

	s->path_probe = 1;
	s->queue_on_pop_path = 0; /* queue on the terrestrial side */
	/* A competing terrestrial load adds 30 ms to the far segment from 3 s on: the probe
	 * does not see it. */
	sim_add_seg(s, 3 * SEC, MBPS(50), 70000);
	s->segs[s->nsegs - 1].pop_rtt_us = s->segs[0].pop_rtt_us;
	sim_add_outage(s, 4 * SEC, 60 * MS);
	sim_run_until(s, 4 * SEC);
	leocc_view(&s->cc, &v);
	CHECK(v.terrestrial_bottleneck == 1, "RTT_non-sat spike seen (non-sat %u us)",
	      v.rtt_nonsat);
	sim_run_until(s, 4 * SEC + 100 * MS);
	CHECK(s->last_rcf_result == LEOCC_RCF_ADAPT, "event adapted, result %u",
	      s->last_rcf_result);
	free(s);

	s = new_sim(MBPS(50), 40000, 9);
	s->path_probe = 1;
	s->queue_on_pop_path = 0; /* separate ICMP queue: the probe misses the satellite queue */
	sim_add_seg(s, 2 * SEC, MBPS(20), 40000);
	sim_add_outage(s, 2 * SEC + 200 * MS, 60 * MS);
	sim_run_until(s, 2 * SEC + 300 * MS);
	CHECK(s->last_rcf_result == LEOCC_RCF_ADAPT, "satellite bottleneck: event honoured, %u",
	      s->last_rcf_result);
	sim_run_until(s, 3 * SEC + 200 * MS);
	leocc_view(&s->cc, &v);
	CHECK(v.reconfigs == 1, "one adaptation, got %llu", (unsigned long long)v.reconfigs);
	CHECK(v.bbw_a < MBPS(20) * 12 / 10, "bBW_a follows the slower link: %llu B/s",
	      (unsigned long long)v.bbw_a);
	free(s);
}

/* The core's guards. Events closer than rcf_min_spacing_us to the last adaptation merge into
 * it; a storm of false events uses up the adaptation budget and then only cuts windows; a
 * path that moves from 40 to 100 ms with no event is re-anchored within seconds. */
void test_event_guards(void)
{
	struct sim *s = new_sim(MBPS(50), 40000, 12);
	struct leocc_state *c;
	struct leocc_reconfig_event e = {0, 0, LEOCC_CONF_FULL, 0};
	struct window_stats w;
	uint64_t t;
	double u_calm, u_storm;
	leocc_u32 merged = 0, adapted = 0, seq = 100;

	s->path_probe = 1;
	run_window(s, 0, 8 * SEC);
	{
		struct sim *n = new_sim(MBPS(50), 40000, 12);

		n->path_probe = 1;
		w = run_window(n, 8 * SEC, 12 * SEC);
		u_calm = util(&w, 8 * SEC, 12 * SEC, MBPS(50));
		free(n);
	}
	c = &s->cc;
	/* A false event every 250 ms for 4 s. */
	for (t = 8 * SEC; t < 12 * SEC; t += 250 * MS) {
		leocc_u32 r;

		sim_run_until(s, t);
		e.time_us = t;
		e.seq = ++seq;
		r = leocc_on_reconfig(c, &e);
		merged += r == LEOCC_RCF_MERGED;
		adapted += r == LEOCC_RCF_ADAPT;
	}
	CHECK(adapted <= 4 && merged >= 12, "storm: %u adapted, %u merged of 16", adapted, merged);
	free(s);
	/* The same storm against the same flow without events, over the storm's 4 s. */
	{
		struct sim *n = new_sim(MBPS(50), 40000, 12);
		uint64_t before;

		n->path_probe = 1;
		run_window(n, 0, 8 * SEC);
		before = n->delivered_bytes;
		for (t = 8 * SEC, seq = 100; t < 12 * SEC; t += 250 * MS) {
			sim_run_until(n, t);
			e.time_us = t;
			e.seq = ++seq;
			leocc_on_reconfig(&n->cc, &e);
		}
		sim_run_until(n, 12 * SEC);
		u_storm = (double)(n->delivered_bytes - before) / ((double)MBPS(50) * 4.0);
		free(n);
	}
	CHECK(u_storm >= 0.9 * u_calm, "utilisation under a storm %.3f, calm %.3f", u_storm, u_calm);

	/* The base moves from 40 to 100 ms with no event. */
	s = new_sim(MBPS(50), 40000, 13);
	s->path_probe = 1;
	sim_add_seg(s, 3 * SEC, MBPS(50), 100000);
	run_window(s, 0, 3 * SEC);
	w = run_window(s, 6 * SEC, 8 * SEC);
	CHECK(util(&w, 6 * SEC, 8 * SEC, MBPS(50)) >= 0.85, "3-5 s after a 40 -> 100 ms move: "
	      "utilisation %.3f (bRTT_l %u)", util(&w, 6 * SEC, 8 * SEC, MBPS(50)), s->cc.brtt_l);
	free(s);
}

/* A false event (the path did not change) costs a capped round and a probe at 1.5x. The probe
 * ends as soon as its queue shows in the RTT (run_reconf), not at the end of the round in which
 * it shows: the queue then stays above one probe round's worth ((gain - 1) x the base RTT, 20 ms
 * here) for at most 1.5 base RTTs, the feedback delay and the drain that follows. Checked at
 * the end of the round, it stayed there for 84 ms. */
void test_false_event_probe_queue(void)
{
	struct sim *s = new_sim(MBPS(50), 40000, 21), *n = new_sim(MBPS(50), 40000, 21);
	struct leocc_reconfig_event e = {8 * SEC, 100, LEOCC_CONF_FULL, 0};
	struct window_stats w, calm;

	s->path_probe = 1;
	n->path_probe = 1;
	run_window(s, 0, 8 * SEC);
	run_window(n, 0, 8 * SEC);
	CHECK(leocc_on_reconfig(&s->cc, &e) == LEOCC_RCF_ADAPT, "the false event is acted on");
	w = run_window(s, 8 * SEC, 10 * SEC);
	calm = run_window(n, 8 * SEC, 10 * SEC);
	show("false event", s, &w, util(&w, 8 * SEC, 10 * SEC, MBPS(50)));
	CHECK(ms_above(&calm, 20) == 0, "no queue above 20 ms without the event: %u ms",
	      ms_above(&calm, 20));
	CHECK(ms_above(&w, 20) <= 60, "queue above 20 ms for %u ms after a false event (largest "
	      "%.1f ms, without the event %.1f ms)", ms_above(&w, 20), w.max_qdelay_us / 1000.0,
	      calm.max_qdelay_us / 1000.0);
	free(s);
	free(n);
}

/* A Starlink-like minute: reconfigurations every 15 s (80 ms outages) that move the capacity
 * between 40 and 150 Mbit/s and the base RTT between 30 and 50 ms, +-10 % capacity drift every
 * second inside an interval, 0.5 % random loss. With the detector LeoCC must keep the link busy
 * and the queue short, and do better than the same run without the detector (the paper's
 * point). */
static void starlink_minute(struct sim *s)
{
	static const uint64_t caps[] = {MBPS(120), MBPS(40), MBPS(150), MBPS(70)};
	static const uint32_t rtts[] = {40000, 30000, 50000, 35000};
	uint64_t t;
	int k, j;

	s->loss_ppm = 5000;
	for (k = 0; k < 4; k++) {
		uint64_t start = 2 * SEC + (uint64_t)k * 15 * SEC;

		if (k > 0)
			sim_add_outage(s, start - 80 * MS, 80 * MS);
		for (j = 0; j < 15; j++) {
			t = start + (uint64_t)j * SEC;
			/* drift: +0, +10, 0, -10 % in turn */
			sim_add_seg(s, t, caps[k] * (uint64_t)(100 + (j % 4 == 1 ? 10 : 0) -
							       (j % 4 == 3 ? 10 : 0)) / 100,
				    rtts[k]);
		}
	}
}

void test_starlink_like(void)
{
	struct window_stats w, wn;
	struct sim *s = new_sim(MBPS(120), 40000, 11);
	struct sim *n = new_sim(MBPS(120), 40000, 11);
	uint64_t cap_bytes = 0, t;
	double u, un;

	starlink_minute(s);
	starlink_minute(n);
	n->detector = 0;
	w = run_window(s, 2 * SEC, 62 * SEC);
	wn = run_window(n, 2 * SEC, 62 * SEC);
	for (t = 2 * SEC; t < 62 * SEC; t += MS)
		cap_bytes += sim_seg_at(s, t)->cap_Bps / 1000;
	u = (double)w.bytes / (double)cap_bytes;
	un = (double)wn.bytes / (double)cap_bytes;
	if (verbose()) {
		printf("  starlink-like minute, detector:    util %.3f  queue mean %.1f ms p95 %.0f ms "
		       "p99 %.0f ms\n", u, mean_q_ms(&w), q_pct_ms(&w, 95), q_pct_ms(&w, 99));
		printf("  starlink-like minute, no detector: util %.3f  queue mean %.1f ms p95 %.0f ms "
		       "p99 %.0f ms\n", un, mean_q_ms(&wn), q_pct_ms(&wn, 95), q_pct_ms(&wn, 99));
	}
	/* The detector must pay: more throughput and no more queueing (mean and p95). The p99 is
	 * the backlog the outages themselves leave (the sender cannot know during an outage), the
	 * same with and without it, so it is printed, not compared. */
	CHECK(u >= 0.90, "utilisation with the detector %.3f", u);
	CHECK(u >= un, "utilisation: detector %.3f, none %.3f", u, un);
	CHECK(mean_q_ms(&w) <= 10.0, "mean queueing delay with the detector %.1f ms", mean_q_ms(&w));
	CHECK(mean_q_ms(&w) <= mean_q_ms(&wn), "mean queue: detector %.1f ms, none %.1f ms",
	      mean_q_ms(&w), mean_q_ms(&wn));
	CHECK(q_pct_ms(&w, 95) <= q_pct_ms(&wn, 95), "p95 queue: detector %.0f ms, none %.0f ms",
	      q_pct_ms(&w, 95), q_pct_ms(&wn, 95));
	free(s);
	free(n);
}

/* ---------------------------------------------------------------------------------------- */
/* Parameter ranges (issue 34): the BPF program starts flows from a map any root tool can
 * write, so no parameter struct may switch congestion control off or pin cwnd at 1. */

/* The smallest window that keeps an ACK clock (the table's min_cwnd minimum, asserted below). */
#define SANE_MIN_CWND 2u
/* Rate samples may exceed the link by ACK compression; twice the link covers the model's. */
#define ACK_COMPRESSION_SLACK 2u
/* Long enough for Startup, Drain, cruise cycles and an adaptation after the outage at 4 s. */
#define RANGES_RUN_US (8 * SEC)
#define RANGES_MAX_CALLS 400000

static leocc_u32 *param_field(struct leocc_params *p, leocc_u32 offset)
{
	return (leocc_u32 *)((char *)p + offset);
}

/* The row called `name` (which must exist). */
static struct leocc_param_range param_row(const char *name)
{
	struct leocc_param_range r;
	leocc_u32 i;

	for (i = 0; leocc_param_range(i, &r); i++)
		if (!strcmp(r.name, name))
			return r;
	fprintf(stderr, "no parameter row %s\n", name);
	exit(2);
}

/* The largest pacing gain the table allows: the bound any pacing rate is held to. */
static leocc_u32 max_pacing_gain(void)
{
	static const char *const gains[] = {"startup_gain", "ra_probe_gain", "bco", "bco_congested"};
	leocc_u32 g = 0, i;

	for (i = 0; i < sizeof(gains) / sizeof(gains[0]); i++)
		g = param_row(gains[i]).max > g ? param_row(gains[i]).max : g;
	return g;
}

/* Run a flow from parameters filled with `fill` bytes on a 100 Mbit/s, 40 ms link with one
 * reconfiguration; every output must keep cwnd >= 2 and pacing within the bound: the largest
 * pacing gain over twice the link, or the window floor (min_cwnd per base RTT) or the first
 * window (init_cwnd per default RTT) at that gain, whichever is larger. */
static void run_filled_params(int fill)
{
	const uint64_t cap = MBPS(100);
	const uint32_t rtt = 40000;
	struct sim *s = new_sim(cap, rtt, 7);
	struct leocc_params p;
	struct leocc_param_range r;
	uint64_t gain = max_pacing_gain(), bound, max_pacing = 0, floor_bytes;
	uint32_t min_cwnd = UINT32_MAX, max_cwnd = 0;
	leocc_u32 i;
	size_t c;

	memset(&p, fill, sizeof(p));
	leocc_init(&s->cc, &p, 0);
	for (i = 0; leocc_param_range(i, &r); i++) {
		leocc_u32 v = *param_field(&s->cc.p, r.offset);

		CHECK(v >= r.min && v <= r.max, "fill 0x%02x: %s = %u outside %u..%u", fill, r.name,
		      v, r.min, r.max);
	}
	/* What sim_init does for the defaults: the first window before any ACK. */
	s->out.cwnd = s->cc.p.init_cwnd;
	s->out.pacing_rate = (uint64_t)s->cc.p.init_cwnd * s->mss * SEC / s->cc.p.default_rtt_us;
	s->path_probe = 1;
	sim_add_outage(s, 4 * SEC, 80 * MS);
	s->calls = calloc(RANGES_MAX_CALLS, sizeof(*s->calls));
	s->max_calls = RANGES_MAX_CALLS;
	if (!s->calls) {
		fprintf(stderr, "out of memory\n");
		exit(2);
	}
	sim_run_until(s, RANGES_RUN_US);
	bound = gain * ACK_COMPRESSION_SLACK * cap / LEOCC_UNIT;
	if ((uint64_t)s->cc.p.min_cwnd * s->mss * SEC / rtt * gain / LEOCC_UNIT > bound)
		bound = (uint64_t)s->cc.p.min_cwnd * s->mss * SEC / rtt * gain / LEOCC_UNIT;
	if ((uint64_t)s->cc.p.init_cwnd * s->mss * SEC / s->cc.p.default_rtt_us * gain /
	    LEOCC_UNIT > bound)
		bound = (uint64_t)s->cc.p.init_cwnd * s->mss * SEC / s->cc.p.default_rtt_us * gain /
			LEOCC_UNIT;
	CHECK(s->ncalls > 1000 && s->ncalls < RANGES_MAX_CALLS, "fill 0x%02x: %zu calls", fill,
	      s->ncalls);
	for (c = 0; c < s->ncalls; c++) {
		const struct leocc_output *o = &s->calls[c].out;

		if (s->calls[c].op != SIM_CALL_ACK)
			continue;
		min_cwnd = o->cwnd < min_cwnd ? o->cwnd : min_cwnd;
		max_cwnd = o->cwnd > max_cwnd ? o->cwnd : max_cwnd;
		max_pacing = o->pacing_rate > max_pacing ? o->pacing_rate : max_pacing;
	}
	if (verbose())
		printf("  fill 0x%02x: %zu calls, cwnd %u..%u, pacing max %.1f Mbit/s (bound %.1f), "
		       "delivered %.1f Mbit/s\n", fill, s->ncalls, min_cwnd, max_cwnd,
		       (double)max_pacing * 8e-6, (double)bound * 8e-6,
		       (double)s->delivered_bytes * 8e-6 / ((double)RANGES_RUN_US / SEC));
	CHECK(min_cwnd >= SANE_MIN_CWND, "fill 0x%02x: cwnd fell to %u", fill, min_cwnd);
	CHECK(max_pacing <= bound, "fill 0x%02x: pacing reached %llu B/s, bound %llu", fill,
	      (unsigned long long)max_pacing, (unsigned long long)bound);
	/* The flow keeps sending: at least half its window floor (min_cwnd per RTT) or of the
	 * link, whichever is smaller. All-zero parameters do no better than that floor: a 0
	 * Delta_RTT on the flow's own range reads a constant RTT as congestion, and the slowest
	 * burst (1.05x) with the deepest drain (0.25x) averages under 1x, so the rate settles
	 * at the floor. Slow, not unsafe. */
	floor_bytes = (uint64_t)s->cc.p.min_cwnd * s->mss * RANGES_RUN_US / rtt;
	if (floor_bytes > cap * RANGES_RUN_US / SEC)
		floor_bytes = cap * RANGES_RUN_US / SEC; /* a floor above the link: the link */
	CHECK(s->delivered_bytes > floor_bytes / 2, "fill 0x%02x: delivered %llu, floor %llu",
	      fill, (unsigned long long)s->delivered_bytes, (unsigned long long)floor_bytes);
	free(s->calls);
	free(s);
}

void test_param_ranges(void)
{
	struct leocc_params d;
	struct leocc_param_range r;
	leocc_u32 i, expect_offset = 0;

	leocc_default_params(&d);
	for (i = 0; leocc_param_range(i, &r); i++) {
		leocc_u32 v = *param_field(&d, r.offset);

		CHECK(r.offset == expect_offset, "%s at %u, expected %u", r.name, r.offset,
		      expect_offset);
		CHECK(r.min <= r.max, "%s: %u..%u", r.name, r.min, r.max);
		CHECK(v >= r.min && v <= r.max, "default %s = %u outside %u..%u", r.name, v, r.min,
		      r.max);
		CHECK(v == r.def, "default %s = %u, its row says %u", r.name, v, r.def);
		CHECK(r.unit && *r.unit && r.doc && *r.doc && r.source && *r.source,
		      "%s: unit, doc and source", r.name);
		expect_offset += sizeof(leocc_u32);
	}
	CHECK(i * sizeof(leocc_u32) == sizeof(struct leocc_params), "%u rows for %zu bytes", i,
	      sizeof(struct leocc_params));
	CHECK(!leocc_param_range(i, &r), "row past the end");
	CHECK(param_row("min_cwnd").min >= SANE_MIN_CWND, "min_cwnd may go below %u",
	      SANE_MIN_CWND);
	run_filled_params(0x00);
	run_filled_params(0xff);
}
