/* Internal to the gdsub engine (lib/sub*.c): the state its files share and
 * their sub_* functions. Programs include sub.h; nothing outside
 * lib/sub*.c includes this file. */
#ifndef GD_SUB_INT_H
#define GD_SUB_INT_H

#include "sub.h"
#include "ctl.h"
#include "drain.h"
#include "input.h"
#include "metrics.h"
#include "notify.h"
#include "out.h"
#include "parse.h"
#include "receive.h"
#include "seal.h"
#include "stream.h"
#include "tag.h"
#include "tls.h"
#include "wire.h"

#define SUB_OUT_HIGH (8u << 20)	/* stop reading sources above this backlog */
#define SUB_DRAIN_MS 10		/* how often the stdout pipe is looked at */
#define SUB_CIN_SIZE 65536	/* TLS: ciphertext per read */
#define SUB_READ_MIN 65536	/* room asked for before a read */
/* How long gdsub waits for a gdack once nothing can acknowledge what it
 * wrote (sub_end.c): a pipeline's gdack connects as it starts */
#define SUB_ORPHAN_MS 1000
#define SUB_READER_MS 250	/* how often a stdout pipe's reader is looked for */
/* a payload this large is written from its receive buffer, not copied */
#define SUB_GIVE_MIN (1u << 20)
/* A publisher's receive buffer (gd_rbuf): a parse leaves less than the
 * largest span under a seal (seal.h: a block of GDsub_maxBlockSize, or
 * an ack-sized span) and its seal; the buffer grows only to give a read SUB_READ_MIN bytes
 * of room, and over TLS a feed's plaintext comes in before the next parse
 * (the ciphertext read, and a record held back from the feed before). */
static inline size_t sub_rb_max(uint32_t max_block)
{
	size_t block = GD_BLOCK_HDR + (size_t)max_block;
	size_t ctrl = GD_WIRE_HDR + GD_CTRL_MAX * 64;

	return (block > ctrl ? block : ctrl) + GD_SEAL_FRAME_MAX +
	    SUB_CIN_SIZE + GD_TLS_RECORD_MAX + SUB_READ_MIN;
}

enum sub_pstate { SUB_PS_IDLE, SUB_PS_RESOLVING, SUB_PS_CONNECTING,
	SUB_PS_WELCOME, SUB_PS_ACTIVE, SUB_PS_ENDED };

struct sub;

/* What a control client is to gdsub (gd_ctl_client.kind): not known yet,
 * a gdack (it sent an ack), a gdack that said bye, anything else. */
enum { SUB_CL_UNKNOWN, SUB_CL_GDACK, SUB_CL_BYE, SUB_CL_OTHER };

struct sub_ack {
	uint64_t id, seq;
};

/* One publisher: its connection (sub_net.c), what we know of its blocks
 * (receive.c) and the acknowledgements waiting to go to it (sub_acks.c). */
struct sub_pub {
	struct sub *s;
	uv_tcp_t h;
	int h_open, reading;
	uv_connect_t creq;
	uv_getaddrinfo_t gai;
	uv_timer_t retry;
	uv_shutdown_t sreq;
	struct gd_hostport hp;
	char addr[300];		/* HOST:PORT as configured */
	size_t addr_len;
	char origin[300];	/* as the publisher stamps its keys */
	size_t origin_len;
	int state, attempts, ack_status;
	int pub_proved;		/* this connection's publisher proved the key */
	struct gd_tls *tls;	/* GDsub_tlsCA: this connection's TLS */
	uint8_t *cin;		/* ... the ciphertext read (SUB_CIN_SIZE) */
	int greeted;		/* our HELLO is out (after TLS's handshake) */
	int tls_eof;		/* the publisher's close_notify: the connection
				 * is lost once the frames before it are read */
	uint8_t nc[GD_AUTH_NONCE];	/* this connection's nonce */
	uint8_t hh[32];		/* SHA-256 of our HELLO's body */
	/* plain TCP: the seals of what we write and of what the publisher
	 * writes (seal.h; off with TLS) */
	struct gd_seal tx, rx;
	uint64_t epoch;		/* its run, 0 before its first welcome */
	uint32_t max_block;
	struct gd_rbuf rb;
	struct gd_recv rv;	/* dedup and acknowledgement rules */
	struct sub_ack *ackq;	/* acknowledgements to send */
	size_t nqueued, capqueued;
	uint64_t n_snap;
	int cl;			/* its cluster in s->cls, or -1 */
	uint64_t cbit;		/* its bit among the cluster's members */
	int cl_warned;		/* unreachable, another member serves */
	int pq_sync;		/* send the end of the catch-up pre-acks */
	uint64_t *pq;		/* pre-acks to send (sub_cluster.c) */
	size_t npq, cappq;
	/* reliability=ordered: the last block received, to confirm once
	 * stdout has taken it */
	int confirm_due;
	uint64_t confirm_seq;
	/* what the first stage read of its blocks (sub_output.c): it takes
	 * reports (its welcome said so), the last block read, sent with the
	 * next acks; blocks written before run_from are of an earlier run */
	int cons_ok, cons_due;
	uint64_t cons_seq, run_from;
	uint64_t mark_seq;	/* its last block written since the last
				 * mark, 0 none (sub_out_marks) */
	uint32_t idx;		/* its place in s->pc */
	/* with a key, -i: the tag keys of its frames (sub_input.c), the run
	 * its welcome named and one other; the other run last said */
	struct gd_tagkey tk[2];
	uint64_t other_epoch;
	/* the publisher's resolved address (GDsub_locatorCacheTimeout) */
	struct sockaddr_storage addr_cache;
	uint64_t addr_time;	/* when resolved (ms, loop clock); 0: none */
};

