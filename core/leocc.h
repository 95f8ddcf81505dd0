/* SPDX-License-Identifier: MIT */
/*
 * LeoCC core: the congestion control of "LeoCC" (shared/seeds/000_..., section 4) as pure,
 * integer-only C. One source for the kernel (BPF struct_ops, which includes leocc.c with
 * LEOCC_BPF defined), the simulator and QUIC (host library through crates/leocc-core-sys).
 *
 * Units, everywhere: times in microseconds (u64 absolute, u32 durations), rates in bytes per
 * second, windows in packets, gains in LEOCC_UNIT fixed point (1024 = 1.0). All per-flow state
 * lives in struct leocc_state; the core has no globals, no allocation, no floating point.
 *
 * Calling convention (one flow):
 *   leocc_default_params(&p);            edit p if wanted
 *   leocc_init(&s, &p, now_us);          once per flow (params are copied into the state)
 *   leocc_on_ack(&s, &sample, &out);     on every ACK that carries a rate sample; apply out
 *   leocc_on_reconfig(&s, &event);       whenever the detector reports a reconfiguration;
 *                                        duplicates (same or older seq) are ignored, so it is
 *                                        fine to call it on every ACK with the latest event
 *   leocc_on_path(&s, now_us, rtt_us);   whenever a terminal-PoP RTT probe result is known
 *   leocc_view(&s, &view);               read-only snapshot for logs and plots
 * All times passed in must come from one monotonic clock (e.g. CLOCK_MONOTONIC in microseconds,
 * which is what TCP's tcp_clock_us() and bpf_ktime_get_ns() use).
 *
 * See docs/algorithm.md for the model, every parameter and what differs from the authors'
 * kernel module.
 */
#ifndef LEOCC_H
#define LEOCC_H

#include "leocc_types.h"

/* Fixed-point unit of every gain and coefficient: 1024 = 1.0. */
#define LEOCC_UNIT 1024u

/* Number of RTT histogram bins of the middle-pass filter (each params.mpf_bin_us wide; at
 * most 64, the band search keeps them in one bitmap). */
#define LEOCC_MPF_BINS 48
#define LEOCC_MPF_WORDS (LEOCC_MPF_BINS / 4) /* 16-bit counters packed four per u64 */

/* Modes of the state machine (leocc_view.mode). Paper Fig. 9 plus BBR's Drain. */
#define LEOCC_MODE_STARTUP 0u /* exponential search for the bottleneck bandwidth */
#define LEOCC_MODE_DRAIN 1u   /* drain the queue Startup built */
#define LEOCC_MODE_CRUISE 2u  /* Dynamic Cruise (section 4.2.1) */
#define LEOCC_MODE_RECONF 3u  /* Reconfiguration Adaptation (section 4.2.2) */

/* What leocc_on_reconfig did with an event (its return value). */
#define LEOCC_RCF_IGNORED 0u  /* duplicate, out of order or stale event */
#define LEOCC_RCF_ADAPT 1u    /* windows cut, Reconfiguration Adaptation entered */
/* 2 was SKIPPED (the section 4.3 skip, removed); not reused, so old logs stay readable. */
#define LEOCC_RCF_CUT_ONLY 3u /* windows cut, no adaptation (still in Startup) */
#define LEOCC_RCF_WEAK 4u     /* confidence below params.rcf_min_confidence: not acted on */
#define LEOCC_RCF_MERGED 5u   /* inside or too close to the last adaptation, or over the
			       * adaptation budget: not acted on */

/* leocc_reconfig_event.confidence of an event the detector is sure of. */
#define LEOCC_CONF_FULL 100u

