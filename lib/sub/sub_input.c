/* gdsub -i: blocks from a framed stream (file or stdin) instead of TCP,
 * matched to a publisher by their origin and handed to sub_on_block;
 * acknowledgements still go over each publisher's TCP connection. The
 * stream is binary, or armored lines (armor.h), told by its first bytes:
 * a corrupt binary stream ends the input, a bad line is only skipped,
 * since a line transport delimits frames. With a key (GDsub_authKeyFile)
 * every frame's tag (tag.h) is checked before the frame is used at all:
 * one that fails is counted, reported and skipped, and the publisher's
 * resend brings the real block. */
#include "sub_int.h"
#include "armor.h"
#include "log.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Frames are read once every publisher has answered (so its origin is
 * known and acks can flow), while stdout keeps up. */
static int in_ready(struct sub *s)
{
	size_t i;

	if (!s->in.reading || s->closing || s->done || s->out_paused)
		return 0;
	for (i = 0; s->conf->gd && i < s->npc; i++)
		if (s->pc[i].origin_len == 0 && s->pc[i].state != SUB_PS_ENDED)
			return 0;
	return 1;
}

/* Release what was read and stop reading; a no-op without -i. */
void sub_in_stop(struct sub *s)
{
	struct gd_region *r;

	while ((r = s->in.rq) != NULL) {
		s->in.rq = r->next;
		gd_input_done(&s->in.in, r);
	}
	s->in.rq_tail = NULL;
	s->in.rpos = 0;
	if (s->in.reading) {
		s->in.reading = 0;
		uv_idle_stop(&s->in.idle);
		gd_input_stop(&s->in.in);
	}
}

/* End of the stream (code 0), a corrupt one (65) or a read error (74):
 * what was written stays and is acknowledged; nothing more is read. */
static void in_end(struct sub *s, int code)
{
	s->in.code = code;
	sub_in_stop(s);
	sub_begin_close(s, code ? "the input stream cannot be read further" :
	    "end of the input stream");
}

/* The stream's blocks of this publisher are from another run than the
 * one we hold an acknowledgement connection to: not written, since they
 * could never be acknowledged. */
static int stale(const struct sub *s, const struct sub_pub *pc)
{
	return s->conf->gd && pc->state != SUB_PS_ENDED &&
	    gd_recv_stale(&pc->rv, pc->epoch);
}

/* Bad lines and bad tags reported one by one; past that, counted only
 * (an engine that mangles every line, or a flood of forged frames, would
 * otherwise flood standard error). */
#define BAD_REPORTED 100

/* The key of the run (epoch, origin) of f from pc: one of the two pc
 * keeps, or derived in place of the one that is not the run its welcome
 * named (a frame of another run: a restart not yet seen, or a replay).
 * An origin not in GDsub_pub has a slot of its own. NULL: libcrypto
 * failed. */
static const struct gd_tagkey *tag_key(struct sub *s, struct sub_pub *pc,
    const struct gd_sframe *f)
{
	struct gd_tagkey *k = &s->in.tk_foreign;
	int i;

	if (pc != NULL) {
		for (i = 0; i < 2; i++)
			if (gd_tagkey_is(&pc->tk[i], f->epoch, f->origin,
			    f->origin_len))
				return &pc->tk[i];
		i = !pc->tk[0].set ? 0 : !pc->tk[1].set ? 1 :
		    pc->tk[0].epoch == pc->epoch;
		k = &pc->tk[i];
	} else if (gd_tagkey_is(k, f->epoch, f->origin, f->origin_len)) {
		return k;
	}
	if (gd_tagkey_derive(k, &s->key, f->epoch, f->origin,
	    f->origin_len) != 0)
		return NULL;
	return k;
}

/* With a key: 1 when f carries the tag of its run; else it is counted,
 * reported with where it starts (line: an armored line's number; else a
 * byte offset), and 0. */
