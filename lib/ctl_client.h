/* Control socket, client side, blocking (gdack, gdinspect): what a client
 * adds to the shared protocol (ctlproto.h). */
#ifndef GD_CTL_CLIENT_H
#define GD_CTL_CLIENT_H

#include "ctlproto.h"

/* Refuse to talk to another user's program: the socket at path must be
 * ours, its directory ours or root's, and (fd >= 0) the program serving
 * the connected fd must run as our uid. Returns 0, or prints why and
 * returns GD_EX_UNAVAILABLE. A path that does not exist passes. */
int gd_ctl_trust(const char *path, int fd);

#endif
