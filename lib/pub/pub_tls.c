/* The bytes from a subscriber with GDpub_tlsCert: what a read brought,
 * fed to TLS and decrypted into the connection's read buffer, or found to
 * be plain gdkit. What that means for the connection (the handshake's
 * answer written, a refusal, a close) is pub_net.c's: this says what came
 * or what went wrong and touches nothing else. */
#include "pub_int.h"

int pub_tls_in(struct sconn *c, size_t nread, const char **why)
{
	uint8_t *ptr;
	size_t room;
	long got = GD_TLS_AGAIN;
	int rc;

	if (c->state == PUB_CS_TLS && !c->tls_fed && nread >=
	    GD_WIRE_HDR && c->cin[4] == GD_F_HELLO &&
	    !gd_tls_looks_like_hello(c->cin, nread))
		return PUB_TLS_PLAIN;
	c->tls_fed = 1;
	if (gd_tls_feed(c->tls, c->cin, nread) != 0) {
		*why = gd_tls_error(c->tls);
		return PUB_TLS_FAILED;
	}
	for (;;) {
		if ((rc = gd_rbuf_space(&c->rb, PUB_READ_MIN, &ptr,
		    &room)) != 0) {
			*why = gd_dbuf_strerror(rc);
			return PUB_TLS_RBUF;
		}
		if ((got = gd_tls_read(c->tls, ptr, room)) <= 0)
			break;
		gd_rbuf_commit(&c->rb, (size_t)got);
	}
	if (got == GD_TLS_FAIL) {
		*why = gd_tls_error(c->tls);
		return PUB_TLS_FAILED;
	}
	if (got == GD_TLS_EOF)	/* a BYE may be in what came before it */
		c->tls_eof = 1;
	return PUB_TLS_OK;
}
