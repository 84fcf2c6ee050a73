//go:build cgo && verbs

/*
 * verbs_shim.h - the C side of rocectl's verbs test (verbs_cgo.go).
 *
 * Go drives the setup (one cgo call per libibverbs step, so that every
 * failure maps to a typed Go error); the traffic loops are here because a
 * cgo call costs about as much as posting a work request on real hardware
 * and the loops make two or three of them per message.
 *
 * Every function returns 0 or a positive errno.
 */
#ifndef ROCECTL_VERBS_SHIM_H
#define ROCECTL_VERBS_SHIM_H

#include <stdint.h>
#include <infiniband/verbs.h>

/* wr_id = kind << 56 | sequence: a failed completion has no valid opcode
 * (only wr_id, status, vendor_err and qp_num are defined), so the kind of
 * the failed operation travels in the wr_id. */
enum { SHIM_WR_WRITE = 1, SHIM_WR_SEND = 2, SHIM_WR_RECV = 3, SHIM_WR_STOP = 4 };
#define SHIM_WRID(kind, seq) (((uint64_t)(kind) << 56) | ((uint64_t)(seq) & 0x00ffffffffffffffULL))
#define SHIM_WRID_KIND(wrid) ((int)((wrid) >> 56))

#define SHIM_MAX_ERRS 8
/* Immediate data of the message that ends a two-host ping-pong. Sequence
 * numbers travel as imm & 0x7fffffff, so they never collide with it. */
#define SHIM_IMM_STOP 0xffffffffu

typedef struct {
	int status;
	uint32_t vendor_err;
	uint32_t qp_num;
	uint64_t wr_id;
} shim_wc_err;

/* One RC QP with its own CQ (send and receive completions) and its two
 * regions of the registered buffer. */
typedef struct {
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	char *send_buf;   /* RDMA WRITE and SEND source */
	char *recv_buf;   /* receives (and the peer's RDMA WRITEs) land here */
	uint32_t lkey;
	uint32_t buf_len; /* length of each region */
	int recv_ready;   /* receive completions not consumed yet */
	uint32_t last_imm;
	uint32_t last_len;
	int last_imm_valid;
	int send_outstanding; /* signalled sends not completed yet */
	uint32_t max_inline;  /* what the QP got at creation; smaller SENDs go inline */
	uint64_t sends;       /* SENDs posted, for selective signalling */
} shim_ep;

/* One traffic run: inputs, the stop flag, outputs. Allocated in C memory
 * because another thread (the Go context watcher) writes stop while the
 * loop reads it. */
typedef struct {
	/* in */
	uint32_t size;
	uint64_t iters;       /* 0 = until deadline */
	int64_t deadline_ns;  /* CLOCK_MONOTONIC (shim_now_ns); 0 = none */
	int64_t stall_ns;     /* give up when no completion arrives for this long */
	uint32_t depth;       /* outstanding RDMA WRITEs */
	uint64_t remote_addr; /* RDMA WRITE target */
	uint32_t rkey;
	int64_t *samples;     /* ping-pong RTT/2 in ns, ring of samples_cap */
	uint64_t samples_cap;
	/* written by shim_stop */
	int stop;
	/* out */
	uint64_t msgs;
	uint64_t bytes;
	int64_t start_ns, end_ns;
	uint64_t nsamples;
	int nerr;             /* failed completions seen, may exceed SHIM_MAX_ERRS */
	shim_wc_err errs[SHIM_MAX_ERRS];
	int post_err;         /* errno of a failed post or poll */
	int post_what;        /* SHIM_WR_* of that post */
	int stalled;
	int stopped;
	int bad_data;         /* a message arrived with the wrong length or sequence */
	uint64_t bad_want, bad_got;
} shim_run;

int shim_query_port(struct ibv_context *ctx, uint8_t port, struct ibv_port_attr *pa);
int shim_query_gid(struct ibv_context *ctx, uint32_t port, uint32_t index, struct ibv_gid_entry *e);
int shim_alloc_pd(struct ibv_context *ctx, struct ibv_pd **out);
int shim_alloc_buf(size_t len, void **out);
int shim_reg_mr(struct ibv_pd *pd, void *buf, size_t len, struct ibv_mr **out);
int shim_create_cq(struct ibv_context *ctx, int depth, struct ibv_cq **out);
int shim_create_qp(struct ibv_pd *pd, struct ibv_cq *cq, uint32_t send_wr, uint32_t recv_wr, uint32_t *max_inline,
                   struct ibv_qp **out);
int shim_qp_to_init(struct ibv_qp *qp, uint8_t port);
int shim_qp_to_rtr(struct ibv_qp *qp, uint8_t port, int mtu, uint32_t dest_qpn, uint32_t rq_psn,
                   const uint8_t *dgid, uint8_t sgid_index, uint8_t traffic_class, uint8_t sl,
                   uint8_t hop_limit, uint8_t min_rnr_timer);
int shim_qp_to_rts(struct ibv_qp *qp, uint32_t sq_psn, uint8_t timeout, uint8_t retry_cnt, uint8_t rnr_retry);
int shim_post_recvs(shim_ep *ep, int n);

int shim_write_bw(shim_ep *ep, shim_run *r);
int shim_pp_loopback(shim_ep *a, shim_ep *b, shim_run *r);
int shim_pp_initiator(shim_ep *ep, shim_run *r);
int shim_pp_responder(shim_ep *ep, shim_run *r);
void shim_stop(shim_run *r);
int64_t shim_now_ns(void);
int shim_nop(int x);

#endif
