// dcbnl-veth.c: an LD_PRELOAD shim that lets lldpad run its DCBX modules on
// a veth, for regen-lldpad.sh only (never built by the Go tooling: testdata).
//
// Why: lldpad starts its IEEE 802.1Qaz module on a port only when the
// kernel answers DCB_CMD_GDCBX for it (get_dcbx_hw in lldp_8021qaz.c), and
// its CEE module only when DCB_CMD_GSTATE answers (dcbx_ifup in
// lldp_dcbx.c). A veth has no dcbnl_ops, so the kernel answers EOPNOTSUPP
// and lldpad refuses every DCBX setting with "Device not capable". Nor do
// dummy or mainline netdevsim have dcbnl_ops (the project's lab patches
// netdevsim for IEEE DCB, but only inside its QEMU guest).
//
// What: RTM_GETDCB / RTM_SETDCB requests that lldpad sends on a
// NETLINK_ROUTE socket for an interface named in $DCBNL_VETH_IFNAMES are
// answered here, in the reply format of net/dcb/dcbnl.c (dcb_doit:
// reply type from the command table, the request's seq and flags, then
// the NLMSG_ERROR ack when NLM_F_ACK was asked), with the values a
// host-DCBX NIC driver reports, modelled on ixgbe (ixgbe_dcb_nl.c, the
// driver lldpad was written with): 8 traffic classes, DCBX mode starting
// as HOST|VER_CEE and switched by DCB_CMD_SDCBX. Every other netlink
// message goes to the kernel.
//
// This touches only what lldpad learns about the "hardware": whether DCB
// is there, its TC counts (the ETS Max TCs and PFC Cap fields of the
// frames), and what it wrote. The LLDP TLVs are built by lldpad's own
// code (bld_ieee8021qaz_*_tlv, dcbx_bld_tlv) from its configuration.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <linux/dcbnl.h>
#include <linux/if.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#define MAXQ 8
#define MAXMSG 4096
#define MAXFD 1024
#define MAXAPP 64
#define MAXDEV 4

struct dgram {
	size_t len;
	unsigned char b[MAXMSG];
};

// Replies waiting to be read, per socket, in order.
struct queue {
	int n;
	struct dgram d[MAXQ];
};

// What the emulated driver holds per device.
struct dev {
	char name[IFNAMSIZ];
	uint8_t state;      // DCB on/off (ixgbe_dcbnl_get_state)
	uint8_t dcbx;       // DCBX mode (ixgbe_dcbnl_getdcbx)
	struct ieee_ets ets;
	struct ieee_pfc pfc;
	int napp;
	struct dcb_app app[MAXAPP]; // the kernel's dcb_app_list for the device
};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static struct queue *queues[MAXFD];
static struct dev devs[MAXDEV];
static int ndevs = -1;
static int trace; // $DCBNL_VETH_TRACE set: each emulated request on stderr

static ssize_t (*real_sendto)(int, const void *, size_t, int, const struct sockaddr *, socklen_t);
static ssize_t (*real_sendmsg)(int, const struct msghdr *, int);
static ssize_t (*real_recvmsg)(int, struct msghdr *, int);
static ssize_t (*real_recvfrom)(int, void *, size_t, int, struct sockaddr *, socklen_t *);
static int (*real_close)(int);

static void init(void)
{
	if (ndevs >= 0)
		return;
	real_sendto = dlsym(RTLD_NEXT, "sendto");
	real_sendmsg = dlsym(RTLD_NEXT, "sendmsg");
	real_recvmsg = dlsym(RTLD_NEXT, "recvmsg");
	real_recvfrom = dlsym(RTLD_NEXT, "recvfrom");
	real_close = dlsym(RTLD_NEXT, "close");
	ndevs = 0;
	trace = getenv("DCBNL_VETH_TRACE") != NULL;
	const char *env = getenv("DCBNL_VETH_IFNAMES");
	if (!env)
		return;
	char buf[256];
	strncpy(buf, env, sizeof(buf) - 1);
	buf[sizeof(buf) - 1] = 0;
	for (char *save, *tok = strtok_r(buf, ",", &save); tok && ndevs < MAXDEV; tok = strtok_r(NULL, ",", &save)) {
		struct dev *d = &devs[ndevs++];
		memset(d, 0, sizeof(*d));
		strncpy(d->name, tok, IFNAMSIZ - 1);
		// ixgbe_sw_init: dcbx_cap = HOST | VER_CEE until lldpad
		// switches it; ixgbe_dcbnl_ieee_getets: ets_cap = 8 TCs (82599).
		d->dcbx = DCB_CAP_DCBX_HOST | DCB_CAP_DCBX_VER_CEE;
		d->ets.ets_cap = 8;
		d->pfc.pfc_cap = 8;
	}
}

