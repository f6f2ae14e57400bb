/* The pool of batch buffers (see bcast.h). */
#include "bcast.h"

#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* A pooled buffer is never freed, so the address sanitizer would not see
 * a use after its last unref: its data is poisoned while it waits in
 * the pool, as free() would have made it. */
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define GD_BPOOL_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define GD_BPOOL_ASAN 1
#endif
#ifdef GD_BPOOL_ASAN
#include <sanitizer/asan_interface.h>
#define POISON(b, n) ASAN_POISON_MEMORY_REGION((b)->data, (n))
#define UNPOISON(b, n) ASAN_UNPOISON_MEMORY_REGION((b)->data, (n))
#else
#define POISON(b, n) ((void)(b), (void)(n))
#define UNPOISON(b, n) ((void)(b), (void)(n))
#endif

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
		UNPOISON(b, b->cap);
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
	b->ext = NULL;
	return b;
}

void gd_bpool_put(struct gd_bpool *p, struct gd_bcast *b)
{
	POISON(b, b->cap);
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
		UNPOISON(b, b->cap);
		munmap(b, p->bytes);
	}
}

void gd_bpool_free(struct gd_bpool *p)
{
	p->keep = 0;
	gd_bpool_trim(p);
}
