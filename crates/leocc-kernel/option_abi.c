/* SPDX-License-Identifier: MIT */
/* bpf/leocc_option.h compiled for the host: the constants and grade functions the Rust mirror
 * (src/option.rs) is tested against. Nothing here runs outside the tests. */
#include <linux/types.h>
#include "leocc_option.h"

#define CONST(name, value) \
	unsigned long long leocc_option_abi_##name(void) { return value; }

CONST(opt_kind, LEOCC_OPT_KIND)
CONST(opt_exid, LEOCC_OPT_EXID)
CONST(opt_version, LEOCC_OPT_VERSION)
CONST(opt_syn_len, LEOCC_OPT_SYN_LEN)
CONST(opt_sig_len, LEOCC_OPT_SIG_LEN)
CONST(cap_produce, LEOCC_CAP_PRODUCE)
CONST(cap_consume, LEOCC_CAP_CONSUME)
CONST(sigf_event, LEOCC_SIGF_EVENT)
CONST(sigf_conf_shift, LEOCC_SIGF_CONF_SHIFT)
CONST(sigf_conf_mask, LEOCC_SIGF_CONF_MASK)
CONST(sigf_conf_grades, LEOCC_SIGF_CONF_GRADES)
CONST(opt_rtt_unit_us, LEOCC_OPT_RTT_UNIT_US)
CONST(opt_probe_age_unit_ms, LEOCC_OPT_PROBE_AGE_UNIT_MS)
CONST(opt_min_event_gap_ns, LEOCC_OPT_MIN_EVENT_GAP_NS)
CONST(cnt_max, LEOCC_CNT_MAX)

__u8 leocc_option_abi_conf_grade(__u32 confidence) { return leocc_opt_conf_grade(confidence); }
__u32 leocc_option_abi_conf_of_grade(__u8 grade) { return leocc_opt_conf_of_grade(grade); }