/*
 * The parameters: one table, LEOCC_PARAMS(X), one row per field of struct leocc_params in
 * struct order:
 *
 *   X(field, default, min, max, "unit", "what it is", "where the default comes from")
 *
 * Everything about a parameter comes from its row: the field of struct leocc_params (below),
 * its value in leocc_default_params, its range, and, in the host build, the row that
 * leocc_param_range exports, from which crates/leocc-core-sys takes the names, units, docs,
 * defaults and ranges (`leocc sim --param` and `--list-params`, `leocc kernel params --set`)
 * and generates the parameter table of docs/algorithm.md; its build script generates the Rust
 * mirror of the struct from these rows (a test checks every offset). Adding a parameter is one
 * row here and its use in leocc.c.
 * Gains are in LEOCC_UNIT fixed point (unit "x1024"); every field is a leocc_u32. The strings
 * exist only in the host library (the BPF build never expands them).
 *
 * The ranges: leocc_init clamps every field into its row (sanitize_params), and the BPF
 * congestion control runs that same leocc_init on whatever the pinned params map holds, so no
 * map content, whichever tool wrote it, reaches the algorithm out of range; the host library
 * refuses values outside them. Every default lies inside (checked at compile time). Why each
 * bound, briefly:
 *   pacing gains: a probe must exceed the rate it probes, or the estimate, measured at the
 *     rate sent, never grows (all gains at 1x pinned a flow at 2 packets per RTT): Startup
 *     >= 1.5x, the adaptation's probe >= 1.25x, the cruise burst bco >= 1.05x (the authors'
 *     congested burst); 4x (2x for the cruise burst, sent every cycle) doubles the queue
 *     every round trip, beyond it a gain only fills buffers. Drain and dco: 0.25x empties a
 *     queue within a round; 0.9x (drain) or 1x (dco) still drains or holds.
 *   cwnd gains: cwnd_gain >= 1.25x leaves room for the default burst (the pacing rate, not
 *     cwnd, sets the operating point); the congested one may hold 1 BDP (its default);
 *     above 4 BDP the window no longer bounds the damage of a wrong rate.
 *   windows in microseconds: 1 ms (the clock's useful resolution on any path) up to 60 s
 *     (four Starlink intervals; older history describes another path).
 *   windows: min_cwnd >= 2 (one packet in flight stalls on delayed ACKs), <= 1000 (a floor,
 *     not an operating point: above it the floor, not the model, sets the rate on any path
 *     under ~1000 packets of BDP); init_cwnd the same (RFC 6928: 10).
 * Each row's second line is its range, with the reason for that row's bounds.
 */
/* The shortest cruise cycle: burst, drain, and the first phase that takes eq. 4's verdict
 * (leocc.c asserts it against its phase numbers). */