static struct dev *find_dev(const char *name)
{
	for (int i = 0; i < ndevs; i++)
		if (!strncmp(devs[i].name, name, IFNAMSIZ))
			return &devs[i];
	return NULL;
}

static int is_rtnl(int fd)
{
	int dom = 0, proto = -1;
	socklen_t l = sizeof(dom);
	if (getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &dom, &l) || dom != AF_NETLINK)
		return 0;
	l = sizeof(proto);
	return !getsockopt(fd, SOL_SOCKET, SO_PROTOCOL, &proto, &l) && proto == NETLINK_ROUTE;
}

// Reply building, as nla_put / nla_nest_start do.
struct msg {
	struct dgram *d;
};

static struct nlattr *put(struct msg *m, int type, const void *data, int len)
{
	struct nlattr *a = (struct nlattr *)(m->d->b + m->d->len);
	a->nla_type = type;
	a->nla_len = NLA_HDRLEN + len;
	if (len)
		memcpy((char *)a + NLA_HDRLEN, data, len);
	memset((char *)a + NLA_HDRLEN + len, 0, NLA_ALIGN(a->nla_len) - a->nla_len);
	m->d->len += NLA_ALIGN(a->nla_len);
	return a;
}

static void put_u8(struct msg *m, int type, uint8_t v)
{
	put(m, type, &v, 1);
}

static void nest_end(struct msg *m, struct nlattr *a)
{
	a->nla_len = (m->d->b + m->d->len) - (unsigned char *)a;
}

// Attributes of a request, top level or nested.
static struct nlattr *attr(void *start, int len, int type)
{
	for (struct nlattr *a = start; len >= NLA_HDRLEN && a->nla_len >= NLA_HDRLEN && a->nla_len <= len;
	     len -= NLA_ALIGN(a->nla_len), a = (struct nlattr *)((char *)a + NLA_ALIGN(a->nla_len)))
		if ((a->nla_type & NLA_TYPE_MASK) == type)
			return a;
	return NULL;
}

#define ADATA(a) ((void *)((char *)(a) + NLA_HDRLEN))
#define ALEN(a) ((a)->nla_len - NLA_HDRLEN)

static void app_set(struct dev *d, const struct dcb_app *a)
{
	// dcb_ieee_setapp: an identical entry is not added twice.
	for (int i = 0; i < d->napp; i++)
		if (!memcmp(&d->app[i], a, sizeof(*a)))
			return;
	if (d->napp < MAXAPP)
		d->app[d->napp++] = *a;
}

static void app_del(struct dev *d, const struct dcb_app *a)
{
	for (int i = 0; i < d->napp; i++)
		if (!memcmp(&d->app[i], a, sizeof(*a))) {
			d->app[i] = d->app[--d->napp];
			return;
		}
}

static void app_table(struct dev *d, struct nlattr *table, int set)
{
	// dcbnl_app_table_setdel
	struct nlattr *a = ADATA(table);
	for (int len = ALEN(table); len >= NLA_HDRLEN && a->nla_len >= NLA_HDRLEN && a->nla_len <= len;
	     len -= NLA_ALIGN(a->nla_len), a = (struct nlattr *)((char *)a + NLA_ALIGN(a->nla_len))) {
		if ((a->nla_type & NLA_TYPE_MASK) != DCB_ATTR_IEEE_APP || ALEN(a) < (int)sizeof(struct dcb_app))
			continue;
		if (set)
			app_set(d, ADATA(a));
		else
			app_del(d, ADATA(a));
	}
}

