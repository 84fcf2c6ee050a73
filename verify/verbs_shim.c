//go:build cgo && verbs

/*
 * verbs_shim.c - libibverbs steps and traffic loops for verbs_cgo.go.
 * The steps follow rdma-core's documented verbs API (ibv_modify_qp(3),
 * ibv_post_send(3), ibv_poll_cq(3)); see reference §D for the sequence.
 */
#include "verbs_shim.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define POLL_BATCH 16
/* After the first failed completion, keep polling this long to collect the
 * flushed ones too (they name the QP and the operations that were lost). */
#define DRAIN_NS 100000000LL

#define ACCESS (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ)

/* libibverbs returns errno values, but some providers hand back -errno. */
static int pos(int e) { return e < 0 ? -e : e; }

/* For calls that return NULL and set errno; some providers forget errno. */
static int errno_or(int fallback) { return errno ? errno : fallback; }

int64_t shim_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* Does nothing: BenchmarkCgoCall measures the price of one cgo call. */
int shim_nop(int x) { return x + 1; }

void shim_stop(shim_run *r) { __atomic_store_n(&r->stop, 1, __ATOMIC_RELEASE); }

static int stop_requested(shim_run *r) { return __atomic_load_n(&r->stop, __ATOMIC_ACQUIRE); }

int shim_query_port(struct ibv_context *ctx, uint8_t port, struct ibv_port_attr *pa)
{
	memset(pa, 0, sizeof(*pa));
	return pos(ibv_query_port(ctx, port, pa));
}

int shim_query_gid(struct ibv_context *ctx, uint32_t port, uint32_t index, struct ibv_gid_entry *e)
{
	memset(e, 0, sizeof(*e));
	return pos(ibv_query_gid_ex(ctx, port, index, e, 0));
}

int shim_alloc_pd(struct ibv_context *ctx, struct ibv_pd **out)
{
	errno = 0;
	*out = ibv_alloc_pd(ctx);
	return *out ? 0 : errno_or(ENOMEM);
}

int shim_alloc_buf(size_t len, void **out)
{
	void *p = NULL;
	int e = posix_memalign(&p, 4096, len);
	if (e)
		return e;
	memset(p, 0, len);
	*out = p;
	return 0;
}

int shim_reg_mr(struct ibv_pd *pd, void *buf, size_t len, struct ibv_mr **out)
{
	errno = 0;
	*out = ibv_reg_mr(pd, buf, len, ACCESS);
	return *out ? 0 : errno_or(ENOMEM);
}

int shim_create_cq(struct ibv_context *ctx, int depth, struct ibv_cq **out)
{
	errno = 0;
	*out = ibv_create_cq(ctx, depth, NULL, NULL, 0);
	return *out ? 0 : errno_or(ENOMEM);
}

/* shim_create_qp asks for *max_inline bytes of inline data and falls back
 * to none when the device refuses; *max_inline is what the QP got. */
int shim_create_qp(struct ibv_pd *pd, struct ibv_cq *cq, uint32_t send_wr, uint32_t recv_wr, uint32_t *max_inline,
                   struct ibv_qp **out)
{
	struct ibv_qp_init_attr a;
	for (int try = 0; try < 2; try++) {
		memset(&a, 0, sizeof(a));
		a.send_cq = cq;
		a.recv_cq = cq;
		a.cap.max_send_wr = send_wr;
		a.cap.max_recv_wr = recv_wr;
		a.cap.max_send_sge = 1;
		a.cap.max_recv_sge = 1;
		a.cap.max_inline_data = try == 0 ? *max_inline : 0;
		a.qp_type = IBV_QPT_RC;
		errno = 0;
		*out = ibv_create_qp(pd, &a);
		if (*out) {
			*max_inline = a.cap.max_inline_data;
			return 0;
		}
		if (*max_inline == 0)
			break;
	}
	return errno_or(ENOMEM);
}

