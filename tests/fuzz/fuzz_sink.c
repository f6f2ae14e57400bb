/* gdack's sink file read back at start (lib/sink.c): open a file (which
 * cuts a torn last record and reads the keys at its end), check that what
 * is left ends with the delimiter, ask whether the records of the input
 * repeat one at the end, and open it again: nothing more is cut and the
 * same keys are found. The first byte picks the delimiter and how many
 * records the end holds. */
#include "fuzz.h"
#include "sink.h"

#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct gd_sink k;
	const char *path;
	char delim, last;
	uint32_t tail, ntail;
	struct stat st;
	size_t off;

	if (size < 1)
		return 0;
	delim = (data[0] & 1) ? '\0' : '\n';
	tail = 1 + (data[0] >> 1);
	path = fuzz_file("sink", data + 1, size - 1);
	if (gd_sink_open(&k, path, delim, tail) != 0) {
		if (k.err[0] == '\0')
			abort();
		return 0;
	}
	if (stat(path, &st) != 0 || (uint64_t)st.st_size != k.size ||
	    k.size + k.torn_bytes != size - 1 || k.ntail > tail)
		abort();
	if (k.size > 0 && (pread(k.fd, &last, 1, (off_t)k.size - 1) != 1 ||
	    last != delim))
		abort();
	/* each input record, as a resend, repeats at most once per copy */
	for (off = 1; off < size;) {
		const uint8_t *d = memchr(data + off, delim, size - off);
		size_t len = d ? (size_t)(d - data - off) : size - off;
		(void)gd_sink_repeat(&k, (const char *)data + off, len);
		off += len + 1;
	}
	if (k.skipped > k.size)
		abort();
	ntail = k.ntail;
	gd_sink_close(&k);
	if (gd_sink_open(&k, path, delim, tail) != 0 || k.torn_bytes != 0 ||
	    k.ntail != ntail)
		abort();
	gd_sink_close(&k);
	return 0;
}