#define LEOCC_CYCLE_LEN_MIN 4u
#define LEOCC_PARAMS(X)                                                                         \
	X(startup_gain, LEOCC_UNIT * 2885 / 1000 + 1,                                          \
	  LEOCC_UNIT * 3 / 2, 4 * LEOCC_UNIT, /* pacing gain (see above) */                    \
	  "x1024", "pacing gain in Startup (2.885)",                                           \
	  "BBR's 2/ln 2; authors' high_gain")                                                  \
	X(drain_gain, LEOCC_UNIT * 1000 / 2885,                                                \
	  LEOCC_UNIT / 4, LEOCC_UNIT * 9 / 10, /* 1x or more would never drain */              \
	  "x1024", "pacing gain in Drain (1/2.885)",                                           \
	  "BBR; authors")                                                                      \
	X(cwnd_gain, LEOCC_UNIT * 2,                                                           \
	  LEOCC_UNIT * 5 / 4, 4 * LEOCC_UNIT, /* room for a bco burst (see above) */           \
	  "x1024", "cwnd = cwnd_gain x BDP + cwnd_headroom",                                   \
	  "BBR; authors")                                                                      \
	X(bco, LEOCC_UNIT * 5 / 4,                                                             \
	  LEOCC_UNIT * 21 / 20, 2 * LEOCC_UNIT, /* probe gain; 2x doubles the queue */         \
	  "x1024", "burst coefficient: pacing gain of the cruise burst",                       \
	  "paper 4.2.1")                                                                       \
	X(dco, LEOCC_UNIT * 3 / 4,                                                             \
	  LEOCC_UNIT / 4, LEOCC_UNIT, /* drain gain (see above) */                             \
	  "x1024", "drain coefficient: pacing gain of the cruise drain",                       \
	  "paper 4.2.1")                                                                       \
	X(bco_congested, LEOCC_UNIT * 21 / 20,                                                 \
	  LEOCC_UNIT * 21 / 20, 2 * LEOCC_UNIT, /* as bco */                                   \
	  "x1024", "burst coefficient while congested",                                        \
	  "authors' module: 1.05 (paper: \"slightly decreases\")")                             \
	X(ra_inflight_gain, LEOCC_UNIT / 2,                                                    \
	  LEOCC_UNIT / 4, LEOCC_UNIT, /* a cap: at most the old BDP */                         \
	  "x1024", "inflight cap of the adaptation, times bBW_m x bRTT_l",                     \
	  "paper 4.2.2")                                                                       \
	X(ra_probe_gain, LEOCC_UNIT * 3 / 2,                                                   \
	  LEOCC_UNIT * 5 / 4, 4 * LEOCC_UNIT, /* probe gain (see above) */                     \
	  "x1024", "pacing gain of the adaptation's bandwidth probe",                          \
	  "ours; tests step_up_at_reconfig, path_change_at_reconfig")                          \
	X(cycle_len, 8,                                                                        \
	  LEOCC_CYCLE_LEN_MIN, 64, /* 64 RTTs: slower than BBR's slowest */                    \
	  "phases", "length of a cruise cycle (a phase is about one bRTT_l)",                  \
	  "authors' CYCLE_LEN")                                                                \
	X(bw_win_rounds, 8 + 2,                                                                \
	  2, 100, /* a reset seeds 2; 100: 4 s at 40 ms */                                     \
	  "round trips", "window of the bBW_a max filter",                                     \
	  "authors: CYCLE_LEN + 2")                                                            \
	X(rtt_win_us, 10 * 1000 * 1000,                                                        \
	  1000, 60000000, /* window (see above) */                                             \
	  "us", "W_RT, window of the RTT range filters",                                       \
	  "ours (the authors' min-RTT window is 20 s; Starlink intervals are 15 s, so events "  \
	  "cut it first)")                                                                     \
	X(delta_rtt_us, 0,                                                                     \
	  0, 1000000, /* 0: authors; 1 s: any LEO queue */                                     \
	  "us", "Delta_RTT of eq. 4, above the probe's RTT range",                             \
	  "authors' code (their 5-20 ms is the range width, which comes from the probe here)") \
	X(mpf_bin_us, 1000,                                                                    \
	  100, 100000, /* 0.1 ms resolves bands; 48 x 0.1 s */                                 \
	  "us", "width of one middle-pass filter histogram bin",                               \
	  "ours: 1 ms resolution of the bands")                                                \
	X(mpf_band_share_pct, 5,                                                               \
	  1, 50, /* above 50 % no two bins are bands */                                        \
	  "%", "share of the window's samples that makes a bin part of a band",                \
	  "ours; tests mpf_bands, band_switch")                                                \
	X(kal_q, 4,                                                                            \
	  1, 10000, /* 0 freezes it; 1e4: raw samples */                                       \
	  "dimensionless", "Kalman process variance",                                          \
	  "authors' var_Q")                                                                    \
	X(kal_r, 4,                                                                            \
	  0, 10000, /* 0: raw samples; 1e4: slow */                                            \
	  "dimensionless", "Kalman measurement variance",                                      \
	  "authors' var_R")                                                                    \
	X(kal_p0, 25,                                                                          \
	  0, 10000, /* x256 fits the u32 covariance */                                         \
	  "dimensionless", "Kalman initial covariance",                                        \
	  "authors' initial p_post")                                                           \
	X(full_bw_growth_pct, 25,                                                              \
	  5, 100, /* under 5 %, noise keeps Startup */                                         \
	  "% per round", "Startup ends when the bandwidth grows less than this ...",           \
	  "BBR; authors")                                                                      \
	X(full_bw_rounds, 3,                                                                   \
	  1, 10, /* each at 2.885x doubles the queue */                                        \
	  "rounds", "... for this many rounds in a row",                                       \
	  "BBR; authors")                                                                      \
	X(ra_min_rtt_samples, 8,                                                               \
	  0, 1000, /* 0: none (the drain bound holds) */                                       \
	  "samples", "fresh RTT samples before the adaptation's capped step may end",          \
	  "ours")                                                                              \
	X(ra_max_drain_us, 200 * 1000,                                                         \
	  1000, 2000000, /* 2 s: ten BBR ProbeRTTs, capped */                                  \
	  "us", "bound on the adaptation's capped step",                                       \
	  "authors' ProbeRTT duration")                                                        \
	X(ra_probe_max_rounds, 8,                                                              \
	  1, 64, /* as cycle_len */                                                            \
	  "rounds", "bound on the adaptation's bandwidth probe",                               \
	  "ours: a bound")                                                                     \
	X(drain_phase_max_rounds, 2,                                                           \
	  1, 16, /* 0 skips the drain; 16 RTTs idle */                                         \
	  "x bRTT_l", "bound on a cruise drain phase",                                         \
	  "ours (paper: 1; 4 made flows pay for each other's queue, \"Several flows\")")       \
	X(nonsat_spike_us, 10 * 1000,                                                          \
	  1000, 1000000, /* as delta_rtt_us (only reported) */                                 \
	  "us", "rise of RTT_non-sat over its window minimum that counts as a spike",          \
	  "ours: = Delta_RTT")                                                                 \
	X(path_stale_us, 1000 * 1000,                                                          \
	  10000, 60000000, /* a 10 ms probe period to a window */                              \
	  "us", "a terminal-PoP RTT older than this is ignored",                               \
	  "ours: 100 probe periods of 10 ms")                                                  \
	X(rcf_max_age_us, 1000 * 1000,                                                         \
	  1000, 60000000, /* window (see above) */                                             \
	  "us", "an event older than this when delivered is ignored",                          \
	  "ours: older events are history")                                                    \
	X(init_cwnd, 10,                                                                       \
	  2, 1000, /* window (see above) */                                                    \
	  "packets", "initial window",                                                         \
	  "RFC 6928")                                                                          \
	X(min_cwnd, 4,                                                                         \
	  2, 1000, /* window (see above) */                                                    \
	  "packets", "floor of every window",                                                  \
	  "BBR; authors")                                                                      \
	X(cwnd_headroom, 3,                                                                    \
	  0, 100, /* BBR: 3; 100 is a burst, not slack */                                      \
	  "packets", "added to cwnd_gain x BDP",                                               \
	  "BBR's 3 TSO segments, simplified")                                                  \
	X(default_rtt_us, 1000,                                                                \
	  1000, 1000000, /* BBR: 1 ms; less bursts at start */                                 \
	  "us", "RTT assumed before the first sample",                                         \
	  "BBR: 1 ms before any RTT sample")                                                   \
	X(rcf_min_confidence, 50,                                                              \
	  0, LEOCC_CONF_FULL, /* a confidence, 0 .. 100 */                                     \
	  "0-100", "events the detector graded below this confidence are not acted on",        \
	  "ours: a coin flip is not an event")                                                 \
	X(path_min_samples, 20,                                                                \
	  0, 1000, /* 0: never; 1000: 10 s of probes */                                        \
	  "probe RTTs", "probe RTTs since the last event before their band width sets the "    \
	  "RTT range (0: never)",                                                              \
	  "ours: 200 ms of 10 ms probes (the authors take 100; the range is needed sooner, "    \
	  "and refines as more arrive)")                                                       \
	X(cwnd_gain_congested, LEOCC_UNIT,                                                     \
	  LEOCC_UNIT, 4 * LEOCC_UNIT, /* cwnd gain (see above) */                              \
	  "x1024", "cwnd gain while congested",                                                \
	  "ours: one BDP while congested above a probe-measured range (set_output)")          \
	X(pacing_margin_pct, 0,                                                                \
	  0, 10, /* authors: 1; more idles the link */                                         \
	  "%", "pace this much under the target",                                              \
	  "authors: 1; no gain measured here (ablation margin-1pct)")                          \
	X(rcf_min_spacing_us, 1000 * 1000,                                                     \
	  0, 60000000, /* 0: no merging; else a window */                                      \
	  "us", "events closer than this to the last adaptation merge into it",                \
	  "ours: real reconfigurations are >= 11 s apart (OneWeb; Starlink 15 s), an "          \
	  "adaptation lasts a few RTTs")                                                       \
	X(rcf_budget_pct, 5,                                                                   \
	  0, 100, /* a percentage */                                                           \
	  "% of time", "at most this share of the time in adaptations (long run) ...",         \
	  "ours: ~0.3 s of adaptation per 11 s (OneWeb's grid) is under 3 %")                  \
	X(rcf_budget_max_us, 1000 * 1000,                                                      \
	  0, 60000000, /* 0: only what accrues; a window */                                    \
	  "us", "... with at most this much saved up",                                         \
	  "ours: a few adaptations saved up")                                                  \
	X(delta_rtt_own_us, 10 * 1000,                                                         \
	  0, 1000000, /* as delta_rtt_us */                                                    \
	  "us", "Delta_RTT while the RTT range is the flow's own (no probe)",                  \
	  "ours: the flow's own dense bins miss bands it has not visited yet (the authors' "    \
	  "simulation variant: 5-20 ms)")                                                      \
	X(competing_cycles, 2,                                                                 \
	  0, 100, /* 0: never (counter stops at 255) */                                        \
	  "cycles", "cycles in a row whose queue never emptied that make the flow compete, "   \
	  "and in which it emptied that end it (0: never)",                                    \
	  "ours: one may be a capacity dip, or BBRv1's ProbeRTT")                              \
	X(mpf_half_share, 1,                                                                   \
	  0, 1, /* flag */                                                                     \
	  "flag", "1: a second band search at half the share when none is dense",              \
	  "ours, see mpf_range (ablation full-share)")                                         \
	X(ra_second_round, 1,                                                                  \
	  0, 1, /* flag */                                                                     \
	  "flag", "1: a second capped round tells a slower link from a longer path",           \
	  "ours, see ra_link_limited (ablation one-capped)")                                   \
	X(bw_kal_every_sample, 0,                                                              \
	  0, 1, /* flag */                                                                     \
	  "flag", "1: bBW_m fed every delivery-rate sample, not each round's largest",         \
	  "authors: each round's largest rate (ablation kal-every)")                          \
	X(drain_cwnd, 1,                                                                       \
	  0, 1, /* flag */                                                                     \
	  "flag", "1: the drain phase holds inflight to target x bRTT_h before it paces",      \
	  "ours, see drain_capped (ablation pace-drain)")                                         \
	X(drain_to_range, 1,                                                                   \
	  0, 1, /* flag */                                                                     \
	  "flag", "1: the drain phase also waits for the RTT to be back in the band range",    \
	  "ours, see run_cruise (ablation to-inflight)")                                      \
	X(cycle_grid, 1,                                                                       \
	  0, 1, /* flag */                                                                     \
	  "flag", "1: cruise bursts start on a clock grid, so flows drain together",           \
	  "ours, see grid_ticked (ablation free-cycles)")