int shim_qp_to_init(struct ibv_qp *qp, uint8_t port)
{
	struct ibv_qp_attr a;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.pkey_index = 0;
	a.port_num = port;
	a.qp_access_flags = ACCESS;
	return pos(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS));
}

int shim_qp_to_rtr(struct ibv_qp *qp, uint8_t port, int mtu, uint32_t dest_qpn, uint32_t rq_psn,
                   const uint8_t *dgid, uint8_t sgid_index, uint8_t traffic_class, uint8_t sl,
                   uint8_t hop_limit, uint8_t min_rnr_timer)
{
	struct ibv_qp_attr a;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = (enum ibv_mtu)mtu;
	a.dest_qp_num = dest_qpn;
	a.rq_psn = rq_psn;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = min_rnr_timer;
	/* RoCE has no LIDs: the GRH (is_global) is what routes the packet. */
	a.ah_attr.is_global = 1;
	memcpy(a.ah_attr.grh.dgid.raw, dgid, 16);
	a.ah_attr.grh.sgid_index = sgid_index;
	a.ah_attr.grh.hop_limit = hop_limit;
	a.ah_attr.grh.traffic_class = traffic_class;
	a.ah_attr.grh.flow_label = 0;
	a.ah_attr.sl = sl;
	a.ah_attr.src_path_bits = 0;
	a.ah_attr.port_num = port;
	return pos(ibv_modify_qp(qp, &a,
	                         IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
	                             IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER));
}

int shim_qp_to_rts(struct ibv_qp *qp, uint32_t sq_psn, uint8_t timeout, uint8_t retry_cnt, uint8_t rnr_retry)
{
	struct ibv_qp_attr a;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = timeout;
	a.retry_cnt = retry_cnt;
	a.rnr_retry = rnr_retry;
	a.sq_psn = sq_psn;
	a.max_rd_atomic = 1;
	return pos(ibv_modify_qp(qp, &a,
	                         IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
	                             IBV_QP_MAX_QP_RD_ATOMIC));
}

int shim_post_recvs(shim_ep *ep, int n)
{
	struct ibv_sge sge = {.addr = (uintptr_t)ep->recv_buf, .length = ep->buf_len, .lkey = ep->lkey};
	struct ibv_recv_wr wr, *bad = NULL;
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = SHIM_WRID(SHIM_WR_RECV, 0);
	wr.sg_list = &sge;
	wr.num_sge = 1;
	for (int i = 0; i < n; i++) {
		int e = ibv_post_recv(ep->qp, &wr, &bad);
		if (e)
			return pos(e);
	}
	return 0;
}

/* ---- completions ------------------------------------------------------ */

static void record_err(shim_run *r, const struct ibv_wc *wc)
{
	if (r->nerr < SHIM_MAX_ERRS) {
		shim_wc_err *e = &r->errs[r->nerr];
		e->status = wc->status;
		e->vendor_err = wc->vendor_err;
		e->qp_num = wc->qp_num;
		e->wr_id = wc->wr_id;
	}
	r->nerr++;
}

/* poll_ep polls ep's CQ once and accounts what it finds. Returns the
 * number of completions, or -1 when ibv_poll_cq itself failed. Every
 * completion's status is checked; a failure is recorded in r. */
