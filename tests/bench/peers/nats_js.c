/* nats_js: NATS JetStream publisher and pull consumer for the gdkit peer
 * benchmark (tests/bench/peers/nats.sh), built on libnats (cnats).
 *
 *   nats_js sub -u URL -n N [-b BATCH=1000] [-t file|memory] [-i IDLE_SECONDS=30]
 *       Creates stream GDKIT_BENCH (subject gdkit.bench, storage -t) and a
 *       durable pull consumer "bench" (AckExplicit, MaxAckPending 20*BATCH),
 *       then says READY on stderr.
 *       Fetches up to BATCH messages at a time, writes each payload plus '\n'
 *       to stdout and acknowledges every message (natsMsg_Ack). When N have
 *       been received it polls the consumer info until the server has applied
 *       all acks (NumAckPending == 0 and ack floor == N): JetStream acks are
 *       fire-and-forget, so only the server can say they all arrived.
 *   nats_js pub -u URL [-m MAX_PENDING=4000] < lines
 *       Publishes every stdin line (without its '\n') to gdkit.bench with
 *       js_PublishAsync and waits for every PubAck (js_PublishAsyncComplete).
 *
 * Exit 0 on success, 1 on a count mismatch, a failed publish or an idle
 * timeout, 2 on usage, connection or protocol errors. "DONE ..." on stderr.
 * Build: cc -O2 -o nats_js nats_js.c $(pkg-config --cflags --libs libnats)
 */
#include <nats/nats.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define STREAM "GDKIT_BENCH"
#define SUBJECT "gdkit.bench"
#define DURABLE "bench"

static const char *usage =
    "usage: nats_js sub -u URL -n N [-b BATCH] [-t file|memory] [-i IDLE_SECONDS]\n"
    "       nats_js pub -u URL [-m MAX_PENDING] < lines\n";

static void die_status(const char *what, natsStatus s, jsErrCode jerr) {
    fprintf(stderr, "nats_js: %s: %s (jetstream error %d)\n", what, natsStatus_GetText(s), (int)jerr);
    nats_PrintLastErrorStack(stderr);
    exit(2);
}

static long parse_long(const char *s, const char *name, long min) {
    char *end;
    long v = strtol(s, &end, 10);
    if (*s == '\0' || *end != '\0' || v < min) {
        fprintf(stderr, "nats_js: bad number for %s: %s\n%s", name, s, usage);
        exit(2);
    }
    return v;
}

static natsConnection *connect_to(const char *url) {
    natsOptions *opts = NULL;
    natsConnection *nc = NULL;
    natsStatus s = natsOptions_Create(&opts);
    if (s == NATS_OK) s = natsOptions_SetURL(opts, url);
    if (s == NATS_OK) s = natsOptions_SetTimeout(opts, 5000);
    if (s == NATS_OK) s = natsOptions_SetAllowReconnect(opts, false);
    if (s == NATS_OK) s = natsConnection_Connect(&nc, opts);
    if (s != NATS_OK) die_status("connect", s, 0);
    natsOptions_Destroy(opts);
    return nc;
}