/* Tunables: the fields of LEOCC_PARAMS, in its order. leocc_default_params() fills its
 * defaults. */
struct leocc_params {
#define LEOCC_PARAM_FIELD(field, ...) leocc_u32 field;
	LEOCC_PARAMS(LEOCC_PARAM_FIELD)
#undef LEOCC_PARAM_FIELD
};

#ifndef LEOCC_BPF
/* One row of LEOCC_PARAMS, for FFI callers (host build only). */
struct leocc_param_range {
	const char *name;   /* the field's name in struct leocc_params */
	leocc_u32 offset;   /* its byte offset in struct leocc_params */
	leocc_u32 def;      /* its value in leocc_default_params */
	leocc_u32 min, max; /* inclusive */
	const char *unit;   /* "x1024" (LEOCC_UNIT fixed point), "us", "packets", "%", ... */
	const char *doc;    /* what it is, one line */
	const char *source; /* where the default comes from */
};
#endif

/* What Linux gives a congestion control on an ACK (struct rate_sample plus tcp_sock). */
struct leocc_ack_sample {
	leocc_u64 now_us;          /* time of this ACK */
	leocc_u64 delivered_total; /* tp->delivered: packets delivered over the flow's life */
	leocc_u64 lost_total;      /* tp->lost: packets marked lost over the flow's life */
	leocc_u64 interval_us;     /* rs->interval_us; 0 if this ACK has no rate sample */
	leocc_u32 delivered;       /* rs->delivered: packets delivered over interval_us */
	leocc_u32 rtt_us;          /* rs->rtt_us; 0 if none */
	leocc_u32 acked_sacked;    /* rs->acked_sacked: packets newly (s)acked by this ACK */
	leocc_u32 losses;          /* rs->losses: packets newly marked lost by this ACK */
	leocc_u32 prior_in_flight; /* rs->prior_in_flight, packets */
	leocc_u32 in_flight;       /* tcp_packets_in_flight() after this ACK, packets */
	leocc_u32 app_limited;     /* rs->is_app_limited (0 or 1) */
	leocc_u32 mss;             /* bytes per packet (tp->mss_cache) */
	leocc_u32 ca_state;        /* icsk_ca_state: 0 Open, 1 Disorder, 2 CWR, 3 Recovery, 4 Loss */
	leocc_u32 _pad;            /* keep the layout identical on every ABI */
};

