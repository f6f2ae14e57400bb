/* Unit tests of lib/sink.c, gdack's sink file: appends, the torn last
 * record cut at open, the keys read back from the end (bounded, records
 * longer than the scan buffer, NUL records), which records count as
 * repeats (resent, key and contents at the end, each match used once;
 * the same ID with other contents is no repeat), the lock and
 * the refusals. Files in a temporary directory. */
#include "sink.h"
#include "unit.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char dir[] = "/tmp/gdkit-sink-XXXXXX";

static const char *at(const char *name)
{
	static char p[256];
	snprintf(p, sizeof(p), "%s/%s", dir, name);
	return p;
}

static void put(const char *name, const char *data, size_t n)
{
	FILE *f = fopen(at(name), "wb");
	if (f == NULL || fwrite(data, 1, n, f) != n) {
		perror(name);
		exit(2);
	}
	fclose(f);
}

static long fsize(const char *name)
{
	struct stat st;
	return stat(at(name), &st) == 0 ? (long)st.st_size : -1;
}

static int rep(struct gd_sink *k, const char *rec)
{
	return gd_sink_repeat(k, rec, strlen(rec));
}

TEST(new_file_appends_and_syncs)
{
	struct gd_sink k;
	const char two[] = "h:1/1\ta\nh:1/2\tb\n";

	ASSERT_EQ(gd_sink_open(&k, at("new"), '\n', GD_SINK_TAIL), 0);
	ASSERT_U64(k.size, 0);
	ASSERT_EQ(k.ntail, 0);
	ASSERT_EQ(rep(&k, "h:1/1/r\ta"), 0);	/* nothing at its end */
	ASSERT_EQ(gd_sink_write(&k, two, sizeof(two) - 1), 0);
	ASSERT_U64(k.size, sizeof(two) - 1);
	ASSERT_EQ(rep(&k, "h:1/1/r\ta"), 0);	/* this run's own: not repeats */
	gd_sink_close(&k);
	ASSERT_EQ(fsize("new"), (long)sizeof(two) - 1);
}

TEST(repeats_are_resends_of_keys_at_the_end)
{
	struct gd_sink k;
	const char f[] = "h:1/1\ta\nh:1/2/r\tb\n[::1]:7/3\tc\n@cl/4\td\nnot a key\n"
	    "h:1/2\tb again\n";

	put("tail", f, sizeof(f) - 1);
	ASSERT_EQ(gd_sink_open(&k, at("tail"), '\n', GD_SINK_TAIL), 0);
	/* h:1/1, h:1/2 twice with other contents, [::1]:7/3, @cl/4 */
	ASSERT_EQ(k.ntail, 5);
	ASSERT_EQ(rep(&k, "h:1/1\ta"), 0);	/* not resent: a new block */
	ASSERT_EQ(rep(&k, "h:1/1/r\tother"), 0);	/* the ID again, new */
	ASSERT_EQ(rep(&k, "h:1/1/r\tab"), 0);
	ASSERT_EQ(rep(&k, "h:1/1/r"), 0);
	ASSERT_EQ(rep(&k, "h:1/1/r\ta"), 1);
	ASSERT_EQ(rep(&k, "h:1/1/r\ta"), 0);	/* one copy at the end: used */
	ASSERT_EQ(rep(&k, "h:1/2/r\tb"), 1);
	ASSERT_EQ(rep(&k, "h:1/2/r\tb"), 0);
	ASSERT_EQ(rep(&k, "h:1/2/r\tb again"), 1);
	ASSERT_EQ(rep(&k, "[::1]:7/3/r\tc"), 1);
	ASSERT_EQ(rep(&k, "@cl/4/rs\td"), 1);	/* resent snapshot */
	ASSERT_EQ(rep(&k, "h:2/1/r\ta"), 0);	/* another publisher */
	ASSERT_EQ(rep(&k, "h:1/11/r\ta"), 0);	/* another ID */
	ASSERT_EQ(rep(&k, "not a key/r"), 0);
	ASSERT_EQ(rep(&k, ""), 0);
	ASSERT_U64(k.skipped, 5);
	gd_sink_close(&k);
	ASSERT_EQ(fsize("tail"), (long)sizeof(f) - 1);	/* untouched */
}

