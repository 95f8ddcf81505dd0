/* SPDX-License-Identifier: MIT */
/* bpf/leocc_signal.h as the host compiler lays it out: what the Rust mirror (src/lib.rs) is
 * tested against. Nothing here runs outside the tests. */
#include <stddef.h>
#include "leocc_signal.h"

#define FIELD(name) \
	size_t leocc_signal_abi_off_##name(void) { return offsetof(struct leocc_signal, name); }

size_t leocc_signal_abi_size(void) { return sizeof(struct leocc_signal); }
FIELD(reconfig_time_ns)
FIELD(seq)
FIELD(probe_time_ns)
FIELD(term_pop_rtt_us)
FIELD(flags)
FIELD(check)

const char *leocc_signal_abi_pin_dir(void) { return LEOCC_PIN_DIR; }
const char *leocc_signal_abi_link_pin(void) { return LEOCC_LINK_PIN; }
const char *leocc_signal_abi_signal_pin(void) { return LEOCC_SIGNAL_PIN; }
const char *leocc_signal_abi_stats_pin(void) { return LEOCC_STATS_PIN; }
unsigned long long leocc_signal_abi_stale_ns(void) { return LEOCC_SIGNAL_STALE_NS; }
unsigned long long leocc_signal_abi_magic(void) { return LEOCC_SIGNAL_MAGIC; }
unsigned int leocc_signal_abi_conf_given(void) { return LEOCC_SIGNAL_CONF_GIVEN; }
unsigned int leocc_signal_abi_conf_mask(void) { return LEOCC_SIGNAL_CONF_MASK; }
unsigned int leocc_signal_abi_conf_full(void) { return LEOCC_SIGNAL_CONF_FULL; }

/* The header's own functions on an entry given as the Rust mirror's bytes. */
unsigned long long leocc_signal_abi_check(const struct leocc_signal *s) { return leocc_signal_check(s); }
unsigned int leocc_signal_abi_confidence(const struct leocc_signal *s) { return leocc_signal_confidence(s); }
