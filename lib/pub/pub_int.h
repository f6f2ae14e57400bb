/* Internal to the publisher engine, lib/pub/: the state the parts
 * share and the calls between them. pub.c wires and tears down;
 * pub_input.c turns stdin into blocks; pub_net.c serves subscribers over
 * TCP (their frames are pub_frames.c, TLS's bytes pub_tls.c, the
 * handshake pub_hs.c, the TCP sink pub_send.c) and pub_stream.c writes
 * the framed stream of -o, behind one sink; the status lines and
 * --progress are pub_status.c; the journal is pub_journal.c, a cluster
 * member pub_cluster.c, the control socket pub_ctl.c. The delivery rules
 * are lib/deliver.c and lib/slots.c, read and driven through their calls,
 * never their fields. */
#ifndef GD_PUB_INT_H
#define GD_PUB_INT_H

#include "bcast.h"
#include "cluster.h"
#include "ctl.h"
#include "dbuf.h"
#include "deliver.h"
#include "input.h"
#include "journal.h"
#include "metrics.h"
#include "notify.h"
#include "qos.h"
#include "seal.h"
#include "out.h"
#include "parse.h"
#include "pub.h"
#include "slots.h"
#include "snapshot.h"
#include "stream.h"
#include "tag.h"
#include "tls.h"
#include "wire.h"

#include <uv.h>

#define PUB_BACKLOG_HIGH (64u << 20)	/* pause input above this per sink */
#define PUB_BACKLOG_LOW (16u << 20)
#define PUB_CIN_SIZE 65536		/* TLS: ciphertext per read */
#define PUB_READ_MIN 16384		/* room asked for before a read */
/* A subscriber's receive buffer (gd_rbuf): a parse leaves less than the
 * largest span under a seal (an ack frame, seal.h) and its seal; the
 * buffer grows only to give a read PUB_READ_MIN bytes of room, and over
 * TLS a feed's plaintext comes in before the next parse (the ciphertext
 * read, and a record held back from the feed before). */
#define PUB_RB_MAX (GD_WIRE_HDR + GD_CTRL_MAX * 64 + GD_SEAL_FRAME_MAX + \
	PUB_CIN_SIZE + GD_TLS_RECORD_MAX + PUB_READ_MIN)
#define PUB_RATE_SAMPLES 5		/* 4 Hz ticks: the rate over a second */

struct pub;

/* A part of a shared batch that waits for one connection (pub_send.c) */
struct cseg {
	struct cseg *next;
	struct gd_bcast *b;
	size_t off, len;
	uint32_t nblk;
};

/* A subscriber connection's life (pub_net.c, pub_hs.c): with
 * GDpub_tlsCert its TLS handshake first; its HELLO awaited; its PROOF
 * awaited after our CHALLENGE (both sides have a key); welcomed; refused
 * (a WELCOME saying why, or REFUSE, is on its way and the close follows:
 * nothing it says counts); closing (its handle closes, it is out of
 * p->conns). The moves are forward only. */
enum pub_cstate { PUB_CS_TLS, PUB_CS_HELLO, PUB_CS_PROOF, PUB_CS_ACTIVE,
	PUB_CS_REFUSED, PUB_CS_CLOSING };