// handle answers one DCB request for an emulated device; it returns 0
// when the request is not one it emulates (the kernel gets it).
static int handle(int fd, const struct nlmsghdr *req)
{
	if (req->nlmsg_type != RTM_GETDCB && req->nlmsg_type != RTM_SETDCB)
		return 0;
	if (req->nlmsg_len < NLMSG_LENGTH(sizeof(struct dcbmsg)))
		return 0;
	const struct dcbmsg *dm = NLMSG_DATA(req);
	void *attrs = (char *)dm + NLMSG_ALIGN(sizeof(*dm));
	int alen = req->nlmsg_len - NLMSG_LENGTH(NLMSG_ALIGN(sizeof(*dm)));
	struct nlattr *ifn = attr(attrs, alen, DCB_ATTR_IFNAME);
	if (!ifn)
		return 0;
	char name[IFNAMSIZ] = {0};
	memcpy(name, ADATA(ifn), ALEN(ifn) < IFNAMSIZ ? ALEN(ifn) : IFNAMSIZ - 1);
	struct dev *d = find_dev(name);
	if (!d)
		return 0;

	struct queue *q = queues[fd];
	if (!q) {
		q = queues[fd] = calloc(1, sizeof(*q));
		if (!q)
			return 0;
	}
	if (q->n + 2 > MAXQ)
		q->n = 0; // nobody read the old ones; the socket is being reused

	struct sockaddr_nl self = {0};
	socklen_t sl = sizeof(self);
	getsockname(fd, (struct sockaddr *)&self, &sl);

	struct dgram *rd = &q->d[q->n];
	memset(rd, 0, sizeof(*rd));
	struct msg m = {rd};
	struct nlmsghdr *rh = (struct nlmsghdr *)rd->b;
	// dcb_doit: the reply type is the command table's (RTM_GETDCB for
	// the get commands, RTM_SETDCB for the set ones), seq and flags are
	// the request's.
	int type = RTM_SETDCB;
	rh->nlmsg_seq = req->nlmsg_seq;
	rh->nlmsg_flags = req->nlmsg_flags;
	rh->nlmsg_pid = self.nl_pid;
	struct dcbmsg *rdm = NLMSG_DATA(rh);
	rdm->dcb_family = AF_UNSPEC;
	rdm->cmd = dm->cmd;
	rd->len = NLMSG_LENGTH(NLMSG_ALIGN(sizeof(*rdm)));

	struct nlattr *a, *n;
	switch (dm->cmd) {
	case DCB_CMD_GSTATE: // dcbnl_getstate
		type = RTM_GETDCB;
		put_u8(&m, DCB_ATTR_STATE, d->state);
		break;
	case DCB_CMD_SSTATE: // dcbnl_setstate; ixgbe_dcbnl_set_state returns 0
		if ((a = attr(attrs, alen, DCB_ATTR_STATE)))
			d->state = *(uint8_t *)ADATA(a);
		put_u8(&m, DCB_ATTR_STATE, 0);
		break;
	case DCB_CMD_GCAP: // dcbnl_getcap with ixgbe_dcbnl_getcap's values
		type = RTM_GETDCB;
		n = put(&m, DCB_ATTR_CAP, NULL, 0);
		put_u8(&m, DCB_CAP_ATTR_PG, 1);
		put_u8(&m, DCB_CAP_ATTR_PFC, 1);
		put_u8(&m, DCB_CAP_ATTR_UP2TC, 0);
		put_u8(&m, DCB_CAP_ATTR_PG_TCS, 0x80);
		put_u8(&m, DCB_CAP_ATTR_PFC_TCS, 0x80);
		put_u8(&m, DCB_CAP_ATTR_GSP, 1);
		put_u8(&m, DCB_CAP_ATTR_BCN, 0);
		put_u8(&m, DCB_CAP_ATTR_DCBX, d->dcbx); // adapter->dcbx_cap
		nest_end(&m, n);
		break;
	case DCB_CMD_GNUMTCS: // dcbnl_getnumtcs, ixgbe_dcbnl_getnumtcs: 8 and 8
		type = RTM_GETDCB;
		n = put(&m, DCB_ATTR_NUMTCS, NULL, 0);
		put_u8(&m, DCB_NUMTCS_ATTR_PG, 8);
		put_u8(&m, DCB_NUMTCS_ATTR_PFC, 8);
		nest_end(&m, n);
		break;
	case DCB_CMD_PFC_SCFG: // dcbnl_setpfccfg
		put_u8(&m, DCB_ATTR_PFC_CFG, 0);
		break;
	case DCB_CMD_PFC_SSTATE: // dcbnl_setpfcstate
		put_u8(&m, DCB_ATTR_PFC_STATE, 0);
		break;
	case DCB_CMD_PGTX_SCFG: // __dcbnl_pg_setcfg
	case DCB_CMD_PGRX_SCFG:
		put_u8(&m, DCB_ATTR_PG_CFG, 0);
		break;
	case DCB_CMD_SAPP: // dcbnl_setapp: dcb_setapp's result
		put_u8(&m, DCB_ATTR_APP, 0);
		break;
	case DCB_CMD_SET_ALL: // dcbnl_setall; ixgbe_dcbnl_set_all: DCB_NO_HW_CHG,
		// as nothing in a veth needs reprogramming
		put_u8(&m, DCB_ATTR_SET_ALL, 1);
		break;
	case DCB_CMD_GDCBX: // dcbnl_getdcbx
		type = RTM_GETDCB;
		put_u8(&m, DCB_ATTR_DCBX, d->dcbx);
		break;
	case DCB_CMD_SDCBX: { // dcbnl_setdcbx, ixgbe_dcbnl_setdcbx: host mode
		// with exactly one version, else 1
		uint8_t v = 0, r = 1;
		if ((a = attr(attrs, alen, DCB_ATTR_DCBX)))
			v = *(uint8_t *)ADATA(a);
		if (!(v & DCB_CAP_DCBX_LLD_MANAGED) && (v & DCB_CAP_DCBX_HOST) &&
		    !!(v & DCB_CAP_DCBX_VER_CEE) != !!(v & DCB_CAP_DCBX_VER_IEEE)) {
			d->dcbx = v;
			r = 0;
		}
		put_u8(&m, DCB_ATTR_DCBX, r);
		break;
	}
	case DCB_CMD_IEEE_GET: // dcbnl_ieee_get / dcbnl_ieee_fill
		type = RTM_GETDCB;
		put(&m, DCB_ATTR_IFNAME, d->name, strlen(d->name) + 1);
		n = put(&m, DCB_ATTR_IEEE, NULL, 0);
		put(&m, DCB_ATTR_IEEE_ETS, &d->ets, sizeof(d->ets));
		put(&m, DCB_ATTR_IEEE_PFC, &d->pfc, sizeof(d->pfc));
		a = put(&m, DCB_ATTR_IEEE_APP_TABLE, NULL, 0);
		for (int i = 0; i < d->napp; i++)
			put(&m, DCB_ATTR_IEEE_APP, &d->app[i], sizeof(d->app[i]));
		nest_end(&m, a);
		nest_end(&m, n);
		put_u8(&m, DCB_ATTR_DCBX, d->dcbx);
		break;
	case DCB_CMD_IEEE_SET: // dcbnl_ieee_set; ets_cap and pfc_cap are the
		// driver's, not the caller's (ixgbe_dcbnl_ieee_setets/setpfc)
		if ((n = attr(attrs, alen, DCB_ATTR_IEEE))) {
			if ((a = attr(ADATA(n), ALEN(n), DCB_ATTR_IEEE_ETS)) && ALEN(a) >= (int)sizeof(d->ets)) {
				memcpy(&d->ets, ADATA(a), sizeof(d->ets));
				d->ets.ets_cap = 8;
			}
			if ((a = attr(ADATA(n), ALEN(n), DCB_ATTR_IEEE_PFC)) && ALEN(a) >= (int)sizeof(d->pfc)) {
				memcpy(&d->pfc, ADATA(a), sizeof(d->pfc));
				d->pfc.pfc_cap = 8;
			}
			if ((a = attr(ADATA(n), ALEN(n), DCB_ATTR_IEEE_APP_TABLE)))
				app_table(d, a, 1);
		}
		put_u8(&m, DCB_ATTR_IEEE, 0);
		break;
	case DCB_CMD_IEEE_DEL: // dcbnl_ieee_del
		if ((n = attr(attrs, alen, DCB_ATTR_IEEE)) &&
		    (a = attr(ADATA(n), ALEN(n), DCB_ATTR_IEEE_APP_TABLE)))
			app_table(d, a, 0);
		put_u8(&m, DCB_ATTR_IEEE, 0);
		break;
	default:
		return 0; // the kernel's EOPNOTSUPP, as for any veth
	}
	rh->nlmsg_type = type;
	rh->nlmsg_len = rd->len;
	q->n++;
	if (trace)
		fprintf(stderr, "dcbnl-veth: %s fd %d cmd %d flags %#x: replied %zu bytes, dcbx now %#x\n",
			d->name, fd, dm->cmd, req->nlmsg_flags, rd->len, d->dcbx);

	// netlink_rcv_skb: the ack follows when the request asked for one.
	if (req->nlmsg_flags & NLM_F_ACK) {
		struct dgram *ad = &q->d[q->n++];
		memset(ad, 0, sizeof(*ad));
		struct nlmsghdr *ah = (struct nlmsghdr *)ad->b;
		struct nlmsgerr *e = NLMSG_DATA(ah);
		ah->nlmsg_type = NLMSG_ERROR;
		ah->nlmsg_flags = NLM_F_CAPPED;
		ah->nlmsg_seq = req->nlmsg_seq;
		ah->nlmsg_pid = self.nl_pid;
		e->error = 0;
		e->msg = *req;
		ah->nlmsg_len = NLMSG_LENGTH(sizeof(*e));
		ad->len = ah->nlmsg_len;
	}
	return 1;
}

