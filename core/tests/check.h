/* SPDX-License-Identifier: MIT */
/* Minimal assert-style checks for the core tests: a failed check prints file, line, the
 * expression and the values, marks the current test failed and carries on. */
#ifndef LEOCC_TEST_CHECK_H
#define LEOCC_TEST_CHECK_H
#include <stdio.h>

extern int check_failures;

#define CHECK(cond, ...)                                                                  \
	do {                                                                              \
		if (!(cond)) {                                                            \
			check_failures++;                                                 \
			fprintf(stderr, "%s:%d: CHECK failed: %s: ", __FILE__, __LINE__,  \
				#cond);                                                   \
			fprintf(stderr, __VA_ARGS__);                                     \
			fprintf(stderr, "\n");                                            \
		}                                                                         \
	} while (0)

/* Every test function; registered in test_main.c. */
void test_kalman(void);
void test_highest_bit(void);
void test_maxfilt_expiry(void);
void test_mpf_bands(void);
void test_mpf_expiry(void);
void test_window_cut(void);
void test_event_dedup(void);
void test_reconfig_in_startup(void);
void test_params_sanitized(void);
void test_state_size(void);
void test_garbage_inputs(void);
void test_startup(void);
void test_step_up_at_reconfig(void);
void test_reconfig_unchanged(void);
void test_path_change_at_reconfig(void);
void test_drop_at_reconfig(void);
void test_drop_without_reconfig(void);
void test_random_loss(void);
void test_loss_with_drift(void);
void test_band_switch(void);
void test_no_detector(void);
void test_bottleneck_discrimination(void);
void test_event_guards(void);
void test_false_event_probe_queue(void);
void test_clock_backwards(void);
void test_loss_drains_once_per_cycle(void);
void test_competing_hysteresis(void);
void test_cycles_share_the_grid(void);
void test_starlink_like(void);
void test_param_ranges(void);
#endif
