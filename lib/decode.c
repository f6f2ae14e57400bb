/* gdinspect decode (see decode.h). A blocking reader over one buffer that
 * holds at most the frame being read plus one read chunk: frames are
 * printed as soon as they are whole, so a live stream on stdin shows up
 * as it comes and a corrupt one shows everything before the damage. The
 * buffer grows only when full, so memory follows the bytes that came, not
 * the length a frame header declares. Armored input (armor.h) is read
 * line by line the same way, a line at most gd_armor_line_max long. */
#include "decode.h"
#include "armor.h"
#include "journal.h"
#include "dbuf.h"
#include "log.h"
#include "stream.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define CHUNK 65536
/* The buffer holds at most the largest frame, armored, and one read
 * after it. */
#define BUF_MAX (gd_armor_line_max(GD_STREAM_MAX_PAYLOAD) + CHUNK)

size_t gd_escape_preview(char *dst, const uint8_t *p, size_t n, size_t max)
{
	static const char hex[] = "0123456789abcdef";
	char *d = dst;
	size_t i;

	if (n > max)
		n = max;
	for (i = 0; i < n; i++) {
		uint8_t c = p[i];
		char e = 0;

		switch (c) {
		case '\0': e = '0'; break;
		case '\t': e = 't'; break;
		case '\n': e = 'n'; break;
		case '\r': e = 'r'; break;
		case '\\': e = '\\'; break;
		case '"': e = '"'; break;
		}
		if (e) {
			*d++ = '\\';
			*d++ = e;
		} else if (c < 0x20 || c > 0x7e) {
			*d++ = '\\';
			*d++ = 'x';
			*d++ = hex[c >> 4];
			*d++ = hex[c & 15];
		} else {
			*d++ = (char)c;
		}
	}
	*d = '\0';
	return (size_t)(d - dst);
}

/* UTC, microseconds, truncated: 2026-11-30T02:37:50.123456Z; "-" for 0,
 * which floor and end frames carry */
static void iso_time(char *dst, size_t cap, uint64_t ns)
{
	time_t s = (time_t)(ns / 1000000000u);
	struct tm tm;
	size_t n;

	if (ns == 0 || gmtime_r(&s, &tm) == NULL ||
	    (n = strftime(dst, cap, "%Y-%m-%dT%H:%M:%S", &tm)) == 0) {
		snprintf(dst, cap, "-");
		return;
	}
	snprintf(dst + n, cap - n, ".%06uZ",
	    (unsigned)(ns % 1000000000u / 1000u));
}

/* s[0..n) as a JSON string; origins and previews are printable ASCII,
 * so only the quote and the backslash need escaping */
static void json_str(const char *s, size_t n)
{
	size_t i;

	putchar('"');
	for (i = 0; i < n; i++) {
		if (s[i] == '"' || s[i] == '\\')
			putchar('\\');
		putchar(s[i]);
	}
	putchar('"');
}

static const char *flags_str(const struct gd_sframe *f)
{
	static const char *const names[] = { "", "r", "s", "rs" };

	return f->type == GD_SF_BLOCK ? names[f->flags & 3] : "";
}