TEST(repeats_compare_every_byte)
{
	struct gd_sink k;
	static char f[3 * 9000], rec[9000];
	size_t n = 0, i;

	/* three records of one key, 6000 bytes after it: x..xA, x..xB and
	 * x..xA again, differing only in their last byte */
	for (i = 0; i < 3; i++) {
		n += (size_t)sprintf(f + n, "h:1/7\t");
		memset(f + n, 'x', 5999);
		n += 5999;
		f[n++] = i == 1 ? 'B' : 'A';
		f[n++] = '\n';
	}
	put("long", f, n);
	ASSERT_EQ(gd_sink_open(&k, at("long"), '\n', GD_SINK_TAIL), 0);
	ASSERT_EQ(k.ntail, 3);
	memcpy(rec, "h:1/7/r\t", 8);
	memset(rec + 8, 'x', 5999);
	rec[8 + 5999] = 'C';
	ASSERT_EQ(gd_sink_repeat(&k, rec, 8 + 6000), 0);	/* not there */
	rec[8 + 5999] = 'B';
	ASSERT_EQ(gd_sink_repeat(&k, rec, 8 + 6000), 1);
	ASSERT_EQ(gd_sink_repeat(&k, rec, 8 + 6000), 0);	/* used */
	rec[8 + 5999] = 'A';
	ASSERT_EQ(gd_sink_repeat(&k, rec, 8 + 6000), 1);	/* two copies */
	ASSERT_EQ(gd_sink_repeat(&k, rec, 8 + 6000), 1);
	ASSERT_EQ(gd_sink_repeat(&k, rec, 8 + 6000), 0);
	rec[8 + 4500] = 'y';	/* after the first 4 KiB */
	ASSERT_EQ(gd_sink_repeat(&k, rec, 8 + 6000), 0);
	ASSERT_U64(k.skipped, 3);
	gd_sink_close(&k);
}

TEST(torn_last_record_is_cut)
{
	struct gd_sink k;
	const char f[] = "h:1/1\ta\nh:1/2\tpar";

	put("torn", f, sizeof(f) - 1);
	ASSERT_EQ(gd_sink_open(&k, at("torn"), '\n', GD_SINK_TAIL), 0);
	ASSERT_U64(k.torn_at, 8);
	ASSERT_U64(k.torn_bytes, 9);
	ASSERT_U64(k.size, 8);
	ASSERT_EQ(rep(&k, "h:1/2/r\tpart"), 0);	/* the torn one is not there */
	ASSERT_EQ(rep(&k, "h:1/1/r\ta"), 1);
	gd_sink_close(&k);
	ASSERT_EQ(fsize("torn"), 8);

	/* no delimiter at all: everything is the torn record */
	put("torn2", "h:1/1\tno end", 12);
	ASSERT_EQ(gd_sink_open(&k, at("torn2"), '\n', GD_SINK_TAIL), 0);
	ASSERT_U64(k.torn_at, 0);
	ASSERT_U64(k.torn_bytes, 12);
	ASSERT_EQ(k.ntail, 0);
	gd_sink_close(&k);
	ASSERT_EQ(fsize("torn2"), 0);
}

TEST(tail_is_bounded)
{
	struct gd_sink k;
	char line[64];
	FILE *f = fopen(at("many"), "wb");
	int i;

	ASSERT(f != NULL);
	if (f == NULL)
		return;
	for (i = 1; i <= 100; i++)
		fprintf(f, "h:1/%d\tpayload %d\n", i, i);
	fclose(f);
	ASSERT_EQ(gd_sink_open(&k, at("many"), '\n', 10), 0);
	ASSERT_EQ(k.ntail, 10);
	snprintf(line, sizeof(line), "h:1/91/r\tpayload 91");
	ASSERT_EQ(rep(&k, line), 1);
	snprintf(line, sizeof(line), "h:1/90/r\tpayload 90");
	ASSERT_EQ(rep(&k, line), 0);	/* before the last 10 */
	ASSERT_EQ(rep(&k, "h:1/100/r\tpayload 100"), 1);
	gd_sink_close(&k);
}

