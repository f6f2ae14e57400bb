/* gdpub -o: the sink that writes every block, floor and end as a frame of
 * the framed stream (gdkit-stream(5)) on stdout or a file, instead of
 * serving blocks over TCP; acknowledgements still come over TCP. With
 * --armor the frames are text lines (armor.h) and the stream has no
 * header: the frames ready at a flush share lines up to --armor-batch
 * bytes, since a line engine's cost is per line (a broker message); a
 * frame too long for a batch is armored where it was put, a line of its
 * own. With a key (GDpub_authKeyFile) every frame carries a tag (tag.h),
 * since whoever can reach the engine in the middle could otherwise write
 * frames too. */
#include "pub_int.h"
#include "armor.h"
#include "log.h"

#include <stdlib.h>
#include <string.h>

_Static_assert(GD_PUB_ARMOR_BATCH_MAX == GD_ARMOR_BATCH_MAX,
    "gdpub --armor-batch takes what readers read");

static void no_memory(struct pub *p)
{
	if (p->eof)
		return;
	gd_err("out of memory for the block stream; no more input is read");
	p->stop_code = GD_EX_FAIL;
	pub_drop_input(p);
}

/* The batched frames as one line, in the output buffer. */
static void line_out(struct pub *p)
{
	uint8_t *d;

	if (p->alen == 0)
		return;
	if ((d = gd_out_reserve(&p->sout, gd_armor_size(p->alen))) != NULL)
		gd_out_commit(&p->sout, gd_armor_encode(d, p->abuf, p->alen));
	else
		no_memory(p);
	p->alen = 0;
}

/* Room in the batch for a frame of size bytes, emptying it first if it
 * is too full; NULL when the frame needs a line of its own. */
static uint8_t *batch_room(struct pub *p, size_t size)
{
	size_t batch = p->opt.armor_batch ? p->opt.armor_batch :
	    GD_ARMOR_BATCH_DEFAULT;

	if (p->abuf == NULL) {
		size_t room = gd_armor_batch_room(batch);
		/* two frames at least, or a line per frame is what we do */
		if (room < 2 * gd_sframe_size(1, 0) ||
		    (p->abuf = malloc(room)) == NULL)
			return NULL;
		p->aroom = room;
	}
	if (size > p->aroom) {
		line_out(p);	/* the lines keep the frames' order */
		return NULL;
	}
	if (p->alen + size > p->aroom)
		line_out(p);
	return p->abuf + p->alen;
}

/* f at dst, tagged when the run has a key; its size */
static size_t put(struct pub *p, uint8_t *dst, const struct gd_sframe *f)
{
	return p->tags ? gd_tag_sframe_put(&p->tk, dst, f) :
	    gd_sframe_put(dst, f);
}

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
	if (p->opt.armor && (d = batch_room(p, size)) != NULL) {
		p->alen += put(p, d, &f);
		return;
	}
	if ((d = gd_out_reserve(&p->sout, p->opt.armor ? gd_armor_size(size) :
	    size)) != NULL) {
		put(p, p->opt.armor ? d + GD_ARMOR_PREFIX_LEN : d, &f);
		if (p->opt.armor)
			size = gd_armor_in_place(d, size);
		gd_out_commit(&p->sout, size);
	} else {
		no_memory(p);
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
	line_out(p);
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
	line_out(p);
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
