/* Unit tests of lib/pending.c: the publisher's table of blocks sent and not
 * yet resolved — lookup by id, distinct-ack counting, the deadline list
 * (touch moves a resent block to the tail), slot reuse, growth, and the
 * floor (oldest pending sequence index) across gaps and bitmap growth.
 * Random workloads use a fixed seed and are checked against a plain
 * reference model. */
#include "pending.h"
#include "unit.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint64_t rnd(void)	/* splitmix64 */
{
	uint64_t z = (rng += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static uint64_t id_of(uint64_t seq)	/* distinct, scattered ids */
{
	return seq * 0x9e3779b97f4a7c15ull ^ 0x5555;
}

/* the deadline list walks head -> tail with consistent back links and
 * holds exactly count entries */
static int list_ok(const struct gd_pending *p)
{
	uint32_t s, prev = GD_NONE, n = 0;
	for (s = p->head; s != GD_NONE; s = p->e[s].next) {
		if (p->e[s].prev != prev || ++n > p->count)
			return 0;
		prev = s;
	}
	return n == p->count && p->tail == prev;
}

TEST(empty_table)
{
	struct gd_pending p;
	ASSERT_EQ(gd_pending_init(&p, 1000, 0), 0);
	ASSERT_EQ(p.count, 0);
	ASSERT_U64(gd_pending_deadline(&p), 0);
	ASSERT_EQ(gd_pending_expired(&p, UINT64_MAX), GD_NONE);
	ASSERT_EQ(gd_pending_find(&p, 1), GD_NONE);
	ASSERT_EQ(gd_pending_find(&p, 0), GD_NONE);
	ASSERT_U64(gd_pending_floor(&p, 5), 5);
	ASSERT_U64(gd_pending_floor(&p, 0), 0);
	gd_pending_clear_bit(&p, 3);	/* nothing to clear */
	ASSERT(list_ok(&p));
	gd_pending_free(&p);
}

TEST(add_find_remove)
{
	struct gd_pending p;
	uint32_t s1, s2, s3;
	struct gd_pend *e;

	ASSERT_EQ(gd_pending_init(&p, 1000, 16), 0);
	s1 = gd_pending_add(&p, 101, 1, 0, 3, 7, 10);
	s2 = gd_pending_add(&p, 0, 2, 3, 3, 8, 20);		/* id 0 is an id */
	s3 = gd_pending_add(&p, UINT64_MAX, 3, 6, 5, 9, 30);
	ASSERT(s1 != GD_NONE && s2 != GD_NONE && s3 != GD_NONE);
	ASSERT(s1 != s2 && s2 != s3 && s1 != s3);
	ASSERT_EQ(p.count, 3);
	ASSERT_EQ(gd_pending_find(&p, 101), s1);
	ASSERT_EQ(gd_pending_find(&p, 0), s2);
	ASSERT_EQ(gd_pending_find(&p, UINT64_MAX), s3);
	ASSERT_EQ(gd_pending_find(&p, 102), GD_NONE);

	e = gd_pending_at(&p, s3);
	ASSERT_U64(e->id, UINT64_MAX);
	ASSERT_EQ(e->off, 6);
	ASSERT_EQ(e->len, 5);
	ASSERT_EQ(gd_pend_owner(e), 9);
	ASSERT_U64(e->sent_ns, 30);
	ASSERT_EQ(e->seq32, 3);
	ASSERT_U64(e->acked, 0);
	ASSERT_EQ(gd_pend_acks(e), 0);
	ASSERT_EQ(gd_pend_resends(e), 0);
	ASSERT(list_ok(&p));

	gd_pending_remove(&p, s2);
	ASSERT_EQ(p.count, 2);
	ASSERT_EQ(gd_pending_find(&p, 0), GD_NONE);
	ASSERT_EQ(gd_pending_find(&p, 101), s1);
	ASSERT_EQ(gd_pending_find(&p, UINT64_MAX), s3);
	ASSERT(list_ok(&p));
	gd_pending_remove(&p, s1);
	gd_pending_remove(&p, s3);
	ASSERT_EQ(p.count, 0);
	ASSERT_EQ(gd_pending_find(&p, 101), GD_NONE);
	ASSERT_EQ(gd_pending_find(&p, UINT64_MAX), GD_NONE);
	ASSERT_U64(gd_pending_deadline(&p), 0);
	ASSERT_EQ(p.head, GD_NONE);
	ASSERT_EQ(p.tail, GD_NONE);
	/* the same ids can be pending again */
	s1 = gd_pending_add(&p, 101, 4, 0, 3, 0, 40);
	ASSERT(s1 != GD_NONE);
	ASSERT_EQ(gd_pending_find(&p, 101), s1);
	ASSERT(list_ok(&p));
	gd_pending_free(&p);
}

TEST(ack_counting)
{
	struct gd_pending p;
	uint32_t s, t;

	ASSERT_EQ(gd_pending_init(&p, 1000, 0), 0);
	s = gd_pending_add(&p, 1, 1, 0, 0, 0, 0);
	t = gd_pending_add(&p, 2, 2, 0, 0, 0, 0);
	ASSERT_EQ(gd_pending_ack(&p, s, 0), 1);
	ASSERT_EQ(gd_pending_ack(&p, s, 0), 1);	/* same bit twice: once */
	ASSERT_EQ(gd_pending_ack(&p, s, 31), 2);
	ASSERT_EQ(gd_pending_ack(&p, s, 5), 3);
	ASSERT_EQ(gd_pending_ack(&p, s, 31), 3);
	ASSERT_U64(gd_pending_at(&p, s)->acked, (1u << 0) | (1u << 5) | (1u << 31));
	ASSERT_EQ(gd_pend_acks(gd_pending_at(&p, s)), 3);
	/* acks of one block do not touch another */
	ASSERT_EQ(gd_pend_acks(gd_pending_at(&p, t)), 0);
	ASSERT_EQ(gd_pending_ack(&p, t, 5), 1);
	ASSERT_EQ(gd_pending_ack(&p, t, 6), 2);
	gd_pending_free(&p);
}

TEST(clear_bit)
{
	struct gd_pending p;
	uint32_t s[4];
	unsigned i;

	ASSERT_EQ(gd_pending_init(&p, 1000, 0), 0);
	for (i = 0; i < 4; i++)
		s[i] = gd_pending_add(&p, 10 + i, i, 0, 0, 0, i);
	gd_pending_ack(&p, s[0], 3);
	gd_pending_ack(&p, s[0], 4);
	gd_pending_ack(&p, s[1], 4);
	gd_pending_ack(&p, s[2], 3);
	gd_pending_ack(&p, s[3], 31);
	gd_pending_clear_bit(&p, 3);
	ASSERT_U64(gd_pending_at(&p, s[0])->acked, 1ull << 4);
	ASSERT_EQ(gd_pend_acks(gd_pending_at(&p, s[0])), 1);
	ASSERT_U64(gd_pending_at(&p, s[1])->acked, 1ull << 4);
	ASSERT_EQ(gd_pend_acks(gd_pending_at(&p, s[1])), 1);
	ASSERT_U64(gd_pending_at(&p, s[2])->acked, 0);
	ASSERT_EQ(gd_pend_acks(gd_pending_at(&p, s[2])), 0);
	ASSERT_EQ(gd_pend_acks(gd_pending_at(&p, s[3])), 1);
	/* clearing again changes nothing; the slot can ack anew */
	gd_pending_clear_bit(&p, 3);
	ASSERT_EQ(gd_pend_acks(gd_pending_at(&p, s[0])), 1);
	ASSERT_EQ(gd_pending_ack(&p, s[2], 3), 1);
	gd_pending_clear_bit(&p, 31);
	ASSERT_U64(gd_pending_at(&p, s[3])->acked, 0);
	ASSERT_EQ(gd_pend_acks(gd_pending_at(&p, s[3])), 0);
	gd_pending_free(&p);
}

TEST(expired_deadline_touch)
{
	struct gd_pending p;
	uint32_t a, b, c;

	ASSERT_EQ(gd_pending_init(&p, 100, 0), 0);
	a = gd_pending_add(&p, 1, 1, 0, 0, 0, 0);
	b = gd_pending_add(&p, 2, 2, 0, 0, 0, 10);
	c = gd_pending_add(&p, 3, 3, 0, 0, 0, 20);
	ASSERT_U64(gd_pending_deadline(&p), 100);
	ASSERT_EQ(gd_pending_expired(&p, 99), GD_NONE);
	ASSERT_EQ(gd_pending_expired(&p, 100), a);	/* at the deadline */
	ASSERT_EQ(gd_pending_expired(&p, 1000), a);	/* oldest first */

	/* a resent: new deadline, behind c */
	gd_pending_touch(&p, a, 150);
	ASSERT(list_ok(&p));
	ASSERT_EQ(p.head, b);
	ASSERT_EQ(p.tail, a);
	ASSERT_U64(gd_pending_at(&p, a)->sent_ns, 150);
	ASSERT_U64(gd_pending_deadline(&p), 110);
	ASSERT_EQ(gd_pending_expired(&p, 109), GD_NONE);
	ASSERT_EQ(gd_pending_expired(&p, 110), b);
	gd_pending_touch(&p, b, 160);
	ASSERT_EQ(gd_pending_expired(&p, 119), GD_NONE);
	ASSERT_EQ(gd_pending_expired(&p, 120), c);
	/* touching the tail keeps the order, moves its deadline */
	gd_pending_touch(&p, b, 170);
	ASSERT(list_ok(&p));
	ASSERT_EQ(p.tail, b);
	ASSERT_U64(gd_pending_at(&p, b)->sent_ns, 170);
	/* removing the head exposes the next deadline */
	gd_pending_remove(&p, c);
	ASSERT_U64(gd_pending_deadline(&p), 250);
	ASSERT_EQ(gd_pending_expired(&p, 249), GD_NONE);
	ASSERT_EQ(gd_pending_expired(&p, 250), a);
	gd_pending_remove(&p, a);
	ASSERT_EQ(gd_pending_expired(&p, 270), b);
	/* a single entry: touch is a no-op on the order */
	gd_pending_touch(&p, b, 300);
	ASSERT(list_ok(&p));
	ASSERT_EQ(p.head, b);
	ASSERT_U64(gd_pending_deadline(&p), 400);
	gd_pending_remove(&p, b);
	ASSERT_EQ(gd_pending_expired(&p, UINT64_MAX), GD_NONE);
	ASSERT_U64(gd_pending_deadline(&p), 0);
	ASSERT(list_ok(&p));
	gd_pending_free(&p);
}

/* Expiry order over many blocks, with resends at random: the expired
 * blocks come out in (sent_ns, order of sending) order. */
TEST(expiry_order_many)
{
	enum { N = 5000 };
	struct gd_pending p;
	uint64_t now = 1000, last_deadline = 0;
	uint32_t n = 0, s;
	unsigned i;

	ASSERT_EQ(gd_pending_init(&p, 500, 0), 0);
	for (i = 0; i < N; i++)
		gd_pending_add(&p, id_of(i), i, 0, 0, 0, now + i / 10);
	/* walk time forward; expired blocks are resent once, then resolved */
	for (now = 1000; p.count > 0; now += 7) {
		while ((s = gd_pending_expired(&p, now)) != GD_NONE) {
			struct gd_pend *e = gd_pending_at(&p, s);
			uint64_t dl = e->sent_ns + 500;
			if (dl < last_deadline)
				FAILF("deadline %" PRIu64 " after %" PRIu64, dl,
				    last_deadline);
			last_deadline = dl;
			if (gd_pend_resends(e) == 0 && (rnd() & 1)) {
				gd_pend_resent(e);
				gd_pending_touch(&p, s, now);
			} else {
				gd_pending_remove(&p, s);
				n++;
			}
		}
		if (now > 1000000)
			break;
	}
	ASSERT_EQ(n, N);
	ASSERT_EQ(p.count, 0);
	ASSERT(list_ok(&p));
	gd_pending_free(&p);
}

TEST(free_slot_reuse)
{
	struct gd_pending p;
	uint32_t a, b, c, d;

	ASSERT_EQ(gd_pending_init(&p, 1000, 0), 0);
	a = gd_pending_add(&p, 1, 1, 0, 0, 0, 0);
	b = gd_pending_add(&p, 2, 2, 0, 0, 0, 0);
	gd_pending_remove(&p, a);
	c = gd_pending_add(&p, 3, 3, 0, 0, 0, 0);
	ASSERT_EQ(c, a);			/* freed slot taken first */
	ASSERT_EQ(gd_pending_find(&p, 3), a);
	ASSERT_EQ(gd_pending_find(&p, 1), GD_NONE);
	ASSERT_EQ(gd_pend_acks(gd_pending_at(&p, c)), 0);
	gd_pending_remove(&p, b);
	gd_pending_remove(&p, c);
	d = gd_pending_add(&p, 4, 4, 0, 0, 0, 0);
	ASSERT(d == b || d == c);
	ASSERT_EQ(p.slab.cap, 1024);		/* no growth for reuse */
	/* steady state add/remove never grows the slot array */
	{
		uint64_t seq;
		for (seq = 5; seq < 50000; seq++) {
			uint32_t s = gd_pending_add(&p, seq, seq, 0, 0, 0, seq);
			gd_pending_remove(&p, s);
		}
	}
	ASSERT_EQ(p.slab.cap, 1024);
	ASSERT_EQ(p.count, 1);
	ASSERT_EQ(gd_pending_find(&p, 4), d);
	ASSERT_U64(gd_pending_floor(&p, 50000), 4);
	gd_pending_free(&p);
}

/* Grow past 1024 and 100000 entries, then remove in random order,
 * checking lookups and the floor against a reference as we go. */
static void grow_and_remove(uint32_t total)
{
	struct gd_pending p;
	uint32_t *slot = malloc(total * sizeof(*slot));
	uint32_t *order = malloc(total * sizeof(*order));
	unsigned char *gone = calloc(total, 1);
	uint64_t base = 1000, lo = 0;
	uint32_t i, bad = 0;

	ASSERT_EQ(gd_pending_init(&p, 1000, 0), 0);
	for (i = 0; i < total; i++) {
		slot[i] = gd_pending_add(&p, id_of(i), base + i, 0, i, i, i);
		if (slot[i] == GD_NONE)
			bad++;
		order[i] = i;
	}
	ASSERT_EQ(bad, 0);
	ASSERT_EQ(p.count, total);
	ASSERT(p.slab.cap >= total);
	ASSERT(list_ok(&p));
	for (i = 0; i < total; i++)
		if (gd_pending_find(&p, id_of(i)) != slot[i])
			bad++;
	ASSERT_EQ(bad, 0);
	ASSERT_U64(gd_pending_floor(&p, base + total), base);

	for (i = total - 1; i > 0; i--) {	/* Fisher-Yates */
		uint32_t j = (uint32_t)(rnd() % (i + 1)), t = order[i];
		order[i] = order[j];
		order[j] = t;
	}
	for (i = 0; i < total; i++) {
		uint32_t k = order[i];
		uint64_t fl;
		if (gd_pending_find(&p, id_of(k)) != slot[k])
			bad++;
		gd_pending_remove(&p, slot[k]);
		gone[k] = 1;
		while (lo < total && gone[lo])
			lo++;
		fl = gd_pending_floor(&p, base + total);
		if (fl != base + lo) {
			if (bad++ < 5)
				FAILF("after removing %u of %u: floor %" PRIu64
				    " want %" PRIu64, i + 1, total, fl, base + lo);
		}
		if (gd_pending_find(&p, id_of(k)) != GD_NONE)
			bad++;
		if ((i & 4095) == 0 && !list_ok(&p))
			bad++;
	}
	ASSERT_EQ(bad, 0);
	ASSERT_EQ(p.count, 0);
	ASSERT(list_ok(&p));
	ASSERT_U64(gd_pending_floor(&p, base + total), base + total);
	/* every id gone */
	for (i = 0; i < total; i++)
		if (gd_pending_find(&p, id_of(i)) != GD_NONE)
			bad++;
	ASSERT_EQ(bad, 0);
	gd_pending_free(&p);
	free(slot);
	free(order);
	free(gone);
}

TEST(growth_past_1024)
{
	grow_and_remove(3000);
}

TEST(growth_past_100000)
{
	grow_and_remove(120000);
}

TEST(floor_basic)
{
	struct gd_pending p;
	uint32_t s1, s2, s5, s9;

	ASSERT_EQ(gd_pending_init(&p, 1000, 0), 0);
	ASSERT_U64(gd_pending_floor(&p, 1), 1);
	s1 = gd_pending_add(&p, 11, 1, 0, 0, 0, 0);
	s2 = gd_pending_add(&p, 12, 2, 0, 0, 0, 0);
	/* 3 and 4 are never pending (REJECTed, or resolved at once) */
	s5 = gd_pending_add(&p, 15, 5, 0, 0, 0, 0);
	s9 = gd_pending_add(&p, 19, 9, 0, 0, 0, 0);
	ASSERT_U64(gd_pending_floor(&p, 10), 1);
	gd_pending_remove(&p, s2);
	ASSERT_U64(gd_pending_floor(&p, 10), 1);	/* 1 still pending */
	gd_pending_remove(&p, s1);
	ASSERT_U64(gd_pending_floor(&p, 10), 5);	/* skips the gap 2..4 */
	gd_pending_remove(&p, s9);
	ASSERT_U64(gd_pending_floor(&p, 10), 5);
	gd_pending_remove(&p, s5);
	ASSERT_U64(gd_pending_floor(&p, 10), 10);	/* none pending */
	ASSERT_U64(gd_pending_floor(&p, 12), 12);
	/* start again after a long idle gap */
	s1 = gd_pending_add(&p, 100, 5000, 0, 0, 0, 0);
	ASSERT_U64(gd_pending_floor(&p, 5001), 5000);
	s2 = gd_pending_add(&p, 101, 5000 + 1023, 0, 0, 0, 0);
	s5 = gd_pending_add(&p, 102, 5000 + 1024, 0, 0, 0, 0);
	ASSERT_U64(gd_pending_floor(&p, 7000), 5000);
	gd_pending_remove(&p, s1);
	ASSERT_U64(gd_pending_floor(&p, 7000), 5000 + 1023);
	gd_pending_remove(&p, s2);
	ASSERT_U64(gd_pending_floor(&p, 7000), 5000 + 1024);
	gd_pending_remove(&p, s5);
	ASSERT_U64(gd_pending_floor(&p, 7000), 7000);
	gd_pending_free(&p);
}

/* Seq 1 stays pending while 5000 later blocks come and go: the bitmap has
 * to grow around it and the floor stays 1 until it is resolved. */
TEST(floor_stuck_oldest)
{
	struct gd_pending p;
	uint32_t s1, keep3000 = GD_NONE, keep4500 = GD_NONE;
	uint64_t seq, bad = 0;

	ASSERT_EQ(gd_pending_init(&p, 1000, 0), 0);
	s1 = gd_pending_add(&p, id_of(1), 1, 0, 0, 0, 0);
	for (seq = 2; seq <= 5001; seq++) {
		uint32_t s = gd_pending_add(&p, id_of(seq), seq, 0, 0, 0, seq);
		if (s == GD_NONE) {
			bad++;
			continue;
		}
		if (seq == 3000)
			keep3000 = s;
		else if (seq == 4500)
			keep4500 = s;
		else if (seq % 7 != 0)	/* some stay a while, resolved later */
			gd_pending_remove(&p, s);
		if (seq % 7 == 0 && seq > 14) {
			uint32_t o = gd_pending_find(&p, id_of(seq - 14));
			if (o == GD_NONE)
				bad++;
			else
				gd_pending_remove(&p, o);
		}
		if (gd_pending_floor(&p, seq + 1) != 1)
			bad++;
	}
	ASSERT_U64(bad, 0);
	ASSERT(p.nbits >= 4096);	/* grew around the stuck block */
	ASSERT_U64(gd_pending_floor(&p, 5002), 1);
	gd_pending_remove(&p, s1);
	ASSERT_U64(gd_pending_floor(&p, 5002), 3000);
	gd_pending_remove(&p, keep3000);
	ASSERT_U64(gd_pending_floor(&p, 5002), 4500);
	gd_pending_remove(&p, keep4500);
	/* what is left: multiples of 7 from 4991 on */
	ASSERT_U64(gd_pending_floor(&p, 5002), 4991);
	while (p.count > 0)
		gd_pending_remove(&p, p.head);
	ASSERT_U64(gd_pending_floor(&p, 5002), 5002);
	/* and the table is usable afterwards */
	s1 = gd_pending_add(&p, 7, 6000, 0, 0, 0, 0);
	ASSERT_U64(gd_pending_floor(&p, 6001), 6000);
	gd_pending_free(&p);
}

/* Sequence indexes beyond 2^32: the low 32 bits kept per entry suffice. */
TEST(floor_past_2_32)
{
	struct gd_pending p;
	uint64_t base = (1ull << 32) - 3, i;
	uint32_t s[8];

	ASSERT_EQ(gd_pending_init(&p, 1000, 0), 0);
	for (i = 0; i < 8; i++)
		s[i] = gd_pending_add(&p, 1000 + i, base + i, 0, 0, 0, 0);
	/* the full index comes back from its low 32 bits across 2^32: an
	 * acknowledgement is checked against it */
	for (i = 0; i < 8; i++)
		ASSERT_U64(gd_pending_seq(&p, gd_pending_at(&p, s[i])), base + i);
	ASSERT_U64(gd_pending_floor(&p, base + 8), base);
	gd_pending_remove(&p, s[0]);
	gd_pending_remove(&p, s[1]);
	gd_pending_remove(&p, s[2]);
	ASSERT_U64(gd_pending_floor(&p, base + 8), 1ull << 32);
	gd_pending_remove(&p, s[4]);
	gd_pending_remove(&p, s[3]);
	ASSERT_U64(gd_pending_floor(&p, base + 8), base + 5);
	for (i = 5; i < 8; i++)
		gd_pending_remove(&p, s[i]);
	ASSERT_U64(gd_pending_floor(&p, base + 8), base + 8);
	gd_pending_free(&p);
}

/* Random adds (increasing seq, sometimes skipping some) and removals of
 * random pending blocks, checked against a reference after every step. */
TEST(random_workload)
{
	enum { OPS = 200000, MAXSEQ = OPS + OPS / 4 };
	struct gd_pending p;
	uint32_t *slot = malloc(MAXSEQ * sizeof(*slot));
	uint64_t *live = malloc(MAXSEQ * sizeof(*live));	/* pending seqs */
	unsigned char *pend = calloc(MAXSEQ, 1);
	uint64_t next = 1, lo = 1, bad = 0;
	size_t nlive = 0, i;

	ASSERT_EQ(gd_pending_init(&p, 1000, 0), 0);
	for (i = 0; i < OPS && next < MAXSEQ - 2; i++) {
		uint64_t r = rnd();
		/* bursts: mostly add while small, mostly remove while big */
		int add = nlive < 10 || (r % 1000) < (nlive < 3000 ? 560u : 440u);
		if (add) {
			if ((r >> 20) % 10 == 0)
				next++;		/* a seq never pending */
			slot[next] = gd_pending_add(&p, id_of(next), next, 0, 0, 0, next);
			if (slot[next] == GD_NONE) {
				bad++;
				break;
			}
			pend[next] = 1;
			live[nlive++] = next;
			next++;
		} else {
			size_t k = (size_t)((r >> 16) % nlive);
			uint64_t q = live[k];
			if (gd_pending_find(&p, id_of(q)) != slot[q])
				bad++;
			gd_pending_remove(&p, slot[q]);
			pend[q] = 0;
			live[k] = live[--nlive];
		}
		while (lo < next && !pend[lo])
			lo++;
		if (gd_pending_floor(&p, next) != (nlive ? lo : next)) {
			if (bad++ < 5)
				FAILF("step %zu: floor %" PRIu64 " want %" PRIu64, i,
				    gd_pending_floor(&p, next), nlive ? lo : next);
		}
		if (p.count != nlive)
			bad++;
	}
	ASSERT_U64(bad, 0);
	ASSERT(list_ok(&p));
	for (i = 0; i < nlive; i++)
		if (gd_pending_find(&p, id_of(live[i])) != slot[live[i]])
			bad++;
	ASSERT_U64(bad, 0);
	gd_pending_free(&p);
	free(slot);
	free(live);
	free(pend);
}

/* The pass mark: npassed counts exactly the blocks last sent before it,
 * and they are the head of the deadline list, through adds, removals,
 * resends and a mark that moves both ways. */
TEST(pass_mark_random)
{
	struct gd_pending p;
	uint64_t seq = 1, now = 1, ords = 0;
	int i;

	ASSERT_EQ(gd_pending_init(&p, 1000, 64), 0);
	for (i = 0; i < 200000; i++) {
		uint64_t r = rnd() % 100;
		if (r < 45 || p.count == 0) {
			ASSERT(gd_pending_add(&p, id_of(seq), seq, 0, 1, 0,
			    now) != GD_NONE);
			seq++;
			ords++;
		} else if (r < 80) {
			uint32_t s = p.head;
			uint64_t k = rnd() % 8;
			while (k-- > 0 && p.e[s].next != GD_NONE)
				s = p.e[s].next;
			gd_pending_remove(&p, s);
		} else if (r < 90) {
			uint32_t s = p.head;
			uint64_t k = rnd() % 16;
			while (k-- > 0 && p.e[s].next != GD_NONE)
				s = p.e[s].next;
			gd_pending_touch(&p, s, now);
			ords++;
		} else if (r < 99) {
			/* forward mostly, sometimes back, sometimes past all */
			uint64_t m = rnd() % 10 == 0 ? UINT64_MAX :
			    ords > 40 ? ords - rnd() % 40 : 0;
			gd_pending_pass(&p, m);
		}
		now++;
		if (i % 97 == 0 || i > 199000) {
			uint32_t s, n = 0, before_cur = 1;
			for (s = p.head; s != GD_NONE; s = p.e[s].next) {
				int passed = p.e[s].ord < p.pass;
				if (s == p.pcur)
					before_cur = 0;
				ASSERT_EQ(passed, before_cur);
				n += (uint32_t)passed;
			}
			ASSERT_EQ(n, p.npassed);
		}
	}
	gd_pending_free(&p);
}

/* By sequence index (gd_pending_byseq): a random workload where some
 * blocks stay pending for long (their ring places taken by newer ones:
 * spilled to the hash) and the ring grows, against a table hashing every
 * id: gd_pending_find_seq gives each pending block by (id, seq), nothing
 * for a resolved one, a wrong id or a wrong seq; the floors agree. */
TEST(byseq_random)
{
	struct gd_pending a, h;
	enum { N = 60000, LIVE = 6000 };
	static uint64_t live[LIVE];	/* seqs pending, in both */
	static uint32_t sa[LIVE], sh[LIVE];
	size_t n = 0, i;
	uint64_t seq, gone[64];
	size_t ngone = 0;

	ASSERT_EQ(gd_pending_init(&a, 1000, 16), 0);
	ASSERT_EQ(gd_pending_init(&h, 1000, 16), 0);
	ASSERT_EQ(gd_pending_byseq(&a), 0);
	ASSERT_EQ(gd_pending_byseq(&a), 0);	/* again: still on */
	for (seq = 1; seq <= N; seq++) {
		/* grow to LIVE pending, at times shrink to a few */
		int adds = n < LIVE && (seq / 5000) % 3 != 2;
		if (adds || n == 0) {
			sa[n] = gd_pending_add(&a, id_of(seq), seq, 0, 0, 0, seq);
			sh[n] = gd_pending_add(&h, id_of(seq), seq, 0, 0, 0, seq);
			ASSERT(sa[n] != GD_NONE && sh[n] != GD_NONE);
			live[n++] = seq;
		}
		/* resolve one: mostly a recent one, so the old ones stay */
		if (n > 0 && (!adds || rnd() % 4 == 0)) {
			size_t k = rnd() % 16 == 0 ? rnd() % n :
			    n - 1 - rnd() % (n < 8 ? n : 8);
			gd_pending_remove(&a, sa[k]);
			gd_pending_remove(&h, sh[k]);
			gone[ngone++ % 64] = live[k];
			live[k] = live[--n];
			sa[k] = sa[n];
			sh[k] = sh[n];
		}
		if (seq % 997 != 0)
			continue;
		ASSERT_EQ(a.count, h.count);
		ASSERT(list_ok(&a));
		ASSERT_U64(gd_pending_floor(&a, seq + 1),
		    gd_pending_floor(&h, seq + 1));
		for (i = 0; i < n; i++) {
			uint64_t q = live[i];
			ASSERT_EQ(gd_pending_find_seq(&a, id_of(q), q), sa[i]);
			ASSERT_EQ(gd_pending_find_seq(&h, id_of(q), q), sh[i]);
			ASSERT_EQ(gd_pending_find_seq(&a, id_of(q) + 1, q),
			    GD_NONE);
			ASSERT_EQ(gd_pending_find_seq(&a, id_of(q), q + 1 +
			    (a.rmask + 1)), GD_NONE);
		}
		for (i = 0; i < ngone && i < 64; i++) {
			ASSERT_EQ(gd_pending_find_seq(&a, id_of(gone[i]),
			    gone[i]), GD_NONE);
			ASSERT_EQ(gd_pending_find_seq(&h, id_of(gone[i]),
			    gone[i]), GD_NONE);
		}
	}
	/* the ring grew, and some blocks were spilled into the hash */
	ASSERT(a.rmask + 1 >= 2 * LIVE);
	ASSERT(a.slab.map.count > 0);
	while (n > 0) {
		n--;
		gd_pending_remove(&a, sa[n]);
		gd_pending_remove(&h, sh[n]);
	}
	ASSERT_EQ(a.slab.map.count, 0);
	ASSERT_EQ(gd_pending_find_seq(&a, id_of(1), 1), GD_NONE);
	/* not after the first add */
	(void)gd_pending_add(&h, 1, N + 1, 0, 0, 0, 0);
	ASSERT_EQ(gd_pending_byseq(&h), -1);
	gd_pending_free(&a);
	gd_pending_free(&h);
}

int main(void)
{
	RUN(empty_table);
	RUN(add_find_remove);
	RUN(ack_counting);
	RUN(clear_bit);
	RUN(expired_deadline_touch);
	RUN(expiry_order_many);
	RUN(free_slot_reuse);
	RUN(growth_past_1024);
	RUN(growth_past_100000);
	RUN(floor_basic);
	RUN(floor_stuck_oldest);
	RUN(floor_past_2_32);
	RUN(random_workload);
	RUN(pass_mark_random);
	RUN(byseq_random);
	return UNIT_DONE();
}
