/* The /metrics exporter's request line (lib/metrics.c): any bytes as a
 * request head, up to the bound the exporter reads, must get one of the
 * answers it gives (200, 400, 404, 405, 505), never a read past them. */
#include "fuzz.h"
#include "metrics.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *head;
	int only, code;

	if (size > GD_METRICS_HEAD_MAX)
		size = GD_METRICS_HEAD_MAX;
	/* a copy of exactly size bytes: ASan sees any read past them */
	if ((head = malloc(size ? size : 1)) == NULL)
		return 0;
	memcpy(head, data, size);
	code = gd_metrics_request(head, size, &only);
	if (code != 200 && code != 400 && code != 404 && code != 405 &&
	    code != 505)
		abort();
	if (only && code != 200)
		abort();
	free(head);
	return 0;
}
