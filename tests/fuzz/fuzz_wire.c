/* The wire protocol between gdpub and gdsub (lib/wire.c): frames as they
 * come off a TCP connection, in pieces, through the receive buffer both
 * ends use. The first 4 bytes are the reader's max_block; the fifth says
 * how many bytes a read brings (its low 6 bits) and whether the frames
 * come under CRC32C seals (its top bit: gd_seal_next acts on nothing
 * before the seal after it verifies). Every frame accepted is decoded as what its type says (block, hello, welcome, ack
 * pairs, pre-ack ids, a consumption report) and the control frames
 * encoded again must decode the same. */
#include "fuzz.h"
#include "seal.h"
#include "wire.h"

static volatile uint8_t sink;

static void check_frame(const struct gd_frame *f, uint32_t max_block)
{
	static uint8_t enc[GD_WIRE_HDR + GD_CTRL_MAX];
	struct gd_block b;
	struct gd_hello h, h2;
	struct gd_welcome w, w2;
	struct gd_frame g;
	size_t used, n;
	uint32_t i;
	uint64_t id, seq, sum = 0;

	switch (f->type) {
	case GD_F_BLOCK:
		if (gd_wire_get_block(f, &b) != 0 || b.len > max_block)
			abort();
		if (b.len > 0)	/* touch both ends of the payload */
			sink ^= b.data[0] ^ b.data[b.len - 1];
		break;
	case GD_F_HELLO:
		if (gd_wire_get_hello(f, &h) != 0)
			break;
		n = gd_wire_hello(enc, &h);
		if (gd_wire_next(enc, n, 0, &g, &used) != 1 || used != n ||
		    gd_wire_get_hello(&g, &h2) != 0 ||
		    strcmp(h.name, h2.name) != 0 || h.version != h2.version)
			abort();
		break;
	case GD_F_WELCOME:
		if (gd_wire_get_welcome(f, &w) != 0)
			break;
		n = gd_wire_welcome(enc, &w);
		if (gd_wire_next(enc, n, 0, &g, &used) != 1 || used != n ||
		    gd_wire_get_welcome(&g, &w2) != 0 ||
		    strcmp(w.origin, w2.origin) != 0 || w.epoch != w2.epoch)
			abort();
		(void)gd_ack_status_str((int)w.ack_status);
		break;
	case GD_F_ACK:
		if (f->len % GD_ACK_SIZE != 0 ||
		    f->len / GD_ACK_SIZE > GD_ACKS_PER_FRAME)
			abort();
		for (i = 0; i < f->len / GD_ACK_SIZE; i++) {
			gd_wire_ack_at(f->body, i, &id, &seq);
			sum += id ^ seq;
		}
		(void)sum;
		break;
	case GD_F_PREACK:	/* batched like acks: up to GD_CTRL_MAX * 64 */
		if (f->len % GD_PREACK_SIZE != 0 ||
		    f->len > (uint32_t)GD_CTRL_MAX * 64)
			abort();
		for (i = 0; i < f->len / GD_PREACK_SIZE; i++)
			sum += gd_get64(f->body + (size_t)i * GD_PREACK_SIZE);
		(void)sum;
		break;
	case GD_F_CONSUMED:	/* one u64: the last block the stage read */
		if (f->len != 8)
			abort();
		sum += gd_get64(f->body);
		(void)sum;
		break;
	default:
		if (f->len > GD_CTRL_MAX)
			abort();
		break;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct gd_rbuf rb;
	struct gd_seal sl = { 0 };
	uint32_t max_block;
	size_t pos = 0, step;

	if (size < 5)
		return 0;
	max_block = gd_get32(data) % (1u << 21);
	step = 1 + data[4] % 64;	/* bytes per read, as TCP cuts them */
	if ((data[4] & 0x80) && gd_seal_start(&sl, GD_SEAL_CRC, NULL) != 0)
		abort();
	data += 5;
	size -= 5;
	/* the cap as gdsub's: the largest span, its seal and a read */
	if (gd_rbuf_init(&rb, 256, GD_BLOCK_HDR + (size_t)max_block +
	    GD_WIRE_HDR + GD_CTRL_MAX * 64 + GD_SEAL_FRAME_MAX + 64) != 0)
		abort();
	while (pos < size) {
		uint8_t *p;
		size_t room, n = size - pos < step ? size - pos : step;
		int k = 1;

		if (gd_rbuf_space(&rb, n, &p, &room) != 0 || room < n)
			abort();
		memcpy(p, data + pos, n);
		gd_rbuf_commit(&rb, n);
		pos += n;
		while (k == 1) {
			struct gd_frame f;
			k = gd_seal_next(&sl, &rb, max_block, &f);
			if (k == 1) {
				/* behind the read position, within what came;
				 * under seals, never a seal (without, a seal is
				 * a frame like another, out of place) */
				if (f.body + f.len > gd_rbuf_head(&rb) ||
				    (f.type == GD_F_SEAL && gd_seal_on(&sl)))
					abort();
				check_frame(&f, max_block);
			}
		}
		if (k < 0)
			break;	/* the connection is closed */
		gd_rbuf_compact(&rb);
		/* what the reader holds never exceeds one span's bound */
		if (gd_rbuf_avail(&rb) > GD_WIRE_HDR + 24 + (size_t)max_block +
		    GD_CTRL_MAX * 64 + GD_SEAL_FRAME_MAX + step)
			abort();
	}
	gd_rbuf_free(&rb);
	gd_seal_free(&sl);
	return 0;
}