static void print_frame(const struct gd_sframe *f, uint64_t offset, int json)
{
	static const char *const types[] = { "header", "block", "floor", "end" };
	char key[GD_STREAM_ORIGIN_MAX + 24], when[40], size[16];
	char prev[4 * GD_DECODE_PREVIEW + 1];
	const char *fl = flags_str(f);
	int klen;

	klen = f->type == GD_SF_BLOCK ?
	    snprintf(key, sizeof(key), "%.*s/%" PRIu64, (int)f->origin_len,
		f->origin, f->id) :
	    snprintf(key, sizeof(key), "%.*s", (int)f->origin_len, f->origin);
	iso_time(when, sizeof(when), f->time_ns);
	gd_escape_preview(prev, f->data, f->len, GD_DECODE_PREVIEW);
	if (json) {
		printf("{\"type\":\"%s\",\"offset\":%" PRIu64 ",\"key\":",
		    types[f->type], offset);
		json_str(key, (size_t)klen);
		fputs(",\"origin\":", stdout);
		json_str(f->origin, f->origin_len);
		printf(",\"id\":%" PRIu64 ",\"flags\":\"%s\",\"index\":%" PRIu64
		    ",\"time_ns\":%" PRIu64 ",\"time\":%s%s%s,\"epoch\":%" PRIu64
		    ",\"size\":%" PRIu32 ",\"preview\":", f->id, fl, f->seq,
		    f->time_ns, *when == '-' ? "" : "\"",
		    *when == '-' ? "null" : when, *when == '-' ? "" : "\"",
		    f->epoch, f->len);
		json_str(prev, strlen(prev));
		fputs("}\n", stdout);
		return;
	}
	if (f->type == GD_SF_BLOCK) {
		snprintf(size, sizeof(size), "%" PRIu32, f->len);
		printf("%-22s  %-5s  %8" PRIu64 "  %-27s  %7s  \"%s\"%s\n", key,
		    *fl ? fl : "-", f->seq, when, size, prev,
		    f->len > GD_DECODE_PREVIEW ? "..." : "");
	} else {
		printf("%-22s  %-5s  %8" PRIu64 "  %-27s  %7s  -\n", key,
		    types[f->type], f->seq, when, "-");
	}
}

/* Read into the room b has; 1 with bytes, 0 at end of input, -1 on
 * error. */
static int fill(int fd, struct gd_dbuf *b)
{
	ssize_t n;

	do
		n = read(fd, gd_dbuf_end(b), gd_dbuf_room(b));
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -1;
	gd_dbuf_commit(b, (size_t)n);
	return n > 0;
}

/* stdout failed: say so unless the reader went away (| head) */
static int out_failed(void)
{
	if (errno != EPIPE)
		gd_err("cannot write standard output: %s", strerror(errno));
	return GD_EX_FAIL;
}

static void too_long(const char *name, uint64_t lineno, size_t line_max,
    uint32_t max)
{
	(void)fflush(stdout);
	gd_err("%s: line %" PRIu64 ": bad armored line skipped: longer than "
	    "%zu bytes, the longest batch (%u bytes, gdpub --armor-batch) or "
	    "the armor of a frame of the largest payload (%" PRIu32 " bytes, "
	    "--max-block-size)", name, lineno, line_max, GD_ARMOR_BATCH_MAX,
	    max);
}

/* One armored line at byte offset off (its newline excluded): its frames
 * printed; a bad one is reported and counted (the good frames before a
 * damaged one in the line are printed). A line over line_max is bad
 * however it came, in one read or several. */
static void one_line(const char *name, uint8_t *p, size_t n, uint64_t lineno,
    uint64_t off, uint32_t max, size_t line_max, int json, uint64_t *bad)
{
	struct gd_armor_line a;
	struct gd_sframe f;
	char why[200];
	int k;

	if (n >= line_max) {
		(*bad)++;
		too_long(name, lineno, line_max, max);
		return;
	}
	if (gd_armor_open(&a, p, n, max, why, sizeof(why)) == 0) {
		while ((k = gd_armor_next(&a, &f, why, sizeof(why))) == 1)
			print_frame(&f, off, json);
		if (k == 0)
			return;
	}
	(*bad)++;
	(void)fflush(stdout);	/* the report after the frames before it */
	gd_err("%s: line %" PRIu64 ": bad armored line skipped: %s", name,
	    lineno, why);
}

/* The armored input in b (eof: nothing more to read) and after it on fd:
 * every line decoded, bad ones reported and skipped; 65 at the end if any
 * was bad. */
