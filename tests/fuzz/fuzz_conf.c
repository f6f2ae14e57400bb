/* The config reader (lib/conf.c through inih): the bytes after the first
 * are a config file, loaded for the family the first byte picks (gdpub,
 * gdsub or either), then checked as a program would. Every failure must
 * be a config error (78) or a usage error (64). */
#include "fuzz.h"
#include "conf.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const int fam[] = { GD_FAM_PUB, GD_FAM_SUB, GD_FAM_ANY };
	struct gd_conf c;
	const char *path;
	int rc, f;

	if (size < 1)
		return 0;
	f = fam[data[0] % 3];
	path = fuzz_file("conf", data + 1, size - 1);
	gd_conf_init(&c, f);
	rc = gd_conf_load(&c, path);
	if (rc != 0 && rc != GD_EX_CONFIG)
		abort();
	if (rc == 0) {
		rc = gd_conf_check(&c, f);
		if (rc != 0 && rc != GD_EX_CONFIG && rc != GD_EX_USAGE)
			abort();
		if (c.npubs > GD_MAX_PUBS)
			abort();
	}
	gd_conf_free(&c);
	return 0;
}