static int tag_ok(struct sub *s, struct sub_pub *pc, const struct gd_sframe *f,
    int line, uint64_t at)
{
	struct sub_in *in = &s->in;
	const struct gd_tagkey *k;
	const char *why;
	char what[64];

	if (f->tag_len == 0)
		why = "it carries no authentication tag";
	else if ((k = tag_key(s, pc, f)) == NULL)
		why = "its tag cannot be computed (libcrypto failed)";
	else if (gd_tag_check(k, f))
		return 1;
	else
		why = "its authentication tag is wrong (forged, or made with "
		    "another key)";
	if (++in->n_badtag <= BAD_REPORTED) {
		if (f->type == GD_SF_BLOCK)
			snprintf(what, sizeof(what), "/%" PRIu64, f->id);
		else
			snprintf(what, sizeof(what), " (%s frame)",
			    f->type == GD_SF_FLOOR ? "floor" : "end");
		gd_err("%s: %s %" PRIu64 ": frame %.*s%s skipped: %s; not "
		    "written, not acknowledged", in->name, line ? "line" :
		    "byte offset", at, (int)f->origin_len, f->origin, what, why);
	}
	if (in->n_badtag == BAD_REPORTED)
		gd_err("%s: %d frames with bad tags: further ones are counted "
		    "(gdinspect stats, bad_tags), not reported", in->name,
		    BAD_REPORTED);
	return 0;
}

/* With a key, a frame of another run than the one the publisher's
 * authenticated welcome named changes nothing, though its tag is good:
 * were it to move the stream to its run, a replayed frame of an old run
 * would make gdsub forget this run's blocks, and their replays would be
 * written again. Its blocks count as stale, as without a key. So also
 * after the publisher ended its run: its frames that still come are of
 * that run, and another run's, which no welcome named, could never be
 * acknowledged (a replay written once more, or a restart whose blocks
 * come back by resend once gdsub connects to it). */
static int other_run(struct sub *s, struct sub_pub *pc,
    const struct gd_sframe *f)
{
	if (!s->conf->gd || f->epoch == pc->epoch)
		return 0;
	if (f->type == GD_SF_BLOCK)
		s->in.n_stale++;
	if (f->epoch != pc->other_epoch && ++s->in.n_other <= BAD_REPORTED)
		gd_err("the stream holds frames of another run of publisher %s "
		    "(epoch %" PRIu64 ") than the one it answers for (epoch %"
		    PRIu64 "): a restart not yet seen, or a replay; not written, "
		    "not acknowledged", pc->addr, f->epoch, pc->epoch);
	pc->other_epoch = f->epoch;
	return 1;
}

/* A stream whose frames this gdsub cannot check as its key says: with a
 * key, frames without tags; without one, frames with tags, which it
 * cannot verify, where whoever set the publisher's key wants every frame
 * checked. Ends the input (65). */
static void refuse_stream(struct sub *s, int tagged)
{
	if (tagged)
		gd_err("%s: the stream's frames carry authentication tags "
		    "(gdpub --auth-key-file), and this gdsub has no key to "
		    "verify them (GDsub_authKeyFile, --auth-key-file)",
		    s->in.name);
	else
		gd_err("%s: the stream's frames carry no authentication tags "
		    "(stream version 1), and this gdsub has a key "
		    "(GDsub_authKeyFile): it reads only frames it can verify, "
		    "written by a gdpub with the key", s->in.name);
	in_end(s, GD_EX_DATAERR);
}

static void on_sframe(struct sub *s, const struct gd_sframe *f, int line,
    uint64_t at)
{
	struct sub_pub *pc = sub_pub_find(s, f->origin, f->origin_len);
	struct sub_origin o = { f->origin, f->origin_len, f->epoch };
	struct gd_block b;
	int rs;

	if (s->key.len > 0) {
		if (!tag_ok(s, pc, f, line, at))
			return;
	} else if (f->tag_len) {
		refuse_stream(s, 1);
		return;
	}
	if (pc == NULL) {
		if (f->type == GD_SF_BLOCK) {
			gd_err("block %.*s/%" PRIu64 " comes from a publisher that "
			    "is not in GDsub_pub; not written, not acknowledged",
			    (int)f->origin_len, f->origin, f->id);
			s->in.n_foreign++;
		}
		return;
	}
	if (s->key.len > 0 && other_run(s, pc, f))
		return;
	rs = gd_recv_stream_epoch(&pc->rv, f->epoch);
	if (rs == GD_RS_NEW_RUN)
		sub_forget(s, pc);
	if (rs != GD_RS_SAME && stale(s, pc))
		gd_err("the stream holds blocks of another run of publisher "
		    "%s than the one running now; they cannot be "
		    "acknowledged and are not written", pc->addr);
	if (f->type == GD_SF_FLOOR) {
		if (!stale(s, pc))
			sub_on_floor(s, pc, f->seq, &o);
		return;
	}
	if (f->type == GD_SF_END) {
		gd_trace(1, "the stream of publisher %s ended", pc->addr);
		return;
	}
	if (stale(s, pc)) {
		s->in.n_stale++;
		return;
	}
	b.id = f->id;
	b.seq = f->seq;
	b.time_ns = f->time_ns;
	b.flags = f->flags;
	b.len = f->len;
	b.data = f->data;
	sub_on_block(s, pc, &b, &o);
}