TEST(records_longer_than_the_scan_buffer)
{
	struct gd_sink k;
	size_t big = 200000, n = 0;
	char *f = malloc(big + 64);

	ASSERT(f != NULL);
	if (f == NULL)
		return;
	n += (size_t)sprintf(f + n, "h:1/1\tfirst\n");
	n += (size_t)sprintf(f + n, "h:1/2\t");
	memset(f + n, 'x', big);
	n += big;
	f[n++] = '\n';
	n += (size_t)sprintf(f + n, "h:1/3\tlast\n");
	put("big", f, n);
	free(f);
	ASSERT_EQ(gd_sink_open(&k, at("big"), '\n', GD_SINK_TAIL), 0);
	ASSERT_EQ(k.ntail, 3);
	ASSERT_EQ(rep(&k, "h:1/1/r\tfirst"), 1);	/* the file's first record */
	ASSERT_EQ(rep(&k, "h:1/3/r\tlast"), 1);
	/* the long one: its length and its first bytes */
	f = malloc(big + 64);
	ASSERT(f != NULL);
	if (f != NULL) {
		n = (size_t)sprintf(f, "h:1/2/r\t");
		memset(f + n, 'x', big);
		ASSERT_EQ(gd_sink_repeat(&k, f, n + big - 1), 0);	/* shorter */
		f[n] = 'y';
		ASSERT_EQ(gd_sink_repeat(&k, f, n + big), 0);	/* other start */
		f[n] = 'x';
		ASSERT_EQ(gd_sink_repeat(&k, f, n + big), 1);
		free(f);
	}
	gd_sink_close(&k);
}

TEST(nul_records)
{
	struct gd_sink k;
	const char f[] = "h:1/1\ta\nstill a\0h:1/2\tb\0h:1/3\tc";

	put("nul", f, sizeof(f) - 1);
	ASSERT_EQ(gd_sink_open(&k, at("nul"), '\0', GD_SINK_TAIL), 0);
	ASSERT_U64(k.torn_bytes, 7);	/* "h:1/3\tc" had no NUL */
	ASSERT_EQ(k.ntail, 2);
	ASSERT_EQ(gd_sink_repeat(&k, "h:1/1/r\ta\nstill a", 17), 1);
	ASSERT_EQ(rep(&k, "h:1/2/r\tb"), 1);
	ASSERT_EQ(rep(&k, "h:1/3/r\tc"), 0);
	gd_sink_close(&k);
}

TEST(locked_and_refused)
{
	struct gd_sink k, k2;

	ASSERT_EQ(gd_sink_open(&k, at("lock"), '\n', GD_SINK_TAIL), 0);
	ASSERT_EQ(gd_sink_open(&k2, at("lock"), '\n', GD_SINK_TAIL), -1);
	ASSERT_STR(k2.err, "in use by another gdack");
	gd_sink_close(&k);
	ASSERT_EQ(gd_sink_open(&k2, at("lock"), '\n', GD_SINK_TAIL), 0);
	gd_sink_close(&k2);

	ASSERT_EQ(gd_sink_open(&k, "/dev/null", '\n', GD_SINK_TAIL), -1);
	ASSERT(strstr(k.err, "not a regular file") != NULL);
	ASSERT_EQ(gd_sink_open(&k, at("no/such/dir"), '\n', GD_SINK_TAIL), -1);
	ASSERT_STR(k.err, "No such file or directory");
}

int main(void)
{
	if (mkdtemp(dir) == NULL) {
		perror("mkdtemp");
		return 2;
	}
	RUN(new_file_appends_and_syncs);
	RUN(repeats_compare_every_byte);
	RUN(repeats_are_resends_of_keys_at_the_end);
	RUN(torn_last_record_is_cut);
	RUN(tail_is_bounded);
	RUN(records_longer_than_the_scan_buffer);
	RUN(nul_records);
	RUN(locked_and_refused);
	{
		char cmd[300];
		snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
		if (system(cmd) != 0)
			fprintf(stderr, "cannot remove %s\n", dir);
	}
	return UNIT_DONE();
}
