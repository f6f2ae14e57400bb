/* The pool of batch buffers (see bcast.h). */
#include "bcast.h"

#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

void gd_bpool_init(struct gd_bpool *p, size_t cap, uint32_t keep)
{
	long pg = sysconf(_SC_PAGESIZE);
	size_t page = pg > 0 ? (size_t)pg : 4096;

	memset(p, 0, sizeof(*p));
	p->bytes = (sizeof(struct gd_bcast) + cap + page - 1) / page * page;
	p->keep = keep;
}

struct gd_bcast *gd_bpool_get(struct gd_bpool *p)
{
	struct gd_bcast *b = p->free;

	if (b != NULL) {
		p->free = b->next;
		p->nfree--;
	} else {
		void *m = mmap(NULL, p->bytes, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (m == MAP_FAILED)
			return NULL;
		b = m;
		b->pool = p;
		b->cap = p->bytes - sizeof(*b);
	}
	b->refs = 1;
	b->nblk = 0;
	b->len = 0;
	return b;
}

void gd_bpool_put(struct gd_bpool *p, struct gd_bcast *b)
{
	b->next = p->free;
	p->free = b;
	p->nfree++;
}

void gd_bpool_trim(struct gd_bpool *p)
{
	while (p->nfree > p->keep) {
		struct gd_bcast *b = p->free;
		p->free = b->next;
		p->nfree--;
		munmap(b, p->bytes);
	}
}

void gd_bpool_free(struct gd_bpool *p)
{
	p->keep = 0;
	gd_bpool_trim(p);
}
