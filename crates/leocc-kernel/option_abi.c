/* SPDX-License-Identifier: MIT */
/* bpf/leocc_option.h compiled for the host: the constants and grade functions the Rust mirror
 * (src/option.rs) is tested against. Nothing here runs outside the tests. */
#include <linux/types.h>
#include "leocc_option.h"

unsigned long long leocc_option_abi(unsigned int which)
{
	switch (which) {
	case 0: return LEOCC_OPT_KIND;
	case 1: return LEOCC_OPT_EXID;
	case 2: return LEOCC_OPT_VERSION;
	case 3: return LEOCC_OPT_SYN_LEN;
	case 4: return LEOCC_OPT_SIG_LEN;
	case 5: return LEOCC_CAP_PRODUCE;
	case 6: return LEOCC_CAP_CONSUME;
	case 7: return LEOCC_SIGF_EVENT;
	case 8: return LEOCC_SIGF_CONF_SHIFT;
	case 9: return LEOCC_SIGF_CONF_MASK;
	case 10: return LEOCC_SIGF_CONF_GRADES;
	case 11: return LEOCC_OPT_RTT_UNIT_US;
	case 12: return LEOCC_OPT_PROBE_AGE_UNIT_MS;
	case 13: return LEOCC_OPT_MIN_EVENT_GAP_NS;
	case 14: return LEOCC_CNT_MAX;
	default: return ~0ull;
	}
}

__u8 leocc_option_abi_conf_grade(__u32 confidence) { return leocc_opt_conf_grade(confidence); }
__u32 leocc_option_abi_conf_of_grade(__u8 grade) { return leocc_opt_conf_of_grade(grade); }