/* What the congestion control asks for after an ACK. */
struct leocc_output {
	leocc_u64 pacing_rate; /* bytes per second */
	leocc_u32 cwnd;        /* packets */
	leocc_u32 _pad;
};

/* One reconfiguration reported by the detector. */
struct leocc_reconfig_event {
	leocc_u64 time_us; /* when the new path began: the end of the outage, i.e. the first probe
			    * reply after the gap (same clock as leocc_ack_sample.now_us). Samples
			    * measured before it are dropped from every window. */
	leocc_u64 seq;     /* detector's counter, strictly increasing; 0 is never a valid event */
	leocc_u32 confidence; /* 0 .. LEOCC_CONF_FULL: how sure the detector is that this was a
			       * reconfiguration; a detector that does not grade its events
			       * passes LEOCC_CONF_FULL */
	leocc_u32 _pad;
};

/* Read-only snapshot of the model, for logs and plots. */
struct leocc_view {
	leocc_u32 mode;               /* LEOCC_MODE_* */
	leocc_u32 congested;          /* eq. 4: bRTT_latest >= bRTT_h + Delta_RTT */
	leocc_u64 bbw_a;              /* bytes/s, aggressive estimate (max filter) */
	leocc_u64 bbw_m;              /* bytes/s, moderate estimate (Kalman) */
	leocc_u64 target_rate;        /* bytes/s, rate_target of eq. 4 */
	leocc_u64 pacing_rate;        /* bytes/s, last output */
	leocc_u32 cwnd;               /* packets, last output */
	leocc_u32 brtt_l;             /* us, lower end of the base RTT range */
	leocc_u32 brtt_h;             /* us, upper end of the base RTT range */
	leocc_u32 brtt_latest;        /* us, Kalman-filtered latest RTT */
	leocc_u32 rtt_nonsat;         /* us, bRTT_latest - RTT_term-PoP (0 if unknown) */
	leocc_u32 terrestrial_bottleneck; /* section 4.3 verdict (1 = terrestrial) */
	leocc_u32 cycle_phase;        /* 0 .. cycle_len-1 in cruise */
	leocc_u32 competing;          /* 1: a standing queue others keep: judged on its own range */
	leocc_u64 last_reconfig_us;   /* time of the last accepted or skipped event, 0 if none */
	leocc_u64 reconfigs;          /* events that cut the windows */
	leocc_u64 reconfigs_skipped;  /* events not adapted to: weak, merged or over budget */
	leocc_u64 rounds;             /* round trips counted so far */
};

