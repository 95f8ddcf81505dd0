/* SPDX-License-Identifier: MIT */
/* The scenario tests' link model; see link_model.h. */
#include <string.h>
#include "link_model.h"

#define USEC 1000000ull
#define NEVER UINT64_MAX
/* The detector's probe period (paper 4.1.1: ICMP every 10 ms). */
#define PROBE_PERIOD_US 10000ull
/* Retransmission timeout when everything in flight is lost: Linux's RTO floor (200 ms) plus
 * the path's RTT. Without it a window of lost packets would stall the model for ever. */
#define RTO_MIN_US 200000ull

void sim_init(struct sim *s, uint64_t cap_Bps, uint32_t rtt_us, uint64_t seed)
{
	struct leocc_params p;

	memset(s, 0, sizeof(*s));
	s->segs[0].cap_Bps = cap_Bps;
	s->segs[0].rtt_us = rtt_us;
	s->segs[0].pop_rtt_us = rtt_us / 2;
	s->nsegs = 1;
	s->detector = 1;
	s->detect_delay_us = 10000;
	s->mss = 1500;
	/* 4 x BDP of buffer: deep, like satellite terminals, so that a bad controller shows as
	 * queueing delay rather than hiding behind drops. */
	s->buffer_bytes = cap_Bps * rtt_us / USEC * 4;
	s->rng = seed ? seed : 1;
	s->min_rtt_us = NEVER;
	leocc_default_params(&p);
	leocc_init(&s->cc, &p, 0);
	/* Before the first ACK: init_cwnd at Startup gain over a 1 ms RTT, as the kernel does. */
	s->out.cwnd = p.init_cwnd;
	s->out.pacing_rate = (uint64_t)p.init_cwnd * s->mss * USEC / p.default_rtt_us;
}

void sim_add_seg(struct sim *s, uint64_t start_us, uint64_t cap_Bps, uint32_t rtt_us)
{
	struct sim_seg *g = &s->segs[s->nsegs++];

	g->start_us = start_us;
	g->cap_Bps = cap_Bps;
	g->rtt_us = rtt_us;
	/* The segment's RTT change is the satellite's (a new path or band): the probe sees it;
	 * the terrestrial part (rtt - pop_rtt of the first segment) stays. */
	g->pop_rtt_us = rtt_us > s->segs[0].rtt_us - s->segs[0].pop_rtt_us ?
				rtt_us - (s->segs[0].rtt_us - s->segs[0].pop_rtt_us) : 1;
}

void sim_add_outage(struct sim *s, uint64_t start_us, uint64_t dur_us)
{
	s->outages[s->noutages].start_us = start_us;
	s->outages[s->noutages].dur_us = dur_us;
	s->noutages++;
}

const struct sim_seg *sim_seg_at(const struct sim *s, uint64_t t)
{
	const struct sim_seg *g = &s->segs[0];
	int i;

	for (i = 1; i < s->nsegs; i++)
		if (s->segs[i].start_us <= t)
			g = &s->segs[i];
	return g;
}

/* End of the outage covering t, or t if none. */
static uint64_t after_outage(const struct sim *s, uint64_t t)
{
	int i;

	for (i = 0; i < s->noutages; i++)
		if (t >= s->outages[i].start_us && t < s->outages[i].start_us + s->outages[i].dur_us)
			return s->outages[i].start_us + s->outages[i].dur_us;
	return t;
}

static uint32_t rnd_ppm(struct sim *s)
{
	/* xorshift64: deterministic per seed */
	s->rng ^= s->rng << 13;
	s->rng ^= s->rng >> 7;
	s->rng ^= s->rng << 17;
	return (uint32_t)(s->rng % 1000000);
}

static struct sim_call *record(struct sim *s, int op)
{
	struct sim_call *c;

	if (!s->calls || s->ncalls >= s->max_calls)
		return NULL;
	c = &s->calls[s->ncalls++];
	memset(c, 0, sizeof(*c));
	c->op = op;
	return c;
}

