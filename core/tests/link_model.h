/* SPDX-License-Identifier: MIT */
/*
 * A small packet-level link model for the scenario tests: one bulk sender driven by the LeoCC
 * core, one FIFO bottleneck (piecewise-constant capacity, drop-tail buffer), a base RTT that
 * may switch between bands, random loss, outages, and an ideal detector that reports each
 * outage as a reconfiguration when it ends. ACKs follow their packets in order; rate samples
 * are computed as Linux's tcp_rate.c does (delivered / max(send interval, ACK interval)).
 */
#ifndef LEOCC_TEST_LINK_MODEL_H
#define LEOCC_TEST_LINK_MODEL_H
#include <stdint.h>
#include "../leocc.h"

#define SIM_MAX_SEGS 128
#define SIM_MAX_OUTAGES 16
#define SIM_RING (1u << 17)

struct sim_seg {           /* from start_us on (until the next segment) */
	uint64_t start_us;
	uint64_t cap_Bps;      /* bottleneck capacity, bytes/s */
	uint32_t rtt_us;       /* base RTT (propagation, no queue) */
	uint32_t pop_rtt_us;   /* terminal-PoP RTT the detector's probe sees without queue */
};

struct sim_outage {
	uint64_t start_us;
	uint64_t dur_us;
};

struct sim_pkt {
	uint64_t sent_us;
	uint64_t delivered_at_send;
	uint64_t delivered_mstamp;
	uint64_t first_tx_us;
	uint64_t ack_us;       /* when its ACK reaches the sender (0 = not yet departed) */
	int lost;
};

/* One call into the core, recorded with what the host build answered (for the BPF
 * equivalence test, which replays the calls into the BPF build). */
#define SIM_CALL_ACK 1
#define SIM_CALL_RECONFIG 2
#define SIM_CALL_PATH 3
struct sim_call {
	int op;
	uint32_t result;            /* leocc_on_reconfig's return */
	uint64_t now_us;            /* leocc_on_path */
	uint32_t rtt_us;            /* leocc_on_path */
	struct leocc_ack_sample ack;
	struct leocc_reconfig_event event;
	struct leocc_output out;
	struct leocc_view view;     /* after the call */
};

struct sim {
	/* configuration */
	struct sim_call *calls;     /* when set, every call is recorded here (up to max_calls) */
	size_t ncalls, max_calls;
	struct sim_seg segs[SIM_MAX_SEGS];
	int nsegs;
	struct sim_outage outages[SIM_MAX_OUTAGES];
	int noutages;
	int detector;              /* deliver reconfiguration events */
	uint32_t detect_delay_us;  /* event delivered this long after the outage ends */
	int path_probe;            /* call leocc_on_path every 10 ms */
	int queue_on_pop_path;     /* the bottleneck queue also delays the terminal-PoP probe */
	uint32_t loss_ppm;         /* random loss, parts per million */
	uint64_t buffer_bytes;
	uint32_t mss;
	uint64_t rng;
	/* controller */
	struct leocc_state cc;
	struct leocc_output out;
	uint32_t last_rcf_result;
	/* dynamic state */
	uint64_t now;
	uint64_t next_send_us;
	uint64_t next_probe_us;
	int next_outage_event;
	uint64_t sent, una, qhead;  /* ring indices: [una, qhead) departed, [qhead, sent) queued */
	uint64_t queue_bytes;
	uint64_t link_free_us;
	uint64_t delivered_total, delivered_mstamp, first_tx_us, lost_total;
	uint64_t rcf_seq;
	uint64_t min_rtt_us;
	uint64_t delivered_bytes;   /* for throughput measurements */
	uint64_t last_progress_us;  /* last ACK or send into an empty pipe (RTO timer base) */
	uint64_t rtos;              /* retransmission timeouts */
	int in_loss_state;          /* after an RTO until the next ACK: ca_state Loss */
	uint64_t acks;
	struct sim_pkt ring[SIM_RING];
};

/* A link of constant capacity and RTT; add segments and outages afterwards. */
void sim_init(struct sim *s, uint64_t cap_Bps, uint32_t rtt_us, uint64_t seed);
void sim_add_seg(struct sim *s, uint64_t start_us, uint64_t cap_Bps, uint32_t rtt_us);
void sim_add_outage(struct sim *s, uint64_t start_us, uint64_t dur_us);
/* Advance the simulation to t_us. */
void sim_run_until(struct sim *s, uint64_t t_us);
/* Current queueing delay at the bottleneck, microseconds. */
uint64_t sim_queue_delay_us(const struct sim *s);
const struct sim_seg *sim_seg_at(const struct sim *s, uint64_t t_us);
#endif