static int run_sub(const char *url, long n, long batch, const char *storage, long idle_max) {
    natsConnection *nc = connect_to(url);
    jsCtx *js = NULL;
    jsErrCode jerr = 0;
    natsStatus s = natsConnection_JetStream(&js, nc, NULL);
    if (s != NATS_OK) die_status("jetstream context", s, 0);

    jsStreamConfig sc;
    jsStreamConfig_Init(&sc);
    const char *subjects[] = { SUBJECT };
    sc.Name = STREAM;
    sc.Subjects = subjects;
    sc.SubjectsLen = 1;
    sc.Storage = strcmp(storage, "memory") == 0 ? js_MemoryStorage : js_FileStorage;
    jsStreamInfo *si = NULL;
    s = js_AddStream(&si, js, &sc, NULL, &jerr);
    if (s != NATS_OK) die_status("add stream", s, jerr);
    jsStreamInfo_Destroy(si);

    jsSubOptions so;
    jsSubOptions_Init(&so);
    so.Stream = STREAM;
    so.Config.AckPolicy = js_AckExplicit;
    so.Config.MaxAckPending = 20 * batch;
    natsSubscription *sub = NULL;
    s = js_PullSubscribe(&sub, js, SUBJECT, DURABLE, NULL, &so, &jerr);
    if (s != NATS_OK) die_status("pull subscribe", s, jerr);
    fputs("READY\n", stderr);
    fflush(stderr);

    static char outbuf[1 << 20];
    setvbuf(stdout, outbuf, _IOFBF, sizeof outbuf);
    long got = 0, idle_ms = 0;
    while (got < n) {
        natsMsgList list = { NULL, 0 };
        int want = (int)(n - got < batch ? n - got : batch);
        s = natsSubscription_Fetch(&list, sub, want, 1000, &jerr);
        if (s == NATS_TIMEOUT) {
            idle_ms += 1000;
            if (idle_ms >= idle_max * 1000) {
                fprintf(stderr, "nats_js: idle for %ld s, received %ld of %ld\n", idle_max, got, n);
                return 1;
            }
            continue;
        }
        if (s != NATS_OK) die_status("fetch", s, jerr);
        idle_ms = 0;
        for (int i = 0; i < list.Count; i++) {
            natsMsg *m = list.Msgs[i];
            fwrite(natsMsg_GetData(m), 1, (size_t)natsMsg_GetDataLength(m), stdout);
            putchar('\n');
            s = natsMsg_Ack(m, NULL);
            if (s != NATS_OK) die_status("ack", s, 0);
        }
        got += list.Count;
        natsMsgList_Destroy(&list);
    }
    if (fflush(stdout) != 0) {
        fputs("nats_js: write error on stdout\n", stderr);
        return 2;
    }
    s = natsConnection_Flush(nc);
    if (s != NATS_OK) die_status("flush", s, 0);

    /* Acks are applied by the server asynchronously: wait until it has them all. */
    int64_t deadline = nats_Now() + idle_max * 1000;
    for (;;) {
        jsConsumerInfo *ci = NULL;
        s = natsSubscription_GetConsumerInfo(&ci, sub, NULL, &jerr);
        if (s != NATS_OK) die_status("consumer info", s, jerr);
        int64_t ack_pending = ci->NumAckPending;
        uint64_t floor = ci->AckFloor.Consumer, delivered = ci->Delivered.Consumer;
        jsConsumerInfo_Destroy(ci);
        if (ack_pending == 0 && floor >= (uint64_t)n) {
            if (delivered != (uint64_t)n) {
                fprintf(stderr, "nats_js: consumer delivered %llu, expected %ld\n", (unsigned long long)delivered, n);
                return 1;
            }
            break;
        }
        if (nats_Now() > deadline) {
            fprintf(stderr, "nats_js: acks not applied: ack_pending=%lld ack_floor=%llu of %ld\n",
                    (long long)ack_pending, (unsigned long long)floor, n);
            return 1;
        }
        nats_Sleep(2);
    }
    fprintf(stderr, "DONE received=%ld acked=%ld\n", got, got);
    natsSubscription_Destroy(sub);
    jsCtx_Destroy(js);
    natsConnection_Destroy(nc);
    return 0;
}

static long pub_errors = 0;

static void on_pub_error(jsCtx *js, jsPubAckErr *pae, void *closure) {
    (void)js; (void)closure;
    if (pub_errors++ == 0)
        fprintf(stderr, "nats_js: publish failed: %s (%s)\n", natsStatus_GetText(pae->Err),
                pae->ErrText ? pae->ErrText : "");
}

static int run_pub(const char *url, long max_pending) {
    natsConnection *nc = connect_to(url);
    jsOptions jo;
    jsOptions_Init(&jo);
    jo.PublishAsync.MaxPending = max_pending;
    jo.PublishAsync.ErrHandler = on_pub_error;
    jo.PublishAsync.StallWait = 10000;
    jsCtx *js = NULL;
    natsStatus s = natsConnection_JetStream(&js, nc, &jo);
    if (s != NATS_OK) die_status("jetstream context", s, 0);

    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    long sent = 0;
    while ((len = getline(&line, &cap, stdin)) > 0) {
        if (line[len - 1] == '\n') len--;
        s = js_PublishAsync(js, SUBJECT, line, (int)len, NULL);
        if (s != NATS_OK) die_status("publish", s, 0);
        sent++;
    }
    free(line);
    if (ferror(stdin)) {
        fputs("nats_js: read error on stdin\n", stderr);
        return 2;
    }
    jsPubOptions po;
    jsPubOptions_Init(&po);
    po.MaxWait = 60000;
    s = js_PublishAsyncComplete(js, &po);
    if (s != NATS_OK) die_status("waiting for PubAcks", s, 0);
    if (pub_errors) {
        fprintf(stderr, "nats_js: %ld of %ld publishes failed\n", pub_errors, sent);
        return 1;
    }
    fprintf(stderr, "DONE published=%ld\n", sent);
    jsCtx_Destroy(js);
    natsConnection_Destroy(nc);
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 2) { fputs(usage, stderr); return 2; }
    const char *mode = argv[1], *url = NULL, *storage = "file";
    long n = 0, batch = 1000, idle = 30, max_pending = 4000;
    int opt;
    optind = 2;
    while ((opt = getopt(argc, argv, "u:n:b:t:i:m:")) != -1) {
        switch (opt) {
        case 'u': url = optarg; break;
        case 'n': n = parse_long(optarg, "-n", 1); break;
        case 'b': batch = parse_long(optarg, "-b", 1); break;
        case 't': storage = optarg; break;
        case 'i': idle = parse_long(optarg, "-i", 1); break;
        case 'm': max_pending = parse_long(optarg, "-m", 1); break;
        default: fputs(usage, stderr); return 2;
        }
    }
    if (!url || (strcmp(storage, "file") != 0 && strcmp(storage, "memory") != 0)) {
        fputs(usage, stderr);
        return 2;
    }
    if (strcmp(mode, "sub") == 0 && n > 0) return run_sub(url, n, batch, storage, idle);
    if (strcmp(mode, "pub") == 0) return run_pub(url, max_pending);
    fputs(usage, stderr);
    return 2;
}