static int poll_ep(shim_ep *ep, shim_run *r)
{
	struct ibv_wc wc[POLL_BATCH];
	int n = ibv_poll_cq(ep->cq, POLL_BATCH, wc);
	if (n < 0) {
		r->post_err = EIO;
		r->post_what = 0;
		return -1;
	}
	for (int i = 0; i < n; i++) {
		int kind = SHIM_WRID_KIND(wc[i].wr_id);
		if (wc[i].status != IBV_WC_SUCCESS)
			record_err(r, &wc[i]);
		switch (kind) {
		case SHIM_WR_WRITE:
			if (wc[i].status == IBV_WC_SUCCESS) {
				r->msgs++;
				r->bytes += r->size;
			}
			ep->send_outstanding--;
			break;
		case SHIM_WR_SEND:
		case SHIM_WR_STOP:
			/* an unsignalled SEND completes only when it failed */
			if (ep->send_outstanding > 0)
				ep->send_outstanding--;
			break;
		case SHIM_WR_RECV:
			if (wc[i].status == IBV_WC_SUCCESS) {
				ep->recv_ready++;
				ep->last_len = wc[i].byte_len;
				ep->last_imm_valid = (wc[i].wc_flags & IBV_WC_WITH_IMM) != 0;
				ep->last_imm = ntohl(wc[i].imm_data);
			}
			break;
		}
	}
	return n;
}

/* drain keeps polling for a short while after a failure, to collect the
 * completions of the work requests that the broken QP flushes. */
static void drain(shim_ep *a, shim_ep *b, shim_run *r)
{
	int64_t end = shim_now_ns() + DRAIN_NS;
	while (shim_now_ns() < end && r->nerr < SHIM_MAX_ERRS) {
		int n = poll_ep(a, r);
		if (b)
			n += poll_ep(b, r);
		if (n < 0)
			return;
	}
}

/* progress tracks the stall timeout and the stop flag while waiting. */
typedef struct {
	int64_t last;
} progress;

/* waiting returns 0 to keep waiting, -1 when the wait must end. */
static int waiting(shim_run *r, progress *p, int got)
{
	int64_t t = shim_now_ns();
	if (got > 0) {
		p->last = t;
		return 0;
	}
	if (t - p->last > r->stall_ns) {
		r->stalled = 1;
		return -1;
	}
	if (stop_requested(r)) {
		r->stopped = 1;
		return -1;
	}
	return 0;
}

/* wait_recv waits for one receive on ep, also polling other (the peer QP
 * in loopback) so that a failure there ends the wait at once instead of
 * after the stall timeout. 0 = a receive is ready, -1 = failed. */
static int wait_recv(shim_ep *ep, shim_ep *other, shim_run *r)
{
	progress p = {shim_now_ns()};
	while (ep->recv_ready == 0) {
		int n = poll_ep(ep, r);
		if (n >= 0 && other) {
			int m = poll_ep(other, r);
			n = m < 0 ? m : n + m;
		}
		if (n < 0 || r->nerr)
			return -1;
		if (waiting(r, &p, n))
			return -1;
	}
	ep->recv_ready--;
	return 0;
}

/* wait_sends waits until every signalled send of a (and b) completed. */
static int wait_sends(shim_ep *a, shim_ep *b, shim_run *r)
{
	progress p = {shim_now_ns()};
	while (a->send_outstanding > 0 || (b && b->send_outstanding > 0)) {
		int n = poll_ep(a, r);
		if (n >= 0 && b) {
			int m = poll_ep(b, r);
			n = m < 0 ? m : n + m;
		}
		if (n < 0 || r->nerr)
			return -1;
		if (waiting(r, &p, n))
			return -1;
	}
	return 0;
}

/* Every SIG_EVERY-th SEND is signalled (and the STOP message): the others
 * need no completion of their own, because the peer's answer proves they
 * arrived, and one CQE less per message is what perftest's latency tests
 * save too. A failed SEND completes with an error either way. The send
 * queue holds qpSendDepth (128) work requests, far more than SIG_EVERY. */
#define SIG_EVERY 16

