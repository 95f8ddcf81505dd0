/* SPDX-License-Identifier: MIT */
/*
 * Randomised sweep (a measurement tool, not a test): Starlink-like links with a reconfiguration
 * every 15 s that draws a new capacity (20-200 Mbit/s) and base RTT (25-60 ms), +-15 % drift
 * every second, optional RTT bands and 0-2 % random loss; each run with and without the
 * detector. Prints utilisation and queueing delay per run and the worst cases, so that
 * pathologies show up. `make -C core sweep [SWEEP_RUNS=N]`.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "../leocc.h"
#include "link_model.h"

#define SEC 1000000ull
#define MS 1000ull
#define MBPS(x) ((uint64_t)(x) * 1000000ull / 8)
#define INTERVALS 5

static uint64_t rng = 88172645463325252ull;
static uint64_t rnd(uint64_t n)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng % n;
}

struct result {
	double util, q_mean_ms, q_p95_ms;
};

static struct result run(const struct sim_seg *segs, int nsegs, const uint64_t *outages,
			 uint32_t loss_ppm, int detector, uint64_t end)
{
	static uint32_t hist[1001];
	struct sim *s = malloc(sizeof(*s));
	struct result r = {0, 0, 0};
	uint64_t t, cap_bytes = 0, start_bytes, qsum = 0, n = 0, seen = 0;
	int i;

	if (!s)
		exit(2);
	sim_init(s, segs[0].cap_Bps, segs[0].rtt_us, 1 + loss_ppm);
	for (i = 1; i < nsegs; i++)
		sim_add_seg(s, segs[i].start_us, segs[i].cap_Bps, segs[i].rtt_us);
	for (i = 0; i < INTERVALS - 1; i++)
		sim_add_outage(s, outages[i], 80 * MS);
	s->loss_ppm = loss_ppm;
	s->detector = detector;
	memset(hist, 0, sizeof(hist));
	sim_run_until(s, 3 * SEC);
	start_bytes = s->delivered_bytes;
	for (t = 3 * SEC; t < end; t += MS) {
		uint64_t q;

		sim_run_until(s, t + MS);
		q = sim_queue_delay_us(s);
		if (getenv("SWEEP_TRACE") && detector && t % (20 * MS) == 0) {
			struct leocc_view v;

			leocc_view(&s->cc, &v);
			printf("    t %7.3f cap %6.1f rtt %u | mode %u ph %u cong %u pace %6.1f cwnd %5u "
			       "q %6.1f a %6.1f m %6.1f brtt %u..%u latest %u\n", (double)t / 1e6,
			       (double)sim_seg_at(s, t)->cap_Bps * 8e-6, sim_seg_at(s, t)->rtt_us,
			       v.mode, v.cycle_phase, v.congested, (double)v.pacing_rate * 8e-6,
			       v.cwnd, (double)q / 1000.0, (double)v.bbw_a * 8e-6,
			       (double)v.bbw_m * 8e-6, v.brtt_l, v.brtt_h, v.brtt_latest);
		}
		qsum += q;
		n++;
		hist[q / 1000 < 1000 ? q / 1000 : 1000]++;
		cap_bytes += sim_seg_at(s, t)->cap_Bps / 1000;
		if (getenv("SWEEP_TRACE") && (t + MS) % SEC == 0) {
			static uint64_t last_bytes, last_cap;

			printf("  second %2llu: util %.3f\n", (unsigned long long)(t / SEC),
			       (double)(s->delivered_bytes - last_bytes) /
				       (double)(cap_bytes - last_cap));
			last_bytes = s->delivered_bytes;
			last_cap = cap_bytes;
		}
	}
	r.util = (double)(s->delivered_bytes - start_bytes) / (double)cap_bytes;
	r.q_mean_ms = (double)qsum / (double)n / 1000.0;
	for (i = 0; i <= 1000; i++) {
		seen += hist[i];
		if (seen * 100 >= n * 95) {
			r.q_p95_ms = i + 1;
			break;
		}
	}
	free(s);
	return r;
}

int main(int argc, char **argv)
{
	int runs = argc > 1 ? atoi(argv[1]) : 20, k;
	double su = 0, sq = 0, snu = 0, snq = 0, worst_u = 2, worst_q = 0;

	printf("run  loss  bands  | detector: util  q_mean  q_p95 | none: util  q_mean  q_p95\n");
	for (k = 0; k < runs; k++) {
		struct sim_seg segs[SIM_MAX_SEGS];
		uint64_t outages[INTERVALS];
		int nsegs = 0, iv, j, bands = (int)rnd(2);
		uint32_t loss = (uint32_t)rnd(20001);
		uint64_t end = (3 + 15 * INTERVALS) * SEC;
		struct result d, n;

		for (iv = 0; iv < INTERVALS; iv++) {
			uint64_t cap = MBPS(20 + rnd(181)), start = iv ? (3 + 15 * (uint64_t)iv) * SEC : 0;
			uint32_t rtt = (uint32_t)(25000 + rnd(35001));

			if (iv)
				outages[iv - 1] = start - 80 * MS;
			for (j = 0; j < 15 && nsegs < SIM_MAX_SEGS; j++) {
				struct sim_seg *g = &segs[nsegs++];

				g->start_us = start + (uint64_t)j * SEC;
				g->cap_Bps = cap * (85 + rnd(31)) / 100;
				/* bands: every other second the base RTT sits 8-20 ms higher */
				g->rtt_us = rtt + (bands && j % 2 ? (uint32_t)(8000 + rnd(12001)) : 0);
				g->pop_rtt_us = g->rtt_us / 2;
			}
		}
		if (getenv("SWEEP_ONLY") && atoi(getenv("SWEEP_ONLY")) != k)
			continue;
		d = run(segs, nsegs, outages, loss, 1, end);
		n = run(segs, nsegs, outages, loss, 0, end);
		printf("%3d  %4.1f%%  %5s  |          %.3f  %5.1f  %5.0f  |       %.3f  %5.1f  %5.0f\n",
		       k, loss / 1e4, bands ? "yes" : "no", d.util, d.q_mean_ms, d.q_p95_ms, n.util,
		       n.q_mean_ms, n.q_p95_ms);
		su += d.util;
		sq += d.q_mean_ms;
		snu += n.util;
		snq += n.q_mean_ms;
		worst_u = d.util < worst_u ? d.util : worst_u;
		worst_q = d.q_mean_ms > worst_q ? d.q_mean_ms : worst_q;
	}
	printf("mean: detector util %.3f q %.1f ms (worst util %.3f, worst q %.1f ms); "
	       "none util %.3f q %.1f ms\n", su / runs, sq / runs, worst_u, worst_q, snu / runs,
	       snq / runs);
	return 0;
}
