/* gdpub's journal reader (lib/journal.c) as gdinspect journal uses it:
 * scan a file without changing it, then dump it (text, or JSON when the
 * first byte is odd). Checks that every pending block found lies inside
 * the file and that pending blocks come in sequence order. */
#include "fuzz.h"
#include "decode.h"
#include "journal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct gd_journal j;
	const char *path;
	size_t i;
	int rc;

	if (size < 1)
		return 0;
	fuzz_quiet_stdout();
	path = fuzz_file("journal", data + 1, size - 1);
	if (gd_journal_scan(&j, path) == 0) {
		for (i = 0; i < j.npending; i++) {
			const struct gd_jblock *b = &j.pending[i];
			if (b->len > 0 && (b->data < j.image ||
			    b->data + b->len > j.image + (size - 1)))
				abort();
			if (i > 0 && j.pending[i - 1].seq >= b->seq)
				abort();
		}
		if (j.torn_at > size - 1)
			abort();
	} else if (j.err[0] == '\0') {
		abort();
	}
	gd_journal_close(&j);
	rc = gd_journal_dump(path, data[0] & 1);
	if (rc != 0 && rc != GD_EX_IOERR)
		abort();
	return 0;
}
