/* gdsub's state in memory (see state.h): per publisher run, the ranges of
 * acknowledged sequence indexes, bounded per run and in runs (the least
 * recently used run goes first). No I/O here: state.c logs and loads. */
#include "state.h"
#include "state_int.h"
#include "grow.h"
#include "idmap.h"

#include <stdlib.h>
#include <string.h>

/* ---- ranges of one run ---- */

static uint64_t offset_of(const struct gd_srange *r)
{
	return r->id_lo - r->lo;	/* wraps: only compared for equality */
}

/* The live ranges. A run that never had one has no array: NULL + 0 is
 * undefined in C, so no arithmetic on it (UBSan under clang; this came
 * back once already when the code moved, tests/fuzz/regress/state). */
static struct gd_srange *ranges(const struct gd_srun *run)
{
	return run->r != NULL ? run->r + run->off : NULL;
}

/* The index of the first range whose hi is at or above seq (n if none). */
static uint32_t lower(const struct gd_srun *run, uint64_t seq)
{
	const struct gd_srange *r = ranges(run);
	uint32_t a = 0, b = run->n;

	while (a < b) {
		uint32_t m = a + (b - a) / 2;
		if (r[m].hi < seq)
			a = m + 1;
		else
			b = m;
	}
	return a;
}

static int room_for_one(struct gd_srun *run)
{
	if (run->off + run->n < run->cap)
		return 0;
	if (run->off > 0) {	/* ranges were forgotten at the front */
		memmove(run->r, run->r + run->off, run->n * sizeof(*run->r));
		run->off = 0;
		return 0;
	}
	/* one past the bound: the merge adds before the oldest is forgotten */
	return GD_GROW(run->r, run->cap, run->cap + 1, GD_STATE_RANGES + 1);
}

/* The common case of one acknowledgement, without a call: the index
 * after the last range's, which grows by it. 1 when done so, else 0. */
static int append_one(struct gd_srun *run, uint64_t seq, uint64_t id)
{
	struct gd_srange *t;

	if (run->n == 0)
		return 0;
	t = &run->r[run->off + run->n - 1];
	if (t->hi != seq)
		return 0;
	t->linear = t->linear && offset_of(t) == id - seq;
	t->hi = seq + 1;
	return 1;
}

/* Add [lo, hi) to the run, merging with the ranges it touches. */
int gd_srun_add_range(struct gd_srun *run, const struct gd_srange *in)
{
	struct gd_srange *r = ranges(run), m = *in;
	uint32_t i, j;

	if (m.lo >= m.hi)
		return 0;
	/* the common case: the next index after the last range */
	if (run->n > 0 && r[run->n - 1].hi == m.lo) {
		struct gd_srange *t = &r[run->n - 1];
		t->linear = t->linear && m.linear && offset_of(t) == offset_of(&m);
		t->hi = m.hi;
		return 0;
	}
	i = lower(run, m.lo);
	for (j = i; j < run->n && r[j].lo <= m.hi; j++) {
		int lin = m.linear && r[j].linear &&
		    offset_of(&m) == offset_of(&r[j]);
		if (r[j].lo < m.lo) {
			m.lo = r[j].lo;
			m.id_lo = r[j].id_lo;
		}
		if (r[j].hi > m.hi)
			m.hi = r[j].hi;
		m.linear = lin;
	}
	if (j > i) {		/* replaces r[i .. j) */
		r[i] = m;
		memmove(&r[i + 1], &r[j], (run->n - j) * sizeof(*r));
		run->n -= j - i - 1;
		return 0;
	}
	if (room_for_one(run) != 0)
		return -1;
	r = ranges(run);
	memmove(&r[i + 1], &r[i], (run->n - i) * sizeof(*r));
	r[i] = m;
	run->n++;
	if (run->n > GD_STATE_RANGES) {	/* forget the oldest */
		run->off++;
		run->n--;
		run->n_forgotten++;
	}
	return 0;
}

/* The range holding seq, or NULL. */
static const struct gd_srange *find(const struct gd_srun *run, uint64_t seq)
{
	const struct gd_srange *r;
	uint32_t i;

	if (run == NULL || run->n == 0 || seq == UINT64_MAX ||
	    seq >= run->r[run->off + run->n - 1].hi)
		return NULL;	/* past every range: a new block's index */
	i = lower(run, seq + 1);	/* the first range with hi > seq */
	if (i == run->n)
		return NULL;
	r = &run->r[run->off + i];
	return seq < r->lo ? NULL : r;
}

int gd_state_has(const struct gd_srun *run, uint64_t seq, uint64_t id)
{
	const struct gd_srange *r = find(run, seq);

	if (r == NULL)
		return 0;
	if (r->linear && r->id_lo + (seq - r->lo) != id)
		return -1;
	return 1;
}

int gd_state_acked(const struct gd_srun *run, uint64_t seq)
{
	return find(run, seq) != NULL;
}

uint64_t gd_state_acked_end(const struct gd_srun *run, uint64_t seq)
{
	const struct gd_srange *r = find(run, seq);

	return r ? r->hi : seq;
}