static int post_send_seq(shim_ep *ep, shim_run *r, uint64_t seq, uint32_t imm, int kind)
{
	/* The sequence number also goes into the payload, so that the receiver
	 * checks the data moved, not only that a completion arrived. */
	if (r->size >= 8)
		memcpy(ep->send_buf, &seq, 8);
	int signaled = kind == SHIM_WR_STOP || ++ep->sends % SIG_EVERY == 0;
	struct ibv_sge sge = {.addr = (uintptr_t)ep->send_buf, .length = r->size, .lkey = ep->lkey};
	struct ibv_send_wr wr, *bad = NULL;
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = SHIM_WRID(kind, seq);
	wr.opcode = IBV_WR_SEND_WITH_IMM;
	wr.send_flags = (signaled ? IBV_SEND_SIGNALED : 0) | (r->size <= ep->max_inline ? IBV_SEND_INLINE : 0);
	wr.imm_data = htonl(imm);
	wr.sg_list = &sge;
	wr.num_sge = 1;
	int e = ibv_post_send(ep->qp, &wr, &bad);
	if (e) {
		r->post_err = pos(e);
		r->post_what = kind;
		return -1;
	}
	if (signaled)
		ep->send_outstanding++;
	return 0;
}

static int repost_recv(shim_ep *ep, shim_run *r)
{
	int e = shim_post_recvs(ep, 1);
	if (e) {
		r->post_err = e;
		r->post_what = SHIM_WR_RECV;
		return -1;
	}
	return 0;
}

static uint32_t seq_imm(uint64_t seq) { return (uint32_t)(seq & 0x7fffffff); }

/* check_recv verifies the message that just arrived on ep carries seq. */
static int check_recv(shim_ep *ep, shim_run *r, uint64_t seq)
{
	uint64_t got = seq;
	if (r->size >= 8)
		memcpy(&got, ep->recv_buf, 8);
	if (ep->last_len != r->size) {
		r->bad_data = 1;
		r->bad_want = r->size;
		r->bad_got = ep->last_len;
		return -1;
	}
	if (!ep->last_imm_valid || ep->last_imm != seq_imm(seq) || got != seq) {
		r->bad_data = 1;
		r->bad_want = seq;
		r->bad_got = ep->last_imm_valid ? (r->size >= 8 ? got : ep->last_imm) : UINT64_MAX;
		return -1;
	}
	return 0;
}

static void sample(shim_run *r, int64_t t0, int64_t t1)
{
	if (r->samples_cap)
		r->samples[r->nsamples % r->samples_cap] = (t1 - t0) / 2;
	r->nsamples++;
	r->msgs++;
	r->bytes += r->size;
	r->end_ns = t1;
}

static int time_up(shim_run *r, uint64_t i, int64_t now)
{
	if (r->iters && i >= r->iters)
		return 1;
	if (i > 0 && r->deadline_ns && now >= r->deadline_ns)
		return 1;
	if (stop_requested(r)) {
		r->stopped = 1;
		return 1;
	}
	return 0;
}

/* ---- traffic ----------------------------------------------------------- */

/* shim_write_bw streams RDMA WRITEs from ep's send region to
 * (remote_addr, rkey), keeping up to depth of them in flight, every one
 * signalled and its completion checked. */
int shim_write_bw(shim_ep *ep, shim_run *r)
{
	struct ibv_sge sge = {.addr = (uintptr_t)ep->send_buf, .length = r->size, .lkey = ep->lkey};
	struct ibv_send_wr wr, *bad = NULL;
	memset(&wr, 0, sizeof(wr));
	wr.opcode = IBV_WR_RDMA_WRITE;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.wr.rdma.remote_addr = r->remote_addr;
	wr.wr.rdma.rkey = r->rkey;

	uint64_t posted = 0;
	int stopping = 0;
	progress p = {shim_now_ns()};
	r->start_ns = p.last;
	r->end_ns = p.last;
	for (;;) {
		while (!stopping && !r->nerr && (r->iters == 0 || posted < r->iters) &&
		       ep->send_outstanding < (int)r->depth) {
			wr.wr_id = SHIM_WRID(SHIM_WR_WRITE, posted);
			int e = ibv_post_send(ep->qp, &wr, &bad);
			if (e) {
				r->post_err = pos(e);
				r->post_what = SHIM_WR_WRITE;
				stopping = 1;
				break;
			}
			ep->send_outstanding++;
			posted++;
		}
		if (ep->send_outstanding == 0 && (stopping || r->nerr || (r->iters && posted >= r->iters)))
			break;
		int n = poll_ep(ep, r);
		if (n < 0)
			break;
		if (r->nerr) {
			drain(ep, NULL, r);
			break;
		}
		int64_t t = shim_now_ns();
		if (n > 0)
			r->end_ns = t;
		if (waiting(r, &p, n))
			break;
		/* Checked here, not only in waiting(): with a full pipeline almost
		 * every poll returns completions, and waiting() only looks at the
		 * stop flag when one does not. */
		if (!stopping && ((r->deadline_ns && t >= r->deadline_ns) || stop_requested(r))) {
			stopping = 1;
			r->stopped = stop_requested(r);
		}
	}
	return 0;
}