/* One armored line (without its newline): its frames, or a bad line
 * counted, reported with its number and skipped (a damaged frame skips
 * only itself and the rest of its line). oversize: only the start of a
 * line longer than the reader holds. Returns the frames read, at least 1
 * (the budget's unit). */
static unsigned on_line(struct sub *s, uint8_t *p, size_t n, int oversize)
{
	struct sub_in *in = &s->in;
	struct gd_armor_line a;
	struct gd_sframe f;
	char why[200];
	unsigned got = 0;

	in->n_lines++;
	if (oversize)
		snprintf(why, sizeof(why), "longer than %zu bytes, the longest "
		    "batch (%u bytes, gdpub --armor-batch) or the armor of a "
		    "frame of the largest payload (%" PRIu32 " bytes, "
		    "GDsub_maxBlockSize, --max-block-size)", in->in.line_max,
		    GD_ARMOR_BATCH_MAX, in->armor_max);
	else if (gd_armor_open(&a, p, n, in->armor_max, why,
	    sizeof(why)) == 0) {
		int k;

		while ((k = gd_armor_next(&a, &f, why, sizeof(why))) == 1) {
			in->n_frames++;
			on_sframe(s, &f, 1, in->n_lines);
			if (s->closing || s->done)
				return a.frames;	/* the line may be released */
		}
		if (k == 0)
			return a.frames;
		got = a.frames;
	}
	if (++in->n_bad <= BAD_REPORTED)
		gd_err("%s: line %" PRIu64 ": bad armored line skipped: %s",
		    in->name, in->n_lines, why);
	if (in->n_bad == BAD_REPORTED)
		gd_err("%s: %d bad lines: further ones are counted (gdinspect "
		    "stats), not reported", in->name, BAD_REPORTED);
	return got > 0 ? got : 1;
}

/* The lines of region r from in->rpos, as far as the budget goes. Returns
 * -1 when the engine closed meanwhile (the regions are released). */
static int in_lines(struct sub *s, struct gd_region *r, unsigned *budget)
{
	struct sub_in *in = &s->in;
	uint8_t *base = r->c->data + r->off;

	while (in->rpos < r->len && *budget > 0 && in_ready(s)) {
		uint8_t *p = base + in->rpos, *nl = NULL;
		size_t rest = r->len - in->rpos, n;
		unsigned k;

		if (!(r->flags & GD_RG_OVERSIZE))
			nl = memchr(p, '\n', rest);
		n = nl ? (size_t)(nl - p) : rest;
		in->rpos += nl ? n + 1 : rest;
		/* a frame, not a line, is the budget's unit: a line may carry
		 * hundreds */
		k = on_line(s, p, n, (r->flags & GD_RG_OVERSIZE) != 0);
		*budget = *budget > k ? *budget - k : 0;
		if (s->closing || s->done)
			return -1;
	}
	return 0;
}