uint64_t gd_state_next_acked(const struct gd_srun *run, uint64_t seq)
{
	uint32_t i;

	if (run->n == 0 || seq == UINT64_MAX)
		return UINT64_MAX;
	i = lower(run, seq + 1);	/* the first range with hi > seq */
	if (i == run->n)
		return UINT64_MAX;
	return run->r[run->off + i].lo > seq ? run->r[run->off + i].lo : seq;
}

uint64_t gd_state_resume(const struct gd_srun *run)
{
	return gd_state_acked_end(run, run->floor > 1 ? run->floor : 1);
}

void gd_state_floor(struct gd_srun *run, uint64_t floor)
{
	if (floor > run->floor) {
		run->floor = floor;
		run->floor_dirty = 1;
	}
}

/* ---- runs ---- */

static void run_clear(struct gd_srun *run)
{
	run->off = run->n = 0;
	run->npend = 0;
	run->floor = 0;
	run->floor_dirty = 0;
	run->n_forgotten = 0;
	run->ncid = run->cidhead = 0;
}

struct gd_srun *gd_srun_new(void)
{
	return calloc(1, sizeof(struct gd_srun));
}

int gd_srun_ack(struct gd_srun *run, uint64_t seq, uint64_t id)
{
	struct gd_srange m = { seq, seq + 1, id, 1 };

	if (seq == UINT64_MAX || append_one(run, seq, id))
		return 0;
	return gd_srun_add_range(run, &m);
}

void gd_srun_free(struct gd_srun *run)
{
	if (run == NULL)
		return;
	free(run->r);
	free(run->pend);
	free(run->cid);
	free(run);
}

/* The run of origin o; of a cluster's (@CLUSTER), the member's of that
 * epoch. */
static struct gd_srun *find_origin(struct gd_state *st, const char *o,
    size_t n, uint64_t epoch)
{
	uint32_t i;

	for (i = 0; i < st->nruns; i++)
		if (st->runs[i]->olen == n && memcmp(st->runs[i]->origin, o, n) == 0 &&
		    (o[0] != '@' || st->runs[i]->epoch == epoch))
			return st->runs[i];
	return NULL;
}

int gd_srun_cid_add(struct gd_srun *run, uint64_t id)
{
	if (run->ncid < GD_STATE_CIDS) {
		if (GD_GROW(run->cid, run->cidcap, run->ncid + 1,
		    GD_STATE_CIDS) != 0)
			return -1;
		run->cid[run->ncid++] = id;
		return 0;
	}
	run->cid[run->cidhead] = id;	/* full: over the oldest */
	run->cidhead = (run->cidhead + 1) % GD_STATE_CIDS;
	return 0;
}

/* Make room for one more run: grow, or forget the least recently used. */
static int runs_room(struct gd_state *st)
{
	uint32_t i, lru = 0;

	if (st->nruns < st->caprun)
		return 0;
	if (st->caprun < GD_STATE_RUNS)
		return GD_GROW(st->runs, st->caprun, st->caprun + 1,
		    GD_STATE_RUNS);
	for (i = 1; i < st->nruns; i++)
		if (st->runs[i]->used < st->runs[lru]->used)
			lru = i;
	gd_srun_free(st->runs[lru]);
	st->runs[lru] = st->runs[--st->nruns];
	return 0;
}

struct gd_srun *gd_state_run(struct gd_state *st, const char *origin,
    size_t olen, uint64_t epoch)
{
	struct gd_srun *run;

	if (olen == 0 || olen > GD_STATE_ORIGIN_MAX)
		return NULL;
	if ((run = find_origin(st, origin, olen, epoch)) != NULL) {
		if (run->epoch == epoch)
			return run;
		/* the publisher's earlier run will never resend anything */
		run_clear(run);
	} else {
		if (runs_room(st) != 0 || (run = calloc(1, sizeof(*run))) == NULL)
			return NULL;
		memcpy(run->origin, origin, olen);
		run->olen = olen;
		st->runs[st->nruns++] = run;
	}
	run->epoch = epoch;
	run->num = st->next_num++;
	run->logged = 0;
	run->used = ++st->clock;
	return run;
}

int gd_state_ack(struct gd_state *st, struct gd_srun *run, uint64_t seq,
    uint64_t id)
{
	struct gd_srange m = { seq, seq + 1, id, 1 };

	if (seq == UINT64_MAX)
		return 0;	/* cannot be a range end; never sent */
	/* acknowledgements not yet written are of blocks the subscriber
	 * held unacknowledged: its dedup table holds no more (and every
	 * loop turn's commit writes them out) */
	if (GD_GROW(run->pend, run->cappend, run->npend + 1,
	    GD_IDMAP_MAX_SLOTS) != 0)
		return -1;
	if ((!append_one(run, seq, id) && gd_srun_add_range(run, &m) != 0) ||
	    (run->origin[0] == '@' && gd_srun_cid_add(run, id) != 0))
		return -1;
	run->pend[run->npend].seq = seq;
	run->pend[run->npend++].id = id;
	run->used = ++st->clock;
	return 0;
}