static void record_view(const struct sim *s, struct sim_call *c)
{
	if (c)
		leocc_view(&s->cc, &c->view);
}

static struct sim_pkt *pkt(struct sim *s, uint64_t i) { return &s->ring[i % SIM_RING]; }

uint64_t sim_queue_delay_us(const struct sim *s)
{
	uint64_t cap = sim_seg_at(s, s->now)->cap_Bps;

	return cap ? s->queue_bytes * USEC / cap : 0;
}

/* The head of the queue starts service at `start`: when does it leave the link? */
static uint64_t departure(const struct sim *s, uint64_t start)
{
	uint64_t cap;

	start = after_outage(s, start);
	cap = sim_seg_at(s, start)->cap_Bps;
	return start + (uint64_t)s->mss * USEC / cap;
}

static uint64_t in_flight(const struct sim *s) { return s->sent - s->una; }

static void send_one(struct sim *s)
{
	struct sim_pkt *p = pkt(s, s->sent);

	if (in_flight(s) == 0) {
		s->first_tx_us = s->delivered_mstamp = s->now;
		s->last_progress_us = s->now;
	}
	p->sent_us = s->now;
	p->delivered_at_send = s->delivered_total;
	p->delivered_mstamp = s->delivered_mstamp;
	p->first_tx_us = s->first_tx_us;
	p->ack_us = 0;
	p->lost = rnd_ppm(s) < s->loss_ppm || s->queue_bytes + s->mss > s->buffer_bytes;
	if (!p->lost) {
		if (s->queue_bytes == 0)
			s->link_free_us = departure(s, s->link_free_us > s->now ? s->link_free_us
										: s->now);
		s->queue_bytes += s->mss;
	}
	s->sent++;
	s->next_send_us = s->now + (uint64_t)s->mss * USEC / (s->out.pacing_rate ? s->out.pacing_rate : 1);
}

/* The packet at the head of the queue leaves the bottleneck now. */
static void depart_one(struct sim *s)
{
	struct sim_pkt *p;
	uint64_t ack;

	while (s->qhead < s->sent && pkt(s, s->qhead)->lost)
		s->qhead++;
	p = pkt(s, s->qhead);
	ack = s->now + sim_seg_at(s, s->now)->rtt_us;
	/* ACKs stay in order even when the RTT band drops. */
	if (s->qhead > s->una && ack < pkt(s, s->qhead - 1)->ack_us)
		ack = pkt(s, s->qhead - 1)->ack_us;
	p->ack_us = ack;
	s->qhead++;
	s->queue_bytes -= s->mss;
	if (s->queue_bytes)
		s->link_free_us = departure(s, s->now);
}

static uint64_t next_departed(struct sim *s)
{
	uint64_t i;

	for (i = s->una; i < s->qhead; i++)
		if (!pkt(s, i)->lost)
			return i;
	return NEVER;
}

static void ack_one(struct sim *s, uint64_t idx)
{
	struct sim_pkt *p = pkt(s, idx);
	struct leocc_ack_sample a;
	uint64_t losses = idx - s->una, send_elapsed, ack_elapsed;
	uint32_t prior = (uint32_t)in_flight(s);

	memset(&a, 0, sizeof(a));
	s->una = idx + 1;
	s->lost_total += losses;
	s->delivered_total++;
	s->delivered_bytes += s->mss;
	a.now_us = s->now;
	a.rtt_us = (uint32_t)(s->now - p->sent_us);
	if (a.rtt_us < s->min_rtt_us)
		s->min_rtt_us = a.rtt_us;
	a.delivered = (uint32_t)(s->delivered_total - p->delivered_at_send);
	send_elapsed = p->sent_us - p->first_tx_us;
	ack_elapsed = s->now - p->delivered_mstamp;
	a.interval_us = send_elapsed > ack_elapsed ? send_elapsed : ack_elapsed;
	if (a.interval_us < s->min_rtt_us) /* tcp_rate.c: too short to be trusted */
		a.interval_us = 0;
	s->first_tx_us = p->sent_us;
	s->delivered_mstamp = s->now;
	a.delivered_total = s->delivered_total;
	a.lost_total = s->lost_total;
	a.acked_sacked = 1;
	a.losses = (uint32_t)losses;
	a.prior_in_flight = prior;
	a.in_flight = (uint32_t)in_flight(s);
	a.mss = s->mss;
	a.ca_state = s->in_loss_state ? 4 : losses ? 3 : 0;
	s->in_loss_state = 0;
	s->last_progress_us = s->now;
	leocc_on_ack(&s->cc, &a, &s->out);
	s->acks++;
	{
		struct sim_call *c = record(s, SIM_CALL_ACK);

		if (c) {
			c->ack = a;
			c->out = s->out;
		}
		record_view(s, c);
	}
}

