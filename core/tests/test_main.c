/* SPDX-License-Identifier: MIT */
/* Runs every core test and prints one line per test; exit status 1 if any check failed. */
#include <stdio.h>
#include <string.h>
#include "check.h"

int check_failures;

struct test {
	const char *name;
	void (*fn)(void);
};

static const struct test tests[] = {
	{"kalman", test_kalman},
	{"highest_bit", test_highest_bit},
	{"maxfilt_expiry", test_maxfilt_expiry},
	{"mpf_bands", test_mpf_bands},
	{"mpf_expiry", test_mpf_expiry},
	{"window_cut", test_window_cut},
	{"event_dedup", test_event_dedup},
	{"reconfig_in_startup", test_reconfig_in_startup},
	{"params_sanitized", test_params_sanitized},
	{"state_size", test_state_size},
	{"garbage_inputs", test_garbage_inputs},
	{"startup", test_startup},
	{"step_up_at_reconfig", test_step_up_at_reconfig},
	{"reconfig_unchanged", test_reconfig_unchanged},
	{"path_change_at_reconfig", test_path_change_at_reconfig},
	{"drop_at_reconfig", test_drop_at_reconfig},
	{"drop_without_reconfig", test_drop_without_reconfig},
	{"random_loss", test_random_loss},
	{"loss_with_drift", test_loss_with_drift},
	{"band_switch", test_band_switch},
	{"no_detector", test_no_detector},
	{"bottleneck_discrimination", test_bottleneck_discrimination},
	{"event_guards", test_event_guards},
	{"false_event_probe_queue", test_false_event_probe_queue},
	{"clock_backwards", test_clock_backwards},
	{"loss_drains_once_per_cycle", test_loss_drains_once_per_cycle},
	{"competing_hysteresis", test_competing_hysteresis},
	{"cycles_share_the_grid", test_cycles_share_the_grid},
	{"starlink_like", test_starlink_like},
	{"param_ranges", test_param_ranges},
};

int main(int argc, char **argv)
{
	int failed = 0;
	size_t i;

	for (i = 0; i < sizeof(tests) / sizeof(tests[0]); i++) {
		int before = check_failures;

		if (argc > 1 && !strstr(tests[i].name, argv[1]))
			continue;
		tests[i].fn();
		if (check_failures != before) {
			failed++;
			printf("FAIL %s\n", tests[i].name);
		} else {
			printf("ok   %s\n", tests[i].name);
		}
	}
	printf("core tests: %d failed\n", failed);
	return failed ? 1 : 0;
}