/* A subscriber connection (pub_net.c). */
struct sconn {
	uv_tcp_t h;
	struct pub *p;
	struct sconn *next, **pprev;
	struct gd_rbuf rb;
	char name[GD_SLOT_NAME];
	char addr[80];
	enum pub_cstate state;
	struct gd_tls *tls;		/* GDpub_tlsCert: its TLS, else NULL */
	uint8_t *cin;			/* ... and the ciphertext read */
	int tls_fed;			/* ... some of it, already */
	int tls_eof;			/* ... and its close_notify: closed once
					 * the frames before it are read */
	int want_data, slot, ack_status;
	struct gd_hello *hs_hello;	/* the HELLO, while its proof is awaited */
	uint8_t nc[GD_AUTH_NONCE], ns[GD_AUTH_NONCE];	/* both nonces */
	uint8_t hh[32];			/* SHA-256 of its HELLO's body */
	/* plain TCP: the seals of what we write and of what it writes
	 * (seal.h; off with TLS) */
	struct gd_seal tx, rx;
	uint64_t accept_ns;		/* the handshake's deadline runs from it */
	uint64_t acks;
	uint64_t hello_ns;		/* blocks sent since then reached it */
	uv_shutdown_t sreq;
	/* QoS (qos.c): its subscription, NULL for a connection that
	 * carries only acknowledgements or was refused */
	struct gd_qsub *qs;
	int queued;			/* writes wait in its own queue: ordered,
					 * or GDpub_sendQueueSizeMax */
	int counted;			/* its loss is already a failure */
	int end_sent;			/* told the stream ended */
	int end_late;			/* ... once it connected again after */
	int bye;			/* it said BYE */
	int cl_synced;			/* cluster: its gdsub's catch-up
					 * pre-acks are all in (pub_cluster.c) */
	int shut_wanted;
	unsigned nwrites;		/* uv_writes outstanding */
	struct cseg *qh, *qt;		/* its own queue */
	uint64_t qblk, qbytes;
};

/* Where blocks go: the subscribers over TCP (pub_net.c) or the framed
 * stream of -o (pub_stream.c); nothing else differs between the modes. */
struct pub_sink {
	void (*block)(struct pub *p, const struct gd_block *b);
	/* every sequence index below floor is resolved */
	void (*floor)(struct pub *p, uint64_t floor);
	void (*end)(struct pub *p);
	void (*flush)(struct pub *p);
	/* someone reads what it carries (floors are for them) */
	int (*readers)(struct pub *p);
	/* so much is queued that input must wait */
	int (*full)(struct pub *p);
	/* the last bytes out; what it writes closes when they are written */
	void (*close)(struct pub *p);
};

struct pub {
	const struct gd_conf *conf;
	struct gd_u64txt idtxt;	/* the id of the status line written last */
	struct gd_pub_opts opt;
	unsigned needed;		/* numSubs; 0: GD off */
	char origin[300];		/* HOST:PORT in every key */
	size_t origin_len;
	const char *korigin;		/* in keys: origin, or @CLUSTER */
	uint64_t epoch;			/* this run, in every stream frame */
	int port;			/* bound (-p 0: the kernel's choice) */

	uv_loop_t loop;
	uv_tcp_t srv;
	struct gd_notify notify;	/* $NOTIFY_SOCKET (pub_status.c) */
	uv_timer_t timer, ready_timer, force_exit, tick;
	uv_idle_t idle;
	uv_prepare_t prep;
	uv_signal_t sigint, sigterm;
	struct gd_ctl_srv ctl;
	struct gd_metrics metrics;	/* --metrics (pub_ctl.c) */

	struct gd_deliver dv;		/* pending blocks, window, outcomes */
	struct gd_slots slots;		/* GD subscriber admission */
	struct gd_qos qos;		/* subscriptions and their QoS */
	struct sconn *slot_conn[GD_MAX_SUBS];
	struct gd_snapshot snap;
	struct gd_journal jn;		/* GDpub_journal, when journal */
	int journal, journal_failed;
	/* resolutions whose status lines are not all written yet: recorded
	 * once they are (pub_journal_settle), so that a kill never leaves a
	 * block resolved in the journal and its ACK or NACK unsaid */
	struct gd_dbuf jres;		/* struct pub_jres, one after another */
	struct {			/* the journal's pending blocks, sent
					 * again before new input */
		struct gd_jblock *b;
		size_t n, next;
		struct gd_chunk *c;	/* their payloads */
	} replay;

	/* input (pub_input.c) */
	struct gd_input in;
	struct gd_sreader sr;		/* -f frame */
	struct gd_region *rq, *rq_tail;
	size_t rpos;
	uint64_t next_id, line_no;

