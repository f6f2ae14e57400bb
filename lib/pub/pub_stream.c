/* gdpub -o: the sink that writes every block, floor and end as a frame of
 * the framed stream (gdkit-stream(5)) on stdout or a file, instead of
 * serving blocks over TCP; acknowledgements still come over TCP. With
 * --armor each frame is a text line of its own (armor.h), written where
 * the frame was put, and the stream has no header. With a key
 * (GDpub_authKeyFile) every frame carries a tag (tag.h), since whoever
 * can reach the engine in the middle could otherwise write frames too. */
#include "pub_int.h"
#include "armor.h"
#include "log.h"

#include <string.h>

static void frame(struct pub *p, uint8_t type, const struct gd_block *b)
{
	struct gd_sframe f;
	uint8_t *d;
	size_t size;

	memset(&f, 0, sizeof(f));
	f.type = type;
	f.origin = p->origin;
	f.origin_len = p->origin_len;
	f.epoch = p->epoch;
	if (b != NULL) {
		f.flags = b->flags;
		f.id = b->id;
		f.seq = b->seq;
		f.time_ns = b->time_ns;
		f.data = b->data;
		f.len = b->len;
	}
	if (p->tags)
		f.tag_len = GD_SFRAME_TAG;
	size = gd_sframe_tsize(f.origin_len, f.len, f.tag_len);
	if ((d = gd_out_reserve(&p->sout, p->opt.armor ? gd_armor_size(size) :
	    size)) != NULL) {
		uint8_t *at = p->opt.armor ? d + GD_ARMOR_PREFIX_LEN : d;
		if (p->tags)
			gd_tag_sframe_put(&p->tk, at, &f);
		else
			gd_sframe_put(at, &f);
		if (p->opt.armor)
			size = gd_armor_in_place(d, size);
		gd_out_commit(&p->sout, size);
	} else if (!p->eof) {
		gd_err("out of memory for the block stream; no more input is read");
		p->stop_code = GD_EX_FAIL;
		pub_drop_input(p);
	}
}

static void s_block(struct pub *p, const struct gd_block *b)
{
	frame(p, GD_SF_BLOCK, b);
}

static void s_floor(struct pub *p, uint64_t floor)
{
	struct gd_block b = { 0, floor, 0, 0, 0, NULL };
	frame(p, GD_SF_FLOOR, &b);
}

static void s_end(struct pub *p)
{
	struct gd_block b = { 0, 0, 0, 0, 0, NULL };
	frame(p, GD_SF_END, &b);
}

static void s_flush(struct pub *p)
{
	gd_out_flush(&p->sout);
}

static int s_readers(struct pub *p)
{
	(void)p;
	return 1;	/* whoever reads the stream, now or later */
}

static int s_full(struct pub *p)
{
	return gd_out_backlog(&p->sout) > PUB_BACKLOG_HIGH;
}

static void s_close(struct pub *p)
{
	gd_out_close(&p->sout, NULL);
}

const struct pub_sink pub_stream_sink = {
	s_block, s_floor, s_end, s_flush, s_readers, s_full, s_close
};

static void on_error(struct gd_out *o, int err)
{
	struct pub *p = o->data;

	gd_err("cannot write the block stream on %s: %s; no more input is read",
	    p->opt.out, uv_strerror(err));
	if (p->stop_code == 0)
		p->stop_code = GD_EX_FAIL;
	pub_drop_input(p);
	pub_maybe_done(p);
}

/* no frame leaves before the journal records its block */
static int before_write(struct gd_out *o)
{
	return pub_journal_commit(o->data);
}

static void on_drain(struct gd_out *o, int err)
{
	(void)err;
	pub_kick(o->data);
}

/* The stream on fd, starting with its header. */
int pub_stream_open(struct pub *p, int fd)
{
	uint8_t *d;
	int rc;

	if ((rc = gd_out_open(&p->sout, &p->loop, fd)) != 0)
		return rc;
	p->sout.data = p;
	p->sout.on_error = on_error;
	p->sout.on_drain = on_drain;
	p->sout.before_write = before_write;
	p->sink = &pub_stream_sink;
	/* the run is known by now: the journal fixed the epoch, the listen
	 * the origin */
	if (p->key.len > 0) {
		if (gd_tagkey_derive(&p->tk, &p->key, p->epoch, p->origin,
		    p->origin_len) != 0)
			return UV_EINVAL;
		p->tags = 1;
	}
	if (p->opt.armor)
		return 0;	/* every line stands alone: no stream header */
	if ((d = gd_out_reserve(&p->sout, GD_STREAM_HDR)) == NULL)
		return UV_ENOMEM;
	gd_out_commit(&p->sout, gd_stream_header_v(d, p->tags ?
	    GD_STREAM_VERSION_TAGS : GD_STREAM_VERSION));
	return 0;
}
