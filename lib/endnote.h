/* gdsub's end note: left beside its control socket when gdsub exits, it
 * names the publishers that ran with numSubs=0, so that a gdack that comes
 * after gdsub has gone knows their keys need no acknowledgement. */
#ifndef GD_ENDNOTE_H
#define GD_ENDNOTE_H

#include <stddef.h>

#define GD_ENDNOTE_SUFFIX ".ended"

struct gd_endnote {
	char *buf;		/* the note's text: a header, then an origin a line */
	size_t len;
};

struct gd_endnote_origin {
	const char *s;		/* HOST:PORT or @CLUSTER */
	size_t len;
};

/* The note's path for a control socket path; 0, or -1 if too long. */
int gd_endnote_path(const char *ctl, char *buf, size_t sz);
/* Write the note naming these origins (mode 0600, replacing any); 0, or
 * -1 with errno set. */
int gd_endnote_save(const char *path, const struct gd_endnote_origin *o,
    size_t n);
void gd_endnote_remove(const char *path);
/* Read the note at path: 1, or 0 when there is none (or it is not ours, or
 * not a note). */
int gd_endnote_load(struct gd_endnote *n, const char *path);
/* Does the note name this origin? */
int gd_endnote_has(const struct gd_endnote *n, const char *origin, size_t len);
void gd_endnote_free(struct gd_endnote *n);

#endif