	/* outputs */
	const struct pub_sink *sink;
	/* the input chunk that holds the payload of the block the sink is
	 * given now (pub_sink_block), which a large block is sent from */
	struct gd_chunk *blk_chunk;
	struct gd_out status;		/* pub_status.c */
	struct gd_out sout;		/* pub_stream.c */
	int tags;			/* -o with a key: every frame tagged */
	struct gd_tagkey tk;		/* this run's tag key (tag.h) */
	uint8_t *abuf;			/* pub_stream.c: the frames of the next
					 * armored line */
	size_t alen, aroom;
	struct sconn *conns;		/* pub_net.c */
	unsigned ndata, ngd;
	unsigned nconns;		/* allocated, until their handle closed */
	struct gd_auth_key key;		/* GDpub_authKeyFile; len 0: none */
	struct gd_tls_ctx *tls;		/* GDpub_tlsCert; NULL: plain TCP */
	uint64_t n_auth_refused, n_conn_refused, n_hs_timeout;
	uint64_t n_tls_refused;		/* TLS handshakes failed */
	uint64_t n_seal_failed;		/* connections closed: a seal failed */
	uint64_t conn_refused_logged;	/* when the last such line was said */
	struct gd_bcast *cur;
	struct gd_bpool bpool;		/* pub_send.c: batches of BCAST_SIZE */
	int paused_backlog;
	uint64_t floor_sent;
	uint64_t floor_ords;		/* sends numbered at the last turn's end */
	uv_timer_t floor_timer;		/* a floor with no block to go with */

	/* GDpub_cluster (pub_cluster.c) */
	int cluster, secondary;
	int cl_waiting;		/* held blocks due, none synced: said */
	char cname[80];			/* "@NAME" */
	struct gd_cluster cl;
	uv_timer_t cl_timer;

	/* lifecycle */
	int eof, ready, finished, sigs, stop_code, warned_few;
	/* a signal stopped a FIFO the service manager passed: what was read
	 * is published, up to the edge of a record (pub_stop_input) */
	int input_finishing;
	/* the status output broke, or was given up on: the outcomes not
	 * written stay in the journal, unrecorded (pub_status_lost) */
	int status_lost;
	/* the status output is a regular file and the journal syncs: its
	 * lines reach the disk before their outcomes are recorded as said
	 * (pub_status_synced), at most GD_JOURNAL_BATCH_NS late with batch */
	int status_sync;
	uint64_t status_synced_ns;
	/* the run is over but the status output has not taken its last
	 * lines: the control socket and the signals stay until it has */
	int wound_up, all_closed;
	uv_timer_t status_timer;
	/* the end told, gdpub waits (at most PUB_END_LINGER_MS) for each
	 * subscriber's BYE, and for one that lost its connection before it
	 * had the end to connect again and be told (pub.c) */
	int ending;
	unsigned end_lost;
	uv_timer_t end_timer;
	uint64_t now;			/* monotonic ns, per callback */
	uint64_t t_start;
	uint64_t progress_at;		/* the last --progress=SECONDS line */

	/* counters and rate (pub_status.c) */
	uint64_t n_reject, n_bytes, n_nosub;
	struct { uint64_t t, n, a; } rate_s[PUB_RATE_SAMPLES];	/* n read,
							 * a ACKed */
	unsigned rate_head, rate_n;
};

static inline int pub_gd(const struct pub *p) { return p->needed > 0; }

/* pub.c */
#define PUB_END_LINGER_MS 3000
/* the run is over and the status lines still wait: said after this */
#define PUB_STATUS_WAIT_MS 5000
void pub_maybe_done(struct pub *p);
/* A connection told the end closed (bye: it said BYE first): once none
 * is left and none lost the end, the run is over. */
void pub_end_closed(struct pub *p, const struct sconn *c, int bye);
/* Close every handle: the run is over. */
void pub_finish(struct pub *p);
void pub_arm_timer(struct pub *p);

/* pub_journal.c */
/* Write the journal's records before any block they record is sent:
 * 0, or -1 (journal I/O error: gdpub is stopping, send nothing). */
int pub_journal_commit(struct pub *p);
/* The journal cannot record: stop (exit 74), sending nothing more. */
void pub_journal_failed(struct pub *p);
/* Open and lock GDpub_journal (if set), changing nothing in it: the run
 * and the ids it continues; 0 or an exit code. */
int pub_journal_open(struct pub *p);
/* Once the port is bound: the torn tail cut, the replay announced; 0 or
 * an exit code. */
