/* redis_consumer: Redis Streams consumer-group reader for the gdkit peer
 * benchmark (tests/bench/peers/redis.sh).
 *
 *   XGROUP CREATE <key> <group> $ MKSTREAM     then "READY" on stderr
 *   repeat: XREADGROUP GROUP <group> <consumer> COUNT <batch> BLOCK 1000 STREAMS <key> >
 *           XACK <key> <group> <every id of the batch>
 *           (the XACK and the next XREADGROUP go out in one pipelined write)
 *   until N entries were read and the XACK replies add up to N.
 *
 * The value of field "p" of every entry goes to stdout followed by '\n', so the
 * caller can compare the output with the input. Exit 0 when N were read and
 * acked, 1 on a count mismatch or idle timeout, 2 on a usage/connection/protocol
 * error.
 *
 * Usage: redis_consumer -p PORT -k KEY -n N [-b BATCH=1000] [-g GROUP=gdkit]
 *                       [-H HOST=127.0.0.1] [-i IDLE_SECONDS=30]
 * Build: cc -O2 -o redis_consumer redis_consumer.c $(pkg-config --cflags --libs hiredis)
 */
#include <hiredis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/time.h>

static const char *prog = "redis_consumer";

static void die(int code, const char *what, const char *detail) {
    fprintf(stderr, "%s: %s%s%s\n", prog, what, detail ? ": " : "", detail ? detail : "");
    exit(code);
}

static long parse_long(const char *s, const char *name, long min) {
    char *end;
    long v = strtol(s, &end, 10);
    if (*s == '\0' || *end != '\0' || v < min) die(2, "bad number for", name);
    return v;
}

/* Read the next reply; a server error reply or a broken connection is fatal. */
static redisReply *next_reply(redisContext *c) {
    void *r = NULL;
    if (redisGetReply(c, &r) != REDIS_OK || r == NULL) die(2, "connection", c->errstr);
    redisReply *rep = r;
    if (rep->type == REDIS_REPLY_ERROR) die(2, "server error", rep->str);
    return rep;
}