/* The origin a block's key carries: the publisher's stamp, or with -i
 * the one in its frame (which matched this publisher). */
struct sub_origin {
	const char *s;
	size_t len;
	uint64_t epoch;
};

/* -i: the framed stream read instead of TCP (sub_input.c) */
struct sub_in {
	int reading;
	int code;		/* ended on a corrupt stream (65) or read error (74) */
	const char *name;
	struct gd_input in;
	struct gd_sreader sr;
	struct gd_region *rq, *rq_tail;
	size_t rpos;
	uv_idle_t idle;
	uint64_t n_foreign;	/* blocks from publishers not listed */
	uint64_t n_stale;	/* blocks of a publisher's earlier run */
	uint32_t max_payload;	/* of a binary frame */
	uint32_t armor_max;	/* of an armored one */
	uint64_t n_lines;	/* armored lines read */
	uint64_t n_frames;	/* good frames in armored lines */
	uint64_t n_bad;		/* armored lines skipped */
	uint64_t n_badtag;	/* frames skipped: no tag, or a wrong one */
	uint64_t n_other;	/* frames of other runs said */
	struct gd_tagkey tk_foreign;	/* of an origin not in GDsub_pub */
};

struct sub {
	const struct gd_conf *conf;
	struct gd_u64txt idtxt;	/* the id of the key written last */
	struct gd_sub_opts opt;
	uv_loop_t loop;
	uv_prepare_t prep;
	uv_timer_t linger;
	uv_timer_t idle;	/* --idle-timeout: looks for arrivals */
	uint64_t idle_seen;	/* blocks and bytes arrived at its last look */
	/* bytes read from the publishers: a large block still arriving is
	 * no idle time (--idle-timeout) */
	uint64_t bytes_in;
	/* the receive buffer of the frame being handled, whose memory
	 * sub_out_block may take for a large payload instead of copying it */
	struct gd_rbuf *cur_rb;
	uint64_t idle_since;	/* loop ms: when that count last moved */
	uv_signal_t sigint, sigterm;
	struct gd_ctl_srv ctl;
	struct gd_metrics metrics;	/* --metrics (sub_ctl.c) */
	struct gd_out out;
	/* stdout is a pipe: what its reader read is looked at every
	 * SUB_DRAIN_MS while blocks wait in it (sub_output.c) */
	int drain_on, drain_armed;	/* ... and its timer runs */
	struct gd_drain drain;
	uv_timer_t drain_timer;
	struct sub_pub *pc;
	size_t npc, nended;
	uint64_t emitted;
	uint64_t n_unwritable;	/* blocks the output format could not carry */
	int closing, done, sigs, code, out_paused;
	int hard;		/* a second signal: tear down without waiting */
	char name[256];
	uint64_t run;		/* this process, in every hello */
	int stream_in;		/* -i: blocks come from s->in, not over TCP */
	struct sub_in in;
	struct gd_state *state;	/* GDsub_state, or NULL */
	uv_timer_t state_sync;	/* its fsync, at most GD_STATE_SYNC_NS late */
	struct gd_notify notify;	/* $NOTIFY_SOCKET (sub_notify.c) */
	uv_timer_t ntick;
	int notified;		/* READY=1 sent */
	int state_err;		/* it failed (said): nothing more is written */
	uint64_t n_gave_up;	/* --consecutive: runs whose gap passed the limit */
	uint64_t n_seal_failed;	/* connections closed: a seal failed */
	struct sub_cluster *cls;	/* multisend clusters among the publishers */
	size_t ncls;
	struct gd_auth_key key;	/* GDsub_authKeyFile; len 0: none */
	struct gd_tls_ctx *tls;	/* GDsub_tlsCA; NULL: plain TCP */
	/* sub_end.c: whether anything can still acknowledge */
	uv_timer_t orphan;	/* SUB_ORPHAN_MS once nothing can */
	uv_timer_t reader_tick;	/* SUB_READER_MS: stdout's reader still there? */
	int orphan_on;		/* ... and it runs */
	size_t ackers;		/* gdack clients connected, at the last look */
	int lost_acker;		/* one went without its bye, none since */
	int bye_seen;		/* one said bye: look at stdout when it goes */
	int out_broken;		/* stdout's reader has gone */
};