static void in_parse(struct sub *s)
{
	struct sub_in *in = &s->in;
	unsigned budget = 16384;

	while (in->rq && budget > 0 && in_ready(s)) {
		struct gd_region *r = in->rq;
		const uint8_t *base = r->c ? r->c->data + r->off : NULL;

		if (r->flags & GD_RG_ERROR) {
			gd_err("cannot read %s: %s", in->name, strerror(r->err));
			in_end(s, GD_EX_IOERR);
			return;
		}
		if (r->flags & GD_RG_EOF) {
			in_end(s, 0);
			return;
		}
		if ((r->flags & (GD_RG_CHUNK_DONE | GD_RG_LINES)) ==
		    GD_RG_LINES) {
			if (in_lines(s, r, &budget) != 0)
				return;	/* sub_in_stop released the regions */
			if (in->rpos < r->len)
				break;
		} else if (!(r->flags & GD_RG_CHUNK_DONE)) {
			while (in->rpos < r->len && budget > 0 && in_ready(s)) {
				struct gd_sframe f;
				size_t used;
				if (gd_sreader_next(&in->sr, base + in->rpos,
				    r->len - in->rpos, 1, &f, &used) != 1) {
					gd_err("%s: %s%s", in->name, in->sr.err,
					    in->sr.over_limit ? " bytes "
					    "(GDsub_maxBlockSize, --max-block-size)" :
					    "");
					in_end(s, GD_EX_DATAERR);
					return;
				}
				in->rpos += used;
				budget--;
				if (f.type != GD_SF_HEADER)
					on_sframe(s, &f, 0, in->sr.off - used);
				else if ((in->sr.version ==
				    GD_STREAM_VERSION_TAGS) != (s->key.len > 0))
					refuse_stream(s, in->sr.version ==
					    GD_STREAM_VERSION_TAGS);
				if (s->closing || s->done)
					return;	/* sub_in_stop released the regions */
			}
			if (in->rpos < r->len)
				break;
		}
		in->rq = r->next;
		if (in->rq == NULL)
			in->rq_tail = NULL;
		in->rpos = 0;
		gd_input_done(&in->in, r);
	}
	if (in->rq == NULL || !in_ready(s))
		uv_idle_stop(&in->idle);
	sub_out_check(s);
}

static void on_in_idle(uv_idle_t *h)
{
	in_parse(h->data);
}

/* Parse what was read, if the engine is ready for it; a no-op without -i. */
void sub_in_kick(struct sub *s)
{
	if (s->in.rq && in_ready(s))
		(void)uv_idle_start(&s->in.idle, on_in_idle);	/* cannot fail */
}

static void on_input(struct gd_input *gin)
{
	struct sub *s = gin->data;
	struct gd_region *r = gd_input_take(gin);

	if (r == NULL)
		return;
	if (s->in.rq_tail)
		s->in.rq_tail->next = r;
	else
		s->in.rq = r;
	while (r->next)
		r = r->next;
	s->in.rq_tail = r;
	if (!s->in.reading)
		sub_in_stop(s);	/* stopped meanwhile: release them */
	else
		sub_in_kick(s);
}

int sub_in_open(struct sub *s, const char *path)
{
	struct sub_in *in = &s->in;
	int fd = 0, rc;

	in->name = "standard input";
	if (strcmp(path, "-") != 0) {
		if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0) {
			gd_err("cannot open the stream file '%s': %s", path,
			    strerror(errno));
			return GD_EX_IOERR;
		}
		in->name = path;
	}
	/* a frame's length is checked against our own limit before any
	 * buffer grows for it (input.c peeks with the same bound); an
	 * armored line has the same bound on its frame's payload, so a chunk
	 * holds the longest line */
	in->max_payload = (uint32_t)s->conf->sub_max_block;
	gd_sreader_init(&in->sr, in->max_payload);
	if ((rc = uv_idle_init(&s->loop, &in->idle)) != 0) {
		gd_err("cannot set up the event loop: %s", uv_strerror(rc));
		if (fd != 0)
			close(fd);
		return GD_EX_FAIL;
	}
	in->idle.data = s;
	in->in.data = s;
	in->in.max_payload = in->max_payload;
	in->armor_max = in->max_payload;
	in->in.line_max = gd_armor_line_max(in->armor_max);
	if ((rc = gd_input_start(&in->in, &s->loop, fd, '\n', 1u << 20,
	    on_input)) != 0) {
		gd_err("cannot start reading %s: %s", in->name, uv_strerror(rc));
		return GD_EX_FAIL;
	}
	in->reading = 1;
	return 0;
}

/* After the loop has ended. */
void sub_in_free(struct sub *s)
{
	while (s->in.rq) {
		struct gd_region *r = s->in.rq;
		s->in.rq = r->next;
		free(r);
	}
	if (s->stream_in)
		gd_input_free(&s->in.in);
}