void sim_run_until(struct sim *s, uint64_t t_end)
{
	while (s->now < t_end) {
		uint64_t t_send = in_flight(s) < s->out.cwnd && in_flight(s) < SIM_RING - 1 ?
					  (s->next_send_us > s->now ? s->next_send_us : s->now) : NEVER;
		uint64_t t_dep = s->queue_bytes ? s->link_free_us : NEVER;
		uint64_t ackidx = next_departed(s);
		uint64_t t_ack = ackidx != NEVER ? pkt(s, ackidx)->ack_us : NEVER;
		uint64_t t_evt = NEVER, t_probe = s->path_probe ? s->next_probe_us : NEVER, t;
		/* Everything in flight lost: nothing will ever be acked; time out. */
		uint64_t t_rto = in_flight(s) > 0 && ackidx == NEVER && s->queue_bytes == 0 ?
					 s->last_progress_us + RTO_MIN_US + s->segs[0].rtt_us : NEVER;
		const struct sim_outage *o = NULL;

		if (s->next_outage_event < s->noutages) {
			o = &s->outages[s->next_outage_event];
			t_evt = o->start_us + o->dur_us + s->detect_delay_us;
		}
		t = t_send;
		if (t_dep < t) t = t_dep;
		if (t_ack < t) t = t_ack;
		if (t_evt < t) t = t_evt;
		if (t_probe < t) t = t_probe;
		if (t_rto < t) t = t_rto;
		if (t > t_end) {
			s->now = t_end;
			break;
		}
		s->now = t;
		if (t == t_rto) {
			/* The lost window is given up (its data would be retransmitted). */
			s->lost_total += in_flight(s);
			s->una = s->qhead = s->sent;
			s->in_loss_state = 1;
			s->rtos++;
			s->first_tx_us = s->delivered_mstamp = s->now;
			s->last_progress_us = s->now;
		} else if (t == t_dep) {
			depart_one(s);
		} else if (t == t_ack) {
			ack_one(s, ackidx);
		} else if (t == t_evt) {
			s->next_outage_event++;
			if (s->detector) {
				struct leocc_reconfig_event e = {o->start_us + o->dur_us, ++s->rcf_seq,
								       LEOCC_CONF_FULL, 0};

				struct sim_call *c;

				s->last_rcf_result = leocc_on_reconfig(&s->cc, &e);
				c = record(s, SIM_CALL_RECONFIG);
				if (c) {
					c->event = e;
					c->result = s->last_rcf_result;
				}
				record_view(s, c);
			}
		} else if (t == t_probe) {
			const struct sim_seg *g = sim_seg_at(s, s->now);
			uint64_t rtt = g->pop_rtt_us + (s->queue_on_pop_path ? sim_queue_delay_us(s) : 0);

			s->next_probe_us = s->now + PROBE_PERIOD_US;
			if (after_outage(s, s->now) == s->now) {
				struct sim_call *c;

				leocc_on_path(&s->cc, s->now, (uint32_t)rtt);
				c = record(s, SIM_CALL_PATH);
				if (c) {
					c->now_us = s->now;
					c->rtt_us = (uint32_t)rtt;
				}
				record_view(s, c);
			}
		} else {
			send_one(s);
		}
	}
}