static int intercept(int fd, const void *buf, size_t len)
{
	init();
	if (fd < 0 || fd >= MAXFD || ndevs == 0 || len < sizeof(struct nlmsghdr))
		return 0;
	const struct nlmsghdr *h = buf;
	if (h->nlmsg_len > len || (h->nlmsg_type != RTM_GETDCB && h->nlmsg_type != RTM_SETDCB) || !is_rtnl(fd))
		return 0;
	pthread_mutex_lock(&mu);
	int r = handle(fd, h);
	pthread_mutex_unlock(&mu);
	return r;
}

// pop copies the next queued reply into iov; it returns -1 when none is
// queued (the kernel is asked).
static ssize_t pop(int fd, struct iovec *iov, int iovlen, int flags, struct sockaddr *from, socklen_t *fromlen, int *msgflags)
{
	init();
	if (fd < 0 || fd >= MAXFD)
		return -1;
	pthread_mutex_lock(&mu);
	struct queue *q = queues[fd];
	if (!q || q->n == 0) {
		pthread_mutex_unlock(&mu);
		return -1;
	}
	struct dgram *d = &q->d[0];
	size_t off = 0;
	for (int i = 0; i < iovlen && off < d->len; i++) {
		size_t c = d->len - off < iov[i].iov_len ? d->len - off : iov[i].iov_len;
		memcpy(iov[i].iov_base, d->b + off, c);
		off += c;
	}
	if (msgflags)
		*msgflags = off < d->len ? MSG_TRUNC : 0;
	if (from && fromlen) {
		struct sockaddr_nl k = {.nl_family = AF_NETLINK}; // from the kernel
		memcpy(from, &k, *fromlen < sizeof(k) ? *fromlen : sizeof(k));
		*fromlen = sizeof(k);
	}
	ssize_t r = (flags & MSG_TRUNC) ? (ssize_t)d->len : (ssize_t)off;
	if (!(flags & MSG_PEEK)) {
		memmove(&q->d[0], &q->d[1], (q->n - 1) * sizeof(q->d[0]));
		q->n--;
	}
	pthread_mutex_unlock(&mu);
	return r;
}