/* Internal filter states. Part of the ABI only through sizeof(struct leocc_state). */
struct leocc_maxfilt {            /* windowed running max over round trips (3 candidates) */
	leocc_u64 v[3];
	leocc_u32 round[3];
	leocc_u32 _pad;
};

struct leocc_kalman {             /* scalar Kalman filter, random-walk model */
	leocc_u64 x;                  /* estimate (units of the measured quantity) */
	leocc_u32 p;                  /* error covariance, x256 */
	leocc_u32 valid;
};

struct leocc_mpf_half {           /* one half of the middle-pass filter window */
	leocc_u64 count4[LEOCC_MPF_WORDS]; /* bin 4w+k: bits 16k..16k+15 of word w */
	leocc_u32 total;              /* samples in this half, bins and overflow */
	leocc_u32 min_rtt_us;         /* raw minimum of this half (0 = none) */
	leocc_u32 nonsat_min_us;      /* minimum RTT_non-sat seen in this half (0 = none) */
	leocc_u32 nonsat_valid;
};

struct leocc_mpf {                /* RTT-band histogram over the last W_RT/2..W_RT */
	struct leocc_mpf_half half[2];
	leocc_u64 cur_start_us;       /* when the current half began */
	leocc_u32 base_us;            /* RTT at the lower edge of bin 0 */
	leocc_u32 cur;                /* index of the current half */
};

