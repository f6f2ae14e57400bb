/* Unit tests of lib/endnote.c, the note gdsub leaves when it ends: the
 * origins it names, through a file, and what is not a note
 * (missing, foreign text, a symlink). */
#include "endnote.h"
#include "unit.h"

#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

static char dir[] = "/tmp/gdkit-endnote-XXXXXX";

/* a path in the test's directory; two buffers, for two at a time */
static const char *at(const char *name)
{
	static char buf[2][256];
	static int i;
	i = !i;
	snprintf(buf[i], sizeof(buf[i]), "%s/%s", dir, name);
	return buf[i];
}

TEST(names_origins)
{
	static const struct gd_endnote_origin o[] = {
		{ "127.0.0.1:7001", 14 }, { "@grid", 5 },
		{ "bad\nline", 8 },	/* not an origin: never listed */
		{ "[::1]:7001", 10 },
	};
	struct gd_endnote n = { 0 };
	char path[256];
	struct stat st;

	ASSERT_EQ(gd_endnote_path(at("sub-1.sock"), path, sizeof(path)), 0);
	ASSERT_STR(path, at("sub-1.sock.ended"));
	ASSERT_EQ(gd_endnote_load(&n, path), 0);	/* none yet */
	ASSERT(!gd_endnote_has(&n, "127.0.0.1:7001", 14));
	ASSERT_EQ(gd_endnote_save(path, o, 4), 0);
	ASSERT_EQ(stat(path, &st), 0);
	ASSERT_EQ(st.st_mode & 0777, 0600);
	ASSERT_EQ(gd_endnote_load(&n, path), 1);
	ASSERT(gd_endnote_has(&n, "127.0.0.1:7001", 14));
	ASSERT(gd_endnote_has(&n, "@grid", 5));
	ASSERT(gd_endnote_has(&n, "[::1]:7001", 10));
	ASSERT(!gd_endnote_has(&n, "127.0.0.1:700", 13));	/* a prefix */
	ASSERT(!gd_endnote_has(&n, "127.0.0.1:70011", 15));
	ASSERT(!gd_endnote_has(&n, "bad", 3));
	ASSERT(!gd_endnote_has(&n, "line", 4));
	ASSERT(!gd_endnote_has(&n, "gdkit-endnote 1", 15));
	/* a later note replaces it; a removed one is gone */
	ASSERT_EQ(gd_endnote_save(path, o + 1, 1), 0);
	ASSERT_EQ(gd_endnote_load(&n, path), 1);
	ASSERT(!gd_endnote_has(&n, "127.0.0.1:7001", 14));
	ASSERT(gd_endnote_has(&n, "@grid", 5));
	gd_endnote_remove(path);
	ASSERT_EQ(gd_endnote_load(&n, path), 0);
	ASSERT(!gd_endnote_has(&n, "@grid", 5));
	gd_endnote_free(&n);
}

TEST(not_a_note)
{
	struct gd_endnote n = { 0 };
	char path[8];
	FILE *f = fopen(at("other"), "w");

	ASSERT(f != NULL);
	if (f != NULL) {
		fputs("noack 127.0.0.1:7001\n", f);
		fclose(f);
	}
	ASSERT_EQ(gd_endnote_load(&n, at("other")), 0);
	ASSERT(!gd_endnote_has(&n, "127.0.0.1:7001", 14));
	ASSERT_EQ(symlink(at("other"), at("link")), 0);
	ASSERT_EQ(gd_endnote_load(&n, at("link")), 0);
	ASSERT_EQ(gd_endnote_path("/run/a-long-name.sock", path, sizeof(path)),
	    -1);
	unlink(at("other"));
	unlink(at("link"));
	gd_endnote_free(&n);
}

int main(void)
{
	if (mkdtemp(dir) == NULL) {
		perror("mkdtemp");
		return 1;
	}
	RUN(names_origins);
	RUN(not_a_note);
	rmdir(dir);
	return UNIT_DONE();
}