static int decode_lines(int fd, const char *name, struct gd_dbuf *b, int eof,
    int json, uint32_t max)
{
	size_t line_max = gd_armor_line_max(max);
	uint64_t lineno = 0, bad = 0, off = 0;
	int discarding = 0, got;

	for (;;) {
		uint8_t *buf = (uint8_t *)gd_dbuf_ptr(b), *nl;
		size_t len = gd_dbuf_len(b), start = 0, n;

		while ((nl = memchr(buf + start, '\n', len - start)) != NULL) {
			n = (size_t)(nl - (buf + start));
			if (discarding)
				discarding = 0;	/* the end of a long line */
			else
				one_line(name, buf + start, n, ++lineno, off,
				    max, line_max, json, &bad);
			off += n + 1;
			start += n + 1;
		}
		if (eof && start < len && !discarding)
			one_line(name, buf + start, len - start, ++lineno, off,
			    max, line_max, json, &bad);
		if (eof)
			break;
		gd_dbuf_consume(b, start);
		if (gd_dbuf_len(b) > line_max || discarding) {
			if (!discarding) {
				bad++;
				too_long(name, ++lineno, line_max, max);
			}
			discarding = 1;
			off += gd_dbuf_len(b);
			gd_dbuf_reset(b);
		}
		if (fflush(stdout) != 0)
			return out_failed();
		if (gd_dbuf_room(b) < CHUNK / 2 &&
		    gd_dbuf_grow(b, gd_dbuf_len(b) < CHUNK ? CHUNK :
		    gd_dbuf_len(b)) != GD_DBUF_OK) {
			gd_err("%s: out of memory for line %" PRIu64 " of %zu "
			    "bytes or more", name, lineno + 1, gd_dbuf_len(b));
			return GD_EX_FAIL;
		}
		if ((got = fill(fd, b)) < 0) {
			(void)fflush(stdout);
			gd_err("cannot read %s: %s", name, strerror(errno));
			return GD_EX_IOERR;
		}
		eof = got == 0;
	}
	if (fflush(stdout) != 0)
		return out_failed();
	if (bad > 0) {
		gd_err("%s: %" PRIu64 " of %" PRIu64 " armored lines were bad "
		    "and skipped", name, bad, lineno);
		return GD_EX_DATAERR;
	}
	return GD_EX_OK;
}

int gd_decode_file(const char *path, int json, uint32_t max_payload)
{
	const char *name = "standard input";
	struct gd_sreader r;
	struct gd_sframe f;
	struct gd_dbuf b;
	size_t start = 0, used, total = 0;
	int fd = 0, eof = 0, rc = GD_EX_OK, k;

	if (path != NULL && strcmp(path, "-") != 0) {
		name = path;
		if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0) {
			gd_err("cannot open %s: %s", path, strerror(errno));
			return GD_EX_IOERR;
		}
	}
	gd_dbuf_init_sized(&b, CHUNK, BUF_MAX);
	if (gd_dbuf_reserve(&b, CHUNK - 1) != GD_DBUF_OK) {
		gd_err("out of memory");
		if (fd > 0)
			close(fd);
		return GD_EX_FAIL;
	}
	gd_sreader_init(&r, max_payload);
	if (!json)
		printf("%-22s  %-5s  %8s  %-27s  %7s  %s\n", "KEY", "FLAGS",
		    "INDEX", "TIME", "SIZE", "PAYLOAD");
	/* armored or binary: the first bytes tell */
	while ((k = gd_armor_starts((const uint8_t *)gd_dbuf_ptr(&b),
	    gd_dbuf_len(&b))) < 0 && !eof) {
		int got = fill(fd, &b);
		if (got < 0) {
			gd_err("cannot read %s: %s", name, strerror(errno));
			rc = GD_EX_IOERR;
			goto done;
		}
		eof = got == 0;
	}
	if (k > 0) {
		rc = decode_lines(fd, name, &b, eof, json, max_payload ?
		    max_payload : GD_ARMOR_MAX_PAYLOAD);
		goto done;
	}
	for (;;) {
		const uint8_t *buf = (const uint8_t *)gd_dbuf_ptr(&b);
		size_t len = gd_dbuf_len(&b);
		uint64_t at = r.off;
		int got;

		got = gd_sreader_next(&r, buf + start, len - start, eof, &f,
		    &used);
		if (got == 1) {
			if (f.type != GD_SF_HEADER)
				print_frame(&f, at, json);
			start += used;
			continue;
		}
		if (got < 0) {
			if (fflush(stdout) != 0) {
				rc = out_failed();
				break;
			}
			gd_err("%s: %s", name, r.err);
			rc = GD_EX_DATAERR;
			break;
		}
		if (eof)
			break;		/* at a frame boundary: a clean end */
		if (fflush(stdout) != 0) {
			rc = out_failed();
			break;
		}
		/* keep only the unread part */
		gd_dbuf_consume(&b, start);
		start = 0;
		if (gd_dbuf_room(&b) == 0) {
			/* full with the start of one frame larger than the
			 * buffer (sreader_next checked its length): double,
			 * up to the frame's size */
			size_t more;

			len = gd_dbuf_len(&b);
			more = len;
			total = 0;
			if (gd_stream_peek((const uint8_t *)gd_dbuf_ptr(&b), len,
			    r.max_payload, &total) == 1 && total > len &&
			    total - len < more)
				more = total - len;
			if (gd_dbuf_grow(&b, more) != GD_DBUF_OK) {
				gd_err("%s: out of memory for a frame of %zu bytes "
				    "at byte offset %" PRIu64, name, total, r.off);
				rc = GD_EX_FAIL;
				break;
			}
		}
		got = fill(fd, &b);
		if (got < 0) {
			(void)fflush(stdout);
			gd_err("cannot read %s: %s", name, strerror(errno));
			rc = GD_EX_IOERR;
			break;
		}
		eof = got == 0;
	}
	if (rc == GD_EX_OK && fflush(stdout) != 0)
		rc = out_failed();
