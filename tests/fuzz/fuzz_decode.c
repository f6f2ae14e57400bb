/* gdinspect decode (lib/decode.c): a file that claims to be a framed
 * stream, printed as text or (first byte odd) JSON to standard output,
 * which the fuzzer and the replay driver send to /dev/null. */
#include "fuzz.h"
#include "decode.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *path;
	char prev[4 * GD_DECODE_PREVIEW + 1];
	int rc;

	if (size < 1)
		return 0;
	fuzz_quiet_stdout();
	path = fuzz_file("stream", data + 1, size - 1);
	rc = gd_decode_file(path, data[0] & 1, 0);
	if (rc != 0 && rc != GD_EX_DATAERR)
		abort();	/* out of memory or stdout: not from this input */
	if (gd_escape_preview(prev, data, size, GD_DECODE_PREVIEW) >=
	    sizeof(prev))
		abort();
	return 0;
}
