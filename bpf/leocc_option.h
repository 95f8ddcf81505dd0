/* SPDX-License-Identifier: MIT */
/*
 * leocc_option.h — the wire format of the TCP option that carries the reconfiguration signal
 * from a satellite-side receiver to a LeoCC sender (seed 000 §5.1), and the counters the
 * sock_ops program (bpf/leocc_option.bpf.c) keeps. Shared with the Rust loader, which mirrors
 * every constant here; its tests check the mirror against this header compiled for the host
 * (crates/leocc-kernel/option_abi.c), the grade functions over every input included.
 *
 * RFC 6994 shared experimental option: kind 253, length, a 16-bit experiment identifier
 * (ExID, our "magic"), then our payload. All multi-byte fields are network byte order.
 *
 * Handshake (SYN and SYN-ACK), 5 bytes:
 *   0     kind = 253
 *   1     length = 5
 *   2..3  ExID = LEOCC_OPT_EXID
 *   4     version (high nibble) | capabilities (low nibble, LEOCC_CAP_*)
 * The opener puts it in its SYN when its host runs the option carrier; the listener answers
 * with its own capabilities in the SYN-ACK only if the SYN carried it (never to strangers).
 * A host writes the signal on a connection only if it can PRODUCE and the peer said CONSUME;
 * it reads the signal only if it can CONSUME and the peer said PRODUCE.
 *
 * Signal (any segment after the handshake, in practice the receiver's ACKs), 12 bytes:
 *   0     kind = 253
 *   1     length = 12
 *   2..3  ExID
 *   4     version (high nibble) | flags (low nibble: LEOCC_SIGF_EVENT, and in bits 1..3 the
 *         confidence grade of the last reconfiguration, LEOCC_SIGF_CONF_*)
 *   5..6  reconfiguration sequence number, low 16 bits (changes by one per event)
 *   7..8  age of the last reconfiguration, milliseconds, saturating at 0xffff
 *   9..10 terminal-PoP RTT, units of LEOCC_OPT_RTT_UNIT_US, saturating; 0 = unknown
 *   11    age of the detector's last probe reply, units of LEOCC_OPT_PROBE_AGE_UNIT_MS,
 *         saturating at 0xff (the receiver only writes fresh signals, so this stays small)
 * Ages instead of times: the two hosts' clocks are unrelated; the sender dates the event at
 * its own arrival time minus the age (the one-way delay of the ACK is the error, a few ms).
 * The option carries no rate and no window: it can only tell the sender "a reconfiguration
 * happened" and "the satellite hop's RTT is this" (see leocc_option.bpf.c for why that cannot
 * make the sender faster).
 */
#ifndef LEOCC_OPTION_H
#define LEOCC_OPTION_H

/* RFC 6994 shared experimental option kind. */
#define LEOCC_OPT_KIND 253
/* Our experiment identifier ("LC"); not IANA-registered (see docs/option.md). */
#define LEOCC_OPT_EXID 0x4c43
/* Version of the format above; a parser ignores (and counts) any other. */
#define LEOCC_OPT_VERSION 1
/* Length of the handshake option (SYN, SYN-ACK). */
#define LEOCC_OPT_SYN_LEN 5
/* Length of the signal option. */
#define LEOCC_OPT_SIG_LEN 12
/* Time unit of the terminal-PoP RTT field: 10 us gives 0.65 s of range at 16 bits. */
#define LEOCC_OPT_RTT_UNIT_US 10
/* Time unit of the probe-age field: the detector probes every 10 ms (DESIGN.md). */
#define LEOCC_OPT_PROBE_AGE_UNIT_MS 10

/* Capabilities, low nibble of byte 4 in the handshake option. */
#define LEOCC_CAP_PRODUCE 0x1 /* writes the signal (receiver role: runs a detector) */
#define LEOCC_CAP_CONSUME 0x2 /* reads the signal into LeoCC (sender role) */
/* Flags, low nibble of byte 4 in the signal option. */
#define LEOCC_SIGF_EVENT 0x1 /* at least one reconfiguration was detected: seq/age valid */
/* Bits 1..3 of byte 4: the detector's confidence in the last reconfiguration as a grade g:
 * 0 = not given (a version-1 writer from before grades: full confidence), else
 * confidence = (g - 1) * 100 / 6, i.e. 0, 16, 33, 50, 66, 83, 100. The writer rounds down
 * (g = 1 + confidence * 6 / 100), so an event below 50 never reads as 50. Version-1 readers
 * ignore these bits, so the version stays 1. */
#define LEOCC_SIGF_CONF_SHIFT 1
#define LEOCC_SIGF_CONF_MASK 0xe
#define LEOCC_SIGF_CONF_GRADES 6

/* A peer's reconfiguration claims closer together than this (ns) are dropped: Starlink
 * reconfigures every 15 s, OneWeb every ~11 s, aperiodic ones are rarer (seed 000 §3). */
#define LEOCC_OPT_MIN_EVENT_GAP_NS 1000000000ULL

/* Slots of the PERCPU_ARRAY `option_counters`, pinned at /sys/fs/bpf/leocc/option_counters. */
enum leocc_opt_counter {
	LEOCC_CNT_SYN_SENT = 0,       /* handshake options written (SYN or SYN-ACK) */
	LEOCC_CNT_PEER_CAPABLE,       /* connections whose peer answered with a valid option */
	LEOCC_CNT_PEER_PLAIN,         /* connections whose peer sent none: nothing more is sent */
	LEOCC_CNT_PRODUCING,          /* connections on which we write the signal */
	LEOCC_CNT_CONSUMING,          /* connections on which we read the signal */
	LEOCC_CNT_WRITTEN,            /* signal options written */
	LEOCC_CNT_NOT_FRESH,          /* segments sent without the option: no fresh local signal */
	LEOCC_CNT_NO_SPACE,           /* segments without the option: option space ran out */
	LEOCC_CNT_RECEIVED,           /* well-formed signal options read */
	LEOCC_CNT_BAD_LEN,            /* our ExID with a wrong length: ignored */
	LEOCC_CNT_BAD_VERSION,        /* our ExID with an unknown version: ignored */
	LEOCC_CNT_BAD_MAGIC,          /* kind 253 with another ExID where ours was expected */
	LEOCC_CNT_EVENTS,             /* reconfigurations accepted from peers */
	LEOCC_CNT_RATE_LIMITED,       /* reconfigurations dropped: < LEOCC_OPT_MIN_EVENT_GAP_NS */
	LEOCC_CNT_HISTORY,            /* events older than the connection: recorded, not fed */
	LEOCC_CNT_SAME_ACK,           /* cong_control ran on the ACK whose option was just parsed */
	LEOCC_CNT_MAX,
};

/* Confidence 0..100 -> grade 1..7 (bits 1..3 of byte 4 once shifted). */
static inline __u8 leocc_opt_conf_grade(__u32 confidence)
{
	if (confidence > 100)
		confidence = 100;
	return (__u8)(1 + confidence * LEOCC_SIGF_CONF_GRADES / 100);
}

/* Grade -> confidence; grade 0 (not given) is full confidence. */
static inline __u32 leocc_opt_conf_of_grade(__u8 grade)
{
	if (grade == 0 || grade > LEOCC_SIGF_CONF_GRADES + 1)
		return 100;
	return (__u32)(grade - 1) * 100 / LEOCC_SIGF_CONF_GRADES;
}

#endif /* LEOCC_OPTION_H */