/* sub.c: wiring and lifecycle */
void sub_begin_close(struct sub *s, const char *why);
void sub_maybe_done(struct sub *s);
void sub_finish(struct sub *s, int code);
struct sub_pub *sub_pub_find(struct sub *s, const char *origin, size_t len);

/* sub_block.c: each block a source hands over, through receive.c's rules */
void sub_on_block(struct sub *s, struct sub_pub *pc, const struct gd_block *b,
    const struct sub_origin *o);
void sub_on_floor(struct sub *s, struct sub_pub *pc, uint64_t floor,
    const struct sub_origin *o);
void sub_forget(struct sub *s, struct sub_pub *pc);

/* sub_net.c: connections to the publishers, their life and read loop */
void sub_net_start(struct sub_pub *pc);
void sub_net_pause(struct sub *s);
void sub_net_resume(struct sub *s);
void sub_net_shut(struct sub_pub *pc, int hard);
/* reliability=ordered: confirm the blocks stdout has taken */
void sub_net_confirm(struct sub *s);

/* sub_frames.c: a publisher's wire frames, one handler each. sub_frame
 * hands f on and says what the read loop does next: read on, stop (the
 * connection or the run is closed or closing), the frame does not belong
 * here (BAD: a malformed stream, reconnect), the publisher ended its
 * stream, the handshake failed (an attempt: *why says why) or was denied
 * (the key refused: no more attempts). */
enum { SUB_FR_NEXT, SUB_FR_STOP, SUB_FR_BAD, SUB_FR_END, SUB_FR_FAILED,
	SUB_FR_DENIED };
int sub_frame(struct sub *s, struct sub_pub *pc, const struct gd_frame *f,
    const char **why);
/* Our block limit, or the publisher's once it announced a lower one: a
 * frame's length is checked against it before the buffer grows for it. */
uint32_t sub_frame_limit(const struct sub *s, const struct sub_pub *pc);
/* The payload size of the block frame at pc's read position (at
 * pc->rx.bad_at after it) when it is over limit but within the
 * publisher's own, else 0. */
uint32_t sub_frame_too_large(const struct sub_pub *pc, uint32_t limit);

/* sub_tls.c: the bytes to and from a publisher */
/* Every write to a publisher: through TLS when on, else as uv_write
 * (cb gets req back, its status that of the ciphertext's write). */
int sub_tls_write(struct sub_pub *pc, uv_write_t *req, const uv_buf_t *b,
    uv_write_cb cb);
/* What TLS has waiting, written (orig and cb with it): 0 or a libuv
 * error, when cb will not be called. */
int sub_tls_out(struct sub_pub *pc, uv_write_t *orig, uv_write_cb cb);
/* nread bytes of ciphertext in pc->cin: decrypted into pc->rb, what the
 * handshake answers written. SUB_TLS_OK, or *why says what failed: TLS
 * itself, or the connection (lost). */
enum { SUB_TLS_OK, SUB_TLS_LOST, SUB_TLS_FAILED };
int sub_tls_in(struct sub_pub *pc, size_t nread, const char **why);