ssize_t sendto(int fd, const void *buf, size_t len, int flags, const struct sockaddr *to, socklen_t tolen)
{
	init();
	if (intercept(fd, buf, len))
		return len;
	return real_sendto(fd, buf, len, flags, to, tolen);
}

ssize_t send(int fd, const void *buf, size_t len, int flags)
{
	return sendto(fd, buf, len, flags, NULL, 0);
}

ssize_t sendmsg(int fd, const struct msghdr *msg, int flags)
{
	init();
	if (msg->msg_iovlen == 1 && intercept(fd, msg->msg_iov[0].iov_base, msg->msg_iov[0].iov_len))
		return msg->msg_iov[0].iov_len;
	return real_sendmsg(fd, msg, flags);
}

ssize_t recvmsg(int fd, struct msghdr *msg, int flags)
{
	init();
	int mf = 0;
	socklen_t nl = msg->msg_namelen;
	ssize_t r = pop(fd, msg->msg_iov, msg->msg_iovlen, flags, msg->msg_name, msg->msg_name ? &nl : NULL, &mf);
	if (r < 0)
		return real_recvmsg(fd, msg, flags);
	if (msg->msg_name)
		msg->msg_namelen = nl;
	msg->msg_controllen = 0;
	msg->msg_flags = mf;
	return r;
}

ssize_t recvfrom(int fd, void *buf, size_t len, int flags, struct sockaddr *from, socklen_t *fromlen)
{
	init();
	struct iovec iov = {buf, len};
	ssize_t r = pop(fd, &iov, 1, flags, from, fromlen, NULL);
	if (r < 0)
		return real_recvfrom(fd, buf, len, flags, from, fromlen);
	return r;
}

ssize_t recv(int fd, void *buf, size_t len, int flags)
{
	return recvfrom(fd, buf, len, flags, NULL, NULL);
}

int close(int fd)
{
	init();
	if (fd >= 0 && fd < MAXFD) {
		pthread_mutex_lock(&mu);
		free(queues[fd]);
		queues[fd] = NULL;
		pthread_mutex_unlock(&mu);
	}
	return real_close(fd);
}