int main(int argc, char **argv) {
    const char *host = "127.0.0.1", *key = NULL, *group = "gdkit";
    long port = 0, n = 0, batch = 1000, idle_max = 30;
    int opt;
    while ((opt = getopt(argc, argv, "H:p:k:n:b:g:i:")) != -1) {
        switch (opt) {
        case 'H': host = optarg; break;
        case 'p': port = parse_long(optarg, "-p", 1); break;
        case 'k': key = optarg; break;
        case 'n': n = parse_long(optarg, "-n", 1); break;
        case 'b': batch = parse_long(optarg, "-b", 1); break;
        case 'g': group = optarg; break;
        case 'i': idle_max = parse_long(optarg, "-i", 1); break;
        default: die(2, "usage: redis_consumer -p PORT -k KEY -n N [-b BATCH] [-g GROUP] [-H HOST] [-i IDLE]", NULL);
        }
    }
    if (!key || !port || !n || port > 65535)
        die(2, "usage: redis_consumer -p PORT -k KEY -n N [-b BATCH] [-g GROUP] [-H HOST] [-i IDLE]", NULL);

    struct timeval ctmo = { 5, 0 };
    redisContext *c = redisConnectWithTimeout(host, (int)port, ctmo);
    if (!c || c->err) die(2, "cannot connect", c ? c->errstr : "out of memory");

    redisReply *r = redisCommand(c, "XGROUP CREATE %s %s $ MKSTREAM", key, group);
    if (!r) die(2, "connection", c->errstr);
    if (r->type == REDIS_REPLY_ERROR) die(2, "XGROUP CREATE", r->str);
    freeReplyObject(r);
    fputs("READY\n", stderr);
    fflush(stderr);

    static char outbuf[1 << 20];
    setvbuf(stdout, outbuf, _IOFBF, sizeof outbuf);

    char count[24];
    snprintf(count, sizeof count, "%ld", batch);
    const char *rd_argv[] = { "XREADGROUP", "GROUP", group, "bench", "COUNT", count,
                              "BLOCK", "1000", "STREAMS", key, ">" };
    const int rd_argc = (int)(sizeof rd_argv / sizeof rd_argv[0]);

    /* XACK key group id1 .. idB: ids point into the current XREADGROUP reply. */
    const char **ack_argv = malloc(sizeof(char *) * (size_t)(batch + 3));
    size_t *ack_len = malloc(sizeof(size_t) * (size_t)(batch + 3));
    if (!ack_argv || !ack_len) die(2, "out of memory", NULL);
    ack_argv[0] = "XACK"; ack_len[0] = 4;
    ack_argv[1] = key;    ack_len[1] = strlen(key);
    ack_argv[2] = group;  ack_len[2] = strlen(group);

    long nread = 0, nacked = 0, idle = 0;
    redisAppendCommandArgv(c, rd_argc, rd_argv, NULL);
    while (nacked < n) {
        r = next_reply(c); /* reply to XREADGROUP */
        if (r->type == REDIS_REPLY_NIL) { /* BLOCK expired with nothing new */
            freeReplyObject(r);
            if (++idle >= idle_max) {
                fprintf(stderr, "%s: idle for %ld s, read %ld acked %ld of %ld\n", prog, idle, nread, nacked, n);
                return 1;
            }
            redisAppendCommandArgv(c, rd_argc, rd_argv, NULL);
            continue;
        }
        idle = 0;
        /* [[key, [[id, [field, value, ...]], ...]]] */
        if (r->type != REDIS_REPLY_ARRAY || r->elements != 1 || r->element[0]->type != REDIS_REPLY_ARRAY ||
            r->element[0]->elements != 2 || r->element[0]->element[1]->type != REDIS_REPLY_ARRAY)
            die(2, "unexpected XREADGROUP reply", NULL);
        redisReply *entries = r->element[0]->element[1];
        if (entries->elements == 0 || entries->elements > (size_t)batch) die(2, "unexpected batch size", NULL);
        int k = 3;
        for (size_t i = 0; i < entries->elements; i++) {
            redisReply *e = entries->element[i];
            if (e->type != REDIS_REPLY_ARRAY || e->elements != 2 || e->element[0]->type != REDIS_REPLY_STRING ||
                e->element[1]->type != REDIS_REPLY_ARRAY)
                die(2, "unexpected stream entry", NULL);
            ack_argv[k] = e->element[0]->str;
            ack_len[k] = e->element[0]->len;
            k++;
            redisReply *fv = e->element[1];
            int found = 0;
            for (size_t j = 0; j + 1 < fv->elements; j += 2) {
                if (fv->element[j]->len == 1 && fv->element[j]->str[0] == 'p') {
                    fwrite(fv->element[j + 1]->str, 1, fv->element[j + 1]->len, stdout);
                    putchar('\n');
                    found = 1;
                    break;
                }
            }
            if (!found) die(2, "stream entry without field p", e->element[0]->str);
        }
        nread += (long)entries->elements;
        if (nread > n) die(1, "read more entries than expected", NULL);
        redisAppendCommandArgv(c, k, ack_argv, ack_len);
        if (nread < n) redisAppendCommandArgv(c, rd_argc, rd_argv, NULL);
        freeReplyObject(r); /* ids are copied into the output buffer by the append above */
        r = next_reply(c);  /* reply to XACK: how many ids it acknowledged */
        if (r->type != REDIS_REPLY_INTEGER) die(2, "unexpected XACK reply", NULL);
        nacked += r->integer;
        freeReplyObject(r);
        if (nread == n && nacked < n) {
            fprintf(stderr, "%s: read %ld but XACK acknowledged only %ld\n", prog, nread, nacked);
            return 1;
        }
    }
    if (fflush(stdout) != 0) die(2, "write error on stdout", NULL);
    fprintf(stderr, "DONE read=%ld acked=%ld\n", nread, nacked);
    redisFree(c);
    return nacked == n ? 0 : 1;
}