/*
 * Per-flow state. Fits in BPF sk_storage; sizeof(struct leocc_state) is 1064 bytes on x86-64
 * and BPF (checked by core/tests, host and BPF builds). Treat every field as private.
 */
struct leocc_state {
	struct leocc_params p;
	struct leocc_maxfilt bw_max;  /* bBW_a */
	struct leocc_kalman bw_kal;   /* bBW_m */
	struct leocc_kalman rtt_kal;  /* bRTT_latest */
	struct leocc_mpf mpf;         /* bRTT_l, bRTT_h, RTT_non-sat minimum */
	leocc_u64 last_now_us;        /* latest ACK time seen */
	leocc_u64 window_start_us;    /* samples measured before this are dropped */
	leocc_u64 last_rcf_us;        /* last event seen (accepted or skipped) */
	leocc_u64 last_rcf_seq;
	leocc_u64 reconfigs;
	leocc_u64 reconfigs_skipped;
	leocc_u64 next_round_delivered; /* round trip ends when prior_delivered reaches this */
	leocc_u64 mode_start_us;      /* entry into the current mode or RA step */
	leocc_u64 phase_start_us;     /* entry into the current cruise phase */
	leocc_u64 path_us;            /* time of the last terminal-PoP RTT */
	leocc_u64 target_rate;        /* bytes/s, eq. 4 */
	leocc_u64 pacing_rate;        /* last output, bytes/s */
	leocc_u64 full_bw;            /* Startup/RA probe: bw at the last growth check */
	leocc_u64 round_bw;           /* largest fresh delivery rate of the current round */
	leocc_u64 rate_saved;         /* rate*_target saved on entry into RA */
	leocc_u64 ra_cap_bytes;       /* RA inflight cap, 0.5 x bBW_m x bRTT_l */
	leocc_u64 ra_bw;              /* largest fresh delivery rate during RA */
	leocc_u64 ra_prev_bw;         /* ra_bw of the first capped round, when a second one runs */
	leocc_u64 adapt_credit_us;    /* adaptation budget left (see rcf_budget_pct) */
	leocc_u64 last_adapt_us;      /* when the last adaptation started */
	leocc_u32 ra_old_rtt_l;       /* bRTT_l of the interval before the event */
	leocc_u32 ra_step;            /* 0: capped drain, 1: bandwidth probe */
	leocc_u32 ra_fresh_rtts;      /* RTT samples measured after the event */
	leocc_u32 ra_probe_rounds;
	leocc_u32 round;              /* round trips so far */
	leocc_u32 round_started;      /* this ACK started a new round */
	leocc_u32 mode;
	leocc_u32 full_bw_cnt;
	leocc_u32 cycle_phase;
	leocc_u32 congested;
	leocc_u32 terrestrial;
	leocc_u32 rtt_nonsat;         /* us */
	leocc_u32 path_rtt_us;        /* last terminal-PoP RTT */
	leocc_u32 brtt_l;
	leocc_u32 brtt_h;
	leocc_u32 cwnd;
	leocc_u32 mss;
	leocc_u32 ra_capped;          /* RA step 0 sub-step: above cap, at cap, measuring */
	leocc_u32 ra_recaps;          /* RA: a second capped round is running */
	leocc_u32 ra_prev_rtt;        /* bRTT_latest at the end of the first capped round */
	leocc_u32 drain_start_rtt;    /* bRTT_latest when the current drain phase began */
	leocc_u32 range_from_path;    /* bRTT_h came from the probe's band width */
	leocc_u32 band_learning;      /* elevated RTT survived a drain: a band, let the MPF learn it */
	leocc_u32 path_width_us;      /* the probe's band width at the last refresh (0: none) */
	leocc_u32 life_min_rtt_us;    /* smallest RTT sample of the flow's life (0: none); kept
				       * across events, read only by Startup's exit test */
	leocc_u8 failed_drains;       /* congested cruise cycles in a row whose drain failed */
	leocc_u8 standing_cycles;     /* cruise cycles in a row whose queue never emptied */
	leocc_u8 competing;           /* another flow holds a standing queue (judge_standing_queue) */
	leocc_u8 drain_hold;          /* this drain phase's cwnd holds until inflight is down */
	leocc_u8 round_capped;        /* this round was held by the congested one-BDP cwnd */
	leocc_u8 cwnd_capped;         /* the last output used cwnd_gain_congested */
	leocc_u8 loss_drained;        /* a loss already started a drain in this cycle */
	leocc_u8 empty_cycles;        /* cruise cycles in a row whose queue emptied */
	leocc_u32 path_lo_us;         /* lower end of the probe's band range (0: unknown) */
	leocc_u32 cycle_excess_us;    /* smallest RTT over path_lo_us this cycle (NO_EXCESS: none) */
	leocc_u32 excess_floor_us[2]; /* smallest over it in this and the last W_RT: the path's
				       * own part the probe does not see (terrestrial, grants) */
	leocc_u64 excess_floor_start_us; /* when excess_floor_us[0] began */
	leocc_u64 own_range_until_us; /* the probe's range misses this flow's RTTs: own range */
	leocc_u64 cycle_start_us;     /* when the current cruise cycle's burst began */
	leocc_u32 path_hi_us;         /* upper end of the probe's band range (0: unknown) */
	leocc_u32 path_high;          /* probes in a row above it */
	leocc_u64 path_steps;         /* path changes seen from the probe's level alone */
	struct leocc_mpf path_mpf;    /* the PoP probe's RTT bands since the last event */
};

LEOCC_API void leocc_default_params(struct leocc_params *params);
LEOCC_API void leocc_init(struct leocc_state *s, const struct leocc_params *params,
			  leocc_u64 now_us);
LEOCC_API void leocc_on_ack(struct leocc_state *s, const struct leocc_ack_sample *a,
			    struct leocc_output *out);
LEOCC_API leocc_u32 leocc_on_reconfig(struct leocc_state *s,
				      const struct leocc_reconfig_event *e);
LEOCC_API void leocc_on_path(struct leocc_state *s, leocc_u64 now_us,
			     leocc_u32 term_pop_rtt_us);
LEOCC_API void leocc_view(const struct leocc_state *s, struct leocc_view *v);
/* sizeof(struct leocc_state), for FFI callers that allocate it as opaque bytes. */
LEOCC_API leocc_u32 leocc_state_size(void);
#ifndef LEOCC_BPF
/* Row `index` of LEOCC_PARAMS (struct order) into *row: 1, or 0 past the last row. */
LEOCC_API int leocc_param_range(leocc_u32 index, struct leocc_param_range *row);
#endif

#endif /* LEOCC_H */