int pub_journal_begin(struct pub *p);
/* An ACK or NACK waiting for its status line to be written. */
struct pub_jres {
	uint64_t id, seq;
	uint32_t len;
	int acked;
};
#define PUB_JRES_MAX (256u << 20)	/* bytes of them: ~11 million */
/* Record an ACK or NACK (once its status line is written). */
void pub_journal_resolved(struct pub *p, const struct gd_pend *e, int acked);
/* The status lines so far are written (and synced, pub_status_synced):
 * record their resolutions; force: sync now rather than with the batch. */
void pub_journal_settle(struct pub *p, int force);
/* Rewrite the journal to what is pending (a failure is a warning); not
 * while resolutions wait for their status lines. */
void pub_journal_compact(struct pub *p);
/* After the loop, status written: the last resolutions, and the journal
 * emptied when nothing is pending. */
void pub_journal_end(struct pub *p);
void pub_journal_free(struct pub *p);

/* pub_input.c */
/* how long a stop waits for the writer of a FIFO to finish the record
 * gdpub has read the start of */
#define PUB_FINISH_MS 1000
int pub_input_start(struct pub *p);
/* Send a block now (after the cluster's say): sequence index, journal,
 * pending table, sink. */
void pub_input_send(struct pub *p, struct gd_chunk *c, uint64_t id,
    const uint8_t *pl, size_t plen, uint64_t tnow);
void pub_kick(struct pub *p);
void pub_drop_input(struct pub *p);
void pub_stop_input(struct pub *p, const char *signame);
/* Input is waiting to be parsed (stdin regions or the journal's replay) */
int pub_input_left(const struct pub *p);
int pub_replay_start(struct pub *p);
/* the payload of a pending block */
const uint8_t *pub_payload(struct pub *p, const struct gd_pend *e);
void pub_release(struct pub *p, uint32_t owner);

/* pub_net.c: the listener and the subscriber connections, their life and
 * read loop */
int pub_listen(struct pub *p);
void pub_conn_close(struct sconn *c, const char *why);

/* pub_frames.c: a subscriber's wire frames, one handler each. pub_frame
 * hands f on and says what the read loop does next: read on, stop (the
 * connection was closed or refused), the frame does not belong here (BAD:
 * malformed, or out of place), or the subscriber said BYE (its
 * subscription is removed: the connection is to be closed). */
enum { PUB_FR_NEXT, PUB_FR_CLOSED, PUB_FR_BAD, PUB_FR_BYE };
int pub_frame(struct pub *p, struct sconn *c, const struct gd_frame *f);

/* pub_tls.c: the bytes from a subscriber with TLS */
/* nread bytes of ciphertext in c->cin: decrypted into c->rb (what the
 * handshake answers waits in TLS, for pub_conn_tls_out). PUB_TLS_OK;
 * PUB_TLS_PLAIN: before any TLS, a plain gdkit HELLO; PUB_TLS_RBUF: the
 * read buffer could not take it (*why: out of memory, or its cap); or
 * PUB_TLS_FAILED and *why says what TLS found wrong. */
enum { PUB_TLS_OK, PUB_TLS_PLAIN, PUB_TLS_RBUF, PUB_TLS_FAILED };
int pub_tls_in(struct sconn *c, size_t nread, const char **why);

/* pub_send.c: the TCP sink */
extern const struct pub_sink pub_tcp_sink;
extern const struct gd_qos_ops pub_qos_ops;
void pub_send_end_all(struct pub *p);
/* A few times a second: sends blocked past GDpub_sendTimeout. */
void pub_send_tick(struct pub *p, uint64_t now);
void pub_send_close(struct pub *p);
void pub_conn_write(struct sconn *c, struct gd_bcast *b, size_t off,
    size_t len, uint32_t nblk);
void pub_conn_send(struct sconn *c, struct gd_bcast *b);
void pub_pump(struct sconn *c);
void pub_queue_free(struct sconn *c);
void pub_backlog_recheck(struct pub *p);
void pub_send_init(struct pub *p);	/* the batch pool */
void pub_tcp_flush(struct pub *p);
void pub_send_end(struct sconn *c);
/* Bytes as they are, past TLS (its handshake's, an alert, a plain
 * refusal): 0, or -1 when the connection was closed. */