/* sub_input.c: -i, blocks from a framed stream */
int sub_in_open(struct sub *s, const char *path);
void sub_in_kick(struct sub *s);
void sub_in_stop(struct sub *s);
void sub_in_free(struct sub *s);

/* sub_output.c: blocks on stdout */
int sub_out_open(struct sub *s);
int sub_out_cannot_carry(const struct sub *s, const struct gd_block *b);
void sub_out_block(struct sub *s, const struct sub_origin *o,
    const struct gd_block *b, const char *flags);
void sub_out_unwritable(struct sub *s, const struct sub_origin *o,
    const struct gd_block *b);
void sub_out_check(struct sub *s);
/* The block of pc with sequence index seq was just written: report when
 * the first stage has read it (a publisher that takes reports). Noted
 * here, marked once a loop turn by sub_out_marks. */
static inline void sub_out_mark(struct sub_pub *pc, uint64_t seq)
{
	if (pc->cons_ok)
		pc->mark_seq = seq;
}
void sub_out_marks(struct sub *s);
void sub_out_close(struct sub *s);
void sub_out_abort(struct sub *s);

/* sub_acks.c: acknowledgements to the publishers */
int sub_ack_queue(struct sub_pub *pc, uint64_t id, uint64_t seq);
void sub_acks_flush(struct sub *s);
uint64_t sub_unacked(const struct sub *s);
const char *sub_ack_key(struct sub *s, const char *key, size_t len);
/* The same for a key already split: block id of publisher pc. */
const char *sub_ack_id(struct sub *s, struct sub_pub *pc, uint64_t id);
/* Control frames to a publisher: a small one (BYE, or CONFIRM with its
 * u64; a failure shows as the connection's loss), the hello and the proof
 * (0 or a libuv error). */
void sub_send_small(struct sub_pub *pc, uint8_t type, int has_arg,
    uint64_t arg);
int sub_send_hello(struct sub_pub *pc, const struct gd_hello *h);
int sub_send_proof(struct sub_pub *pc, const uint8_t mac[GD_AUTH_MAC]);

/* sub_cluster.c: publishers that are members of a multisend cluster */
void sub_cluster_join(struct sub *s, struct sub_pub *pc);
int sub_cluster_block(struct sub *s, struct sub_pub *pc,
    const struct gd_block *b);
struct sub_pub *sub_cluster_find(struct sub *s, const char *origin,
    size_t len, uint64_t id);
void sub_cluster_acked(struct sub *s, struct sub_pub *pc, uint64_t id,
    uint64_t seq);
void sub_cluster_flush(struct sub *s);
/* Does another member serve pc's cluster? */
enum { SUB_CL_NONE, SUB_CL_SERVED, SUB_CL_ENDED };
int sub_cluster_cover(const struct sub *s, const struct sub_pub *pc);
void sub_cluster_free(struct sub *s);

/* sub_state.c: the state file */
int sub_state_open(struct sub *s);
int sub_state_attach(struct sub *s, struct sub_pub *pc,
    const struct sub_origin *o);
void sub_state_commit(struct sub *s);
int sub_state_last_commit(struct sub *s, int code);
int sub_state_close(struct sub *s, int rc);

/* sub_ctl.c: the control socket, and --metrics beside it */
int sub_ctl_listen(struct sub *s);
void sub_ctl_close(struct sub *s);

/* sub_hs.c: a publisher's welcome, taken; the connection is active */
void sub_hs_welcome(struct sub *s, struct sub_pub *pc,
    const struct gd_welcome *w);

/* sub_end.c: the end when nothing can acknowledge what gdsub wrote */
int sub_end_init(struct sub *s);
/* Look again (stdout closed, a gdack came or went): the grace of
 * SUB_ORPHAN_MS starts, or stops when a gdack is there. */
void sub_end_check(struct sub *s);
/* Standard output's reader has gone. */
void sub_end_out_broken(struct sub *s);
/* A control client sent an ack: a gdack; said bye: it is finishing. */
void sub_end_acker(struct sub *s, struct gd_ctl_client *cl);
void sub_end_bye(struct sub *s, struct gd_ctl_client *cl);
/* A control client went. */
void sub_end_gone(struct sub *s);

/* sub_notify.c: the service manager's notifications ($NOTIFY_SOCKET) */
int sub_notify_start(struct sub *s);
void sub_notify_ready(struct sub *s);
void sub_notify_stopping(struct sub *s);
void sub_notify_close(struct sub *s);

#endif