done:
	gd_dbuf_free(&b);
	if (fd > 0)
		close(fd);
	return rc;
}

int gd_journal_dump(const char *path, int json)
{
	struct gd_journal j;
	char when[40], prev[4 * GD_DECODE_PREVIEW + 1];
	size_t i;
	int rc = 0;

	if (gd_journal_scan(&j, path) != 0) {
		gd_err("%s", j.err);
		gd_journal_close(&j);
		return GD_EX_IOERR;
	}
	if (j.torn_at)
		gd_warn("journal '%s' ends in a torn record at byte offset %"
		    PRIu64 " (%" PRIu64 " bytes, a crash mid-write); gdpub cuts "
		    "it when it opens the journal", path, j.torn_at, j.torn_bytes);
	if (!json)
		printf("%-20s  %8s  %-27s  %7s  %s\n", "ID", "INDEX", "TIME",
		    "SIZE", "PAYLOAD");
	for (i = 0; i < j.npending; i++) {
		const struct gd_jblock *b = &j.pending[i];
		iso_time(when, sizeof(when), b->time_ns);
		gd_escape_preview(prev, b->data, b->len, GD_DECODE_PREVIEW);
		if (json) {
			printf("{\"id\":%" PRIu64 ",\"index\":%" PRIu64 ",\"epoch\":%"
			    PRIu64 ",\"time_ns\":%" PRIu64 ",\"time\":\"%s\","
			    "\"size\":%" PRIu32 ",\"preview\":", b->id, b->seq,
			    j.epoch, b->time_ns, when, b->len);
			json_str(prev, strlen(prev));
			fputs("}\n", stdout);
		} else {
			printf("%-20" PRIu64 "  %8" PRIu64 "  %-27s  %7" PRIu32
			    "  \"%s\"%s\n", b->id, b->seq, when, b->len, prev,
			    b->len > GD_DECODE_PREVIEW ? "..." : "");
		}
	}
	/* what a producer giving IDs resumes after (gdkit(7)), also when
	 * nothing is pending and the table is empty */
	if (json)
		printf("{\"highest_id\":%" PRIu64 ",\"highest_index\":%" PRIu64
		    ",\"epoch\":%" PRIu64 ",\"pending\":%zu}\n", j.max_id,
		    j.max_seq, j.epoch, j.npending);
	else
		printf("highest ID %" PRIu64 ", index %" PRIu64 ", epoch %"
		    PRIu64 "; %zu pending\n", j.max_id, j.max_seq, j.epoch,
		    j.npending);
	gd_journal_close(&j);
	if (fflush(stdout) != 0 || ferror(stdout))
		rc = out_failed();
	return rc;
}