int pub_conn_raw(struct sconn *c, uint8_t *own, size_t len);
/* The ciphertext TLS has waiting, written: 0 or -1 (closed). */
int pub_conn_tls_out(struct sconn *c);
/* Close once what is written has gone (with TLS our close_notify
 * last). */
void pub_conn_shutdown(struct sconn *c);

/* pub_hs.c: the handshake */
/* Close the connections that did not complete their handshake within
 * GD_HANDSHAKE_MS (from the tick). */
void pub_hs_sweep(struct pub *p, uint64_t now);
const char *pub_conn_who(const struct sconn *c);
int pub_hello_frame(struct pub *p, struct sconn *c, const struct gd_hello *h);
int pub_proof_frame(struct pub *p, struct sconn *c, const struct gd_frame *f);

/* pub_cluster.c */
int pub_cluster_start(struct pub *p);
void pub_cluster_close(struct pub *p);
void pub_cluster_free(struct pub *p);
/* A new block in cluster mode: 1 when held or dropped (or REJECTed), 0
 * when it goes out now. */
int pub_cluster_block(struct pub *p, struct gd_chunk *c, uint64_t id,
    const uint8_t *pl, size_t plen);
void pub_cluster_preacks(struct pub *p, struct sconn *c,
    const struct gd_frame *f);
/* A second signal: the held blocks are NACKed. */
void pub_cluster_nack_held(struct pub *p);
static inline int pub_held(const struct pub *p)
{
	return p->cluster && gd_cluster_held(&p->cl) > 0;
}

/* pub_input.c: block b, whose payload is in chunk c, to the sink */
void pub_sink_block(struct pub *p, const struct gd_block *b,
    struct gd_chunk *c);
/* pub_send.c: a payload this large is sent from its input chunk, not
 * copied into a batch */
#define PUB_EXT_MIN (1u << 20)

/* pub_stream.c */
extern const struct pub_sink pub_stream_sink;
int pub_stream_open(struct pub *p, int fd);

/* pub_status.c */
/* Open the status output (stdout, stderr with -o -, or --status FILE) and
 * choose the sink (TCP, or the -o stream); 0 or an exit code. */
int pub_outputs_open(struct pub *p);
/* Where the status lines go: "standard output", "standard error" or
 * "the status file 'F'". */
const char *pub_status_where(const struct pub *p, char *buf, size_t sz);
/* What becomes of the outcomes whose status lines are not written, for
 * the end of a message: kept in the journal, or unreported. */
const char *pub_status_fate(const struct pub *p, char *buf, size_t sz);
/* The status output cannot take the outcomes (broken, or given up on
 * after a signal), the caller has said why: no more input, exit non-zero
 * (74 with a journal, which keeps every outcome not written for the next
 * start; 1 without); with a journal gdpub stops now, the run goes on
 * later; without one the pending blocks are seen to the end. */
void pub_status_lost(struct pub *p);
/* The status lines written so far are on disk (a status file with a
 * journal that syncs): 1; 0 while the batch waits (force: sync now); -1
 * when the sync failed (the status output is lost, said). */
int pub_status_synced(struct pub *p, int force);
void pub_status_line(struct pub *p, const char *what, const struct gd_pend *e);
/* "WHAT ID" (cluster: PREACK, FORWARD, a held block's NACK). */
void pub_status_word(struct pub *p, const char *what, uint64_t id);
void pub_reject(struct pub *p, const char *idtxt, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void pub_ready(struct pub *p);
/* the service manager: READY=1 (pub_ready), then from the loop's tick
 * WATCHDOG=1 and STATUS=, STOPPING=1 when it drains */
void pub_notify_open(struct pub *p);
void pub_notify_tick(struct pub *p, uint64_t now);
void pub_tick(struct pub *p, uint64_t now);
/* blocks read (published), and ACKed, per second over the last second */
double pub_rate(const struct pub *p, uint64_t now);
double pub_ack_rate(const struct pub *p, uint64_t now);

/* pub_ctl.c */
int pub_ctl_line(void *user, struct gd_ctl_client *cl, char *line,
    size_t len);
/* --metrics: serve /metrics, the control replies' exposition; 0 or an
 * exit code (69: the address cannot be bound) */
int pub_metrics_open(struct pub *p);

#endif