/* shim_pp_loopback: a sends to b, b answers, a times the round trip. */
int shim_pp_loopback(shim_ep *a, shim_ep *b, shim_run *r)
{
	r->start_ns = shim_now_ns();
	r->end_ns = r->start_ns;
	for (uint64_t i = 0;; i++) {
		int64_t t0 = shim_now_ns();
		if (time_up(r, i, t0))
			break;
		if (post_send_seq(a, r, i, seq_imm(i), SHIM_WR_SEND) || wait_recv(b, a, r) || check_recv(b, r, i) ||
		    repost_recv(b, r) || post_send_seq(b, r, i, seq_imm(i), SHIM_WR_SEND) || wait_recv(a, b, r) ||
		    check_recv(a, r, i) || repost_recv(a, r))
			goto fail;
		sample(r, t0, shim_now_ns());
	}
	if (wait_sends(a, b, r) == 0)
		return 0;
fail:
	if (r->nerr)
		drain(a, b, r);
	return 0;
}

/* shim_pp_initiator: the active end of a two-host ping-pong; ends it with a
 * SHIM_IMM_STOP message the responder does not answer. */
int shim_pp_initiator(shim_ep *ep, shim_run *r)
{
	r->start_ns = shim_now_ns();
	r->end_ns = r->start_ns;
	for (uint64_t i = 0;; i++) {
		int64_t t0 = shim_now_ns();
		if (time_up(r, i, t0))
			break;
		if (post_send_seq(ep, r, i, seq_imm(i), SHIM_WR_SEND) || wait_recv(ep, NULL, r) ||
		    check_recv(ep, r, i) || repost_recv(ep, r))
			goto fail;
		sample(r, t0, shim_now_ns());
	}
	/* Even when stopped early the responder must be told, or it waits for
	 * the stall timeout. */
	if (post_send_seq(ep, r, UINT64_MAX, SHIM_IMM_STOP, SHIM_WR_STOP) == 0 && wait_sends(ep, NULL, r) == 0)
		return 0;
fail:
	if (r->nerr)
		drain(ep, NULL, r);
	return 0;
}

/* shim_pp_responder: the passive end; echoes every message until STOP. */
int shim_pp_responder(shim_ep *ep, shim_run *r)
{
	r->start_ns = shim_now_ns();
	r->end_ns = r->start_ns;
	for (;;) {
		if (wait_recv(ep, NULL, r))
			goto fail;
		if (ep->last_imm_valid && ep->last_imm == SHIM_IMM_STOP)
			break;
		uint64_t seq = ep->last_imm;
		if (r->size >= 8)
			memcpy(&seq, ep->recv_buf, 8);
		if (check_recv(ep, r, seq) || repost_recv(ep, r) ||
		    post_send_seq(ep, r, seq, seq_imm(seq), SHIM_WR_SEND))
			goto fail;
		r->msgs++;
		r->bytes += r->size;
		r->end_ns = shim_now_ns();
	}
	if (wait_sends(ep, NULL, r) == 0)
		return 0;
fail:
	if (r->nerr)
		drain(ep, NULL, r);
	return 0;
}
