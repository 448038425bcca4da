/*
 * fault_stranger.c - a process outside the job connects to the ranks'
 * listening ports and must be dropped without learning anything, while the
 * job's own traffic goes on unharmed.
 *
 * Run as `xdevrun -n 3 fault_stranger`. Before xdev_init, rank 0 forks a
 * child (the stranger: no xdev state, no inherited xdev sockets). The child
 * finds every rank's listening address and opens to each of them:
 *   - a connection that sends 4 KiB of random bytes,
 *   - one that sends a plausible 20-byte xdev header (DESIGN.md section 3)
 *     followed by garbage,
 *   - one that sends a 4-byte length prefix, that header and garbage,
 *   - one that sends nothing and just stays open.
 * Each must be closed by the rank (EOF or ECONNRESET) within a bound (5 s
 * for the talkative ones, 10 s for the silent one) and must receive no byte
 * at all before that. Meanwhile and afterwards the three ranks exchange a
 * few thousand verified messages.
 *
 * Coupling with the TCP transport, on purpose and only here: the stranger
 * finds the ports by listing $XDEV_BOOT_DIR and taking, from each file read
 * as text, the first "a.b.c.d:port" it contains. The file format is private
 * to the library; if it stops containing IPv4 host:port text, the stranger
 * reports that it found no addresses and this test fails loudly.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fault_util.h"
#include "xdev.h"

#define CTX 6
#define MAX_ADDRS 16
#define KINDS 4
#define TALK_BOUND_S 5.0
#define SILENT_BOUND_S 10.0
#define NMSG 1000      /* per ordered pair of ranks and round */
#define WINDOW 16
#define MAXLEN 102000

enum { K_RANDOM, K_HEADER, K_HEADER_LEN, K_SILENT };
static const char *kind_name[KINDS] = {"random bytes", "20-byte header + garbage",
                                       "length + header + garbage", "silent"};

/* ---- the stranger (child of rank 0) ---- */

/* First "a.b.c.d:port" in text, or 0. */
static int scan_addr(const char *text, struct sockaddr_in *sa)
{
    for (const char *p = text; *p; p++) {
        unsigned a, b, c, d, port;
        int n = 0;
        if (p > text && ((p[-1] >= '0' && p[-1] <= '9') || p[-1] == '.')) continue;
        if (sscanf(p, "%3u.%3u.%3u.%3u:%5u%n", &a, &b, &c, &d, &port, &n) == 5 && n > 0 &&
            a < 256 && b < 256 && c < 256 && d < 256 && port > 0 && port < 65536) {
            memset(sa, 0, sizeof *sa);
            sa->sin_family = AF_INET;
            sa->sin_port = htons((uint16_t)port);
            sa->sin_addr.s_addr = htonl((a << 24) | (b << 16) | (c << 8) | d);
            return 1;
        }
    }
    return 0;
}

static int find_addrs(const char *dir, struct sockaddr_in *out)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    int n = 0;
    if (!d) return 0;
    while ((e = readdir(d)) && n < MAX_ADDRS) {
        char path[4096], text[4097];
        struct sockaddr_in sa;
        FILE *f;
        size_t len;
        if (e->d_name[0] == '.') continue;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        if (!(f = fopen(path, "r"))) continue;
        len = fread(text, 1, sizeof text - 1, f);
        fclose(f);
        text[len] = '\0';
        for (size_t i = 0; i < len; i++) if (text[i] == '\0') text[i] = ' ';
        if (!scan_addr(text, &sa)) continue;
        int dup = 0;
        for (int i = 0; i < n; i++)
            if (out[i].sin_port == sa.sin_port && out[i].sin_addr.s_addr == sa.sin_addr.s_addr) dup = 1;
        if (!dup) out[n++] = sa;
    }
    closedir(d);
    return n;
}

static void put_le32(unsigned char *p, uint32_t v)
{
    for (int i = 0; i < 4; i++) p[i] = (unsigned char)(v >> (8 * i));
}

struct conn {
    int fd, kind, addr, open;
    size_t got;
    double dropped_after;
    char why[64];
};

static void report(int pipefd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void report(int pipefd, const char *fmt, ...)
{
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line - 1, fmt, ap);
    va_end(ap);
    if (n < 0) return;
    if ((size_t)n > sizeof line - 2) n = sizeof line - 2;
    line[n++] = '\n';
    ssize_t w = write(pipefd, line, (size_t)n);
    (void)w;
}

static void stranger(int pipefd, int size)
{
    const char *dir = getenv("XDEV_BOOT_DIR");
    struct sockaddr_in addrs[MAX_ADDRS];
    struct conn conns[MAX_ADDRS * KINDS];
    unsigned char junk[4096];
    int naddr = 0, nconn = 0;
    double t0, end;

    alarm(90);
    if (!dir) { report(pipefd, "FAIL XDEV_BOOT_DIR is not set"); _exit(0); }
    for (end = fault_now() + 20; fault_now() < end; fault_sleep_ms(50))
        if ((naddr = find_addrs(dir, addrs)) >= size) break;
    if (naddr < size) {
        report(pipefd, "FAIL found %d host:port addresses in %s, want %d (boot file format changed?)",
               naddr, dir, size);
        report(pipefd, "connected");
        _exit(0);
    }
    fault_sleep_ms(200); /* files complete: rank 0 reads our pipe only after init + barrier */
    naddr = find_addrs(dir, addrs);

    srand((unsigned)getpid());
    for (size_t i = 0; i < sizeof junk; i++) junk[i] = (unsigned char)rand();
    for (int a = 0; a < naddr; a++) {
        for (int k = 0; k < KINDS; k++) {
            struct conn *c = &conns[nconn++];
            unsigned char msg[24 + 1000];
            size_t len = 0;
            memset(c, 0, sizeof *c);
            c->kind = k, c->addr = a, c->dropped_after = -1;
            c->fd = socket(AF_INET, SOCK_STREAM, 0);
            if (c->fd < 0 || connect(c->fd, (struct sockaddr *)&addrs[a], sizeof addrs[a]) != 0) {
                report(pipefd, "FAIL connect to %s:%d: %s", inet_ntoa(addrs[a].sin_addr),
                       ntohs(addrs[a].sin_port), strerror(errno));
                nconn--;
                continue;
            }
            c->open = 1;
            if (k == K_RANDOM) {
                memcpy(msg, junk, 1000);
                len = 1000;
            } else if (k == K_HEADER || k == K_HEADER_LEN) {
                size_t off = 0;
                if (k == K_HEADER_LEN) put_le32(msg, 20 + 1000), off = 4;
                put_le32(msg + off + 0, 0);  /* src: rank 0 */
                put_le32(msg + off + 4, 1);  /* dst: rank 1 */
                put_le32(msg + off + 8, 7);  /* tag */
                put_le32(msg + off + 12, 0); /* ctx */
                put_le32(msg + off + 16, 1); /* type: a small value, like EAGER */
                memcpy(msg + off + 20, junk + 1000, 1000);
                len = off + 20 + 1000;
            }
            if (len) {
                ssize_t w = send(c->fd, msg, len, MSG_NOSIGNAL);
                (void)w; /* the rank may already have closed: that is fine */
                if (k == K_RANDOM) {
                    w = send(c->fd, junk, sizeof junk, MSG_NOSIGNAL);
                    (void)w;
                }
            }
            fcntl(c->fd, F_SETFL, O_NONBLOCK);
        }
    }
    report(pipefd, "connected %d addresses, %d connections", naddr, nconn);

    /* Wait for every connection to be dropped; record any byte received. */
    t0 = fault_now();
    for (;;) {
        struct pollfd pf[MAX_ADDRS * KINDS];
        int idx[MAX_ADDRS * KINDS], n = 0;
        double now = fault_now() - t0;
        for (int i = 0; i < nconn; i++) {
            double bound = conns[i].kind == K_SILENT ? SILENT_BOUND_S : TALK_BOUND_S;
            if (conns[i].open && now < bound + 1) {
                pf[n].fd = conns[i].fd, pf[n].events = POLLIN, pf[n].revents = 0;
                idx[n++] = i;
            }
        }
        if (n == 0) break;
        if (poll(pf, (nfds_t)n, 100) < 0 && errno != EINTR) break;
        for (int j = 0; j < n; j++) {
            struct conn *c = &conns[idx[j]];
            char buf[4096];
            if (!pf[j].revents) continue;
            for (;;) {
                ssize_t r = recv(c->fd, buf, sizeof buf, 0);
                if (r > 0) { c->got += (size_t)r; continue; }
                if (r < 0 && (errno == EAGAIN || errno == EINTR)) break;
                c->open = 0;
                c->dropped_after = fault_now() - t0;
                snprintf(c->why, sizeof c->why, "%s", r == 0 ? "EOF" : strerror(errno));
                break;
            }
        }
    }
    for (int i = 0; i < nconn; i++) {
        struct conn *c = &conns[i];
        double bound = c->kind == K_SILENT ? SILENT_BOUND_S : TALK_BOUND_S;
        const char *who = inet_ntoa(addrs[c->addr].sin_addr);
        int port = ntohs(addrs[c->addr].sin_port);
        if (c->open)
            report(pipefd, "FAIL %s:%d %s: still open after %.0f s (bound %.0f s)", who, port,
                   kind_name[c->kind], fault_now() - t0, bound);
        else if (c->dropped_after > bound)
            report(pipefd, "FAIL %s:%d %s: dropped only after %.3f s (bound %.0f s)", who, port,
                   kind_name[c->kind], c->dropped_after, bound);
        if (c->got)
            report(pipefd, "FAIL %s:%d %s: the stranger received %zu bytes before the drop", who, port,
                   kind_name[c->kind], c->got);
        if (!c->open && !c->got)
            report(pipefd, "info %s:%d %s: dropped (%s) after %.3f s, 0 bytes received", who, port,
                   kind_name[c->kind], c->why, c->dropped_after);
        close(c->fd);
    }
    _exit(0);
}

/* ---- the job's own traffic ---- */

static size_t msg_len(int i) { return (i % 250 == 7) ? 100000 + (size_t)i : (size_t)(i * 37) % 2000; }
static uint32_t msg_seed(int src, int round, int i) { return (uint32_t)(src * 1000003 + round * 10007 + i); }

/* Every rank sends NMSG messages to every other rank; each receive is
 * checked for source, length, content and order. */
static void traffic(xdev_t *dev, int round)
{
    int rank = xdev_rank(dev), size = xdev_size(dev), np = size - 1;
    char *sbuf = malloc((size_t)np * WINDOW * MAXLEN), *rbuf = malloc((size_t)np * WINDOW * MAXLEN);
    xdev_request_t *sreq = calloc((size_t)np * WINDOW, sizeof *sreq);
    xdev_request_t *rreq = calloc((size_t)np * WINDOW, sizeof *rreq);
    xdev_status_t st;
    REQUIRE(sbuf && rbuf && sreq && rreq, "malloc");

    fault_step("traffic");
    for (int base = 0; base < NMSG; base += WINDOW) {
        int w = NMSG - base < WINDOW ? NMSG - base : WINDOW;
        for (int p = 0, slot = 0; p < size; p++) {
            if (p == rank) continue;
            for (int k = 0; k < w; k++, slot++)
                REQUIRE_RC(xdev_irecv(dev, rbuf + (size_t)(slot) * MAXLEN, MAXLEN, p, round, CTX, &rreq[slot]), XDEV_OK);
        }
        for (int p = 0, slot = 0; p < size; p++) {
            if (p == rank) continue;
            for (int k = 0; k < w; k++, slot++) {
                char *b = sbuf + (size_t)slot * MAXLEN;
                fault_fill(b, msg_len(base + k), msg_seed(rank, round, base + k));
                REQUIRE_RC(xdev_isend(dev, b, msg_len(base + k), p, round, CTX, &sreq[slot]), XDEV_OK);
            }
        }
        for (int p = 0, slot = 0; p < size; p++) {
            if (p == rank) continue;
            for (int k = 0; k < w; k++, slot++) {
                int i = base + k;
                REQUIRE_RC(xdev_wait(&sreq[slot], &st), XDEV_OK);
                CHECK(st.error == XDEV_OK, "send %d to %d: status.error %d", i, p, st.error);
                REQUIRE_RC(xdev_wait(&rreq[slot], &st), XDEV_OK);
                CHECK(st.error == XDEV_OK && st.source == p && st.count == msg_len(i),
                      "round %d message %d from %d: error %d source %d count %zu (want %zu)", round, i, p,
                      st.error, st.source, st.count, msg_len(i));
                CHECK(fault_verify(rbuf + (size_t)slot * MAXLEN, msg_len(i), msg_seed(p, round, i)) == (size_t)-1,
                      "round %d message %d from %d: wrong data or order", round, i, p);
            }
        }
        if (fault_failures > 20) fault_abort();
    }
    free(sbuf), free(rbuf), free(sreq), free(rreq);
}

/* Read one line from the stranger, waiting at most timeout_s. Without a
 * progress thread a device acts only inside xdev calls, so keep calling
 * xdev_iprobe meanwhile: rank 0 must be able to drop strangers too. */
static int read_line(xdev_t *dev, FILE *f, int fd, char *line, size_t cap, double timeout_s)
{
    double end = fault_now() + timeout_s;
    for (;;) {
        struct pollfd pf = {fd, POLLIN, 0};
        int found = 0;
        xdev_status_t st;
        if (poll(&pf, 1, 10) > 0) return fgets(line, (int)cap, f) != NULL;
        if (fault_now() > end) return 0;
        REQUIRE_RC(xdev_iprobe(dev, XDEV_ANY_SOURCE, XDEV_ANY_TAG, CTX, &found, &st), XDEV_OK);
    }
}

int main(void)
{
    xdev_t *dev = NULL;
    int rank, size, pipefd[2] = {-1, -1};
    pid_t child = -1;
    const char *env_rank = getenv("XDEV_RANK"), *env_size = getenv("XDEV_SIZE");
    FILE *from_child = NULL;
    char line[600];

    fault_setup("fault-stranger", 110);
    if (env_rank && atoi(env_rank) == 0) {
        REQUIRE(pipe(pipefd) == 0, "pipe");
        child = fork();
        REQUIRE(child >= 0, "fork");
        if (child == 0) {
            close(pipefd[0]);
            stranger(pipefd[1], env_size ? atoi(env_size) : 3);
        }
        close(pipefd[1]);
        from_child = fdopen(pipefd[0], "r");
    }

    fault_step("xdev_init");
    REQUIRE_RC(xdev_init(NULL, &dev), XDEV_OK);
    rank = xdev_rank(dev);
    size = xdev_size(dev);
    REQUIRE(size >= 2, "needs 2 or more ranks");
    REQUIRE_RC(fault_barrier(dev), XDEV_OK);

    if (rank == 0) {
        fault_step("waiting for the stranger to connect");
        REQUIRE(read_line(dev, from_child, pipefd[0], line, sizeof line, 40), "stranger did not report");
        fault_log("stranger: %s", strtok(line, "\n"));
        if (strncmp(line, "FAIL", 4) == 0) fault_fail(__FILE__, __LINE__, "stranger: %s", line);
    }
    REQUIRE_RC(fault_barrier(dev), XDEV_OK);
    traffic(dev, 1); /* while the stranger's connections are open */
    REQUIRE_RC(fault_barrier(dev), XDEV_OK);

    if (rank == 0) {
        int status = 0;
        fault_step("waiting for the stranger's verdict");
        while (read_line(dev, from_child, pipefd[0], line, sizeof line, SILENT_BOUND_S + 10)) {
            strtok(line, "\n");
            if (strncmp(line, "FAIL", 4) == 0) fault_fail(__FILE__, __LINE__, "stranger: %s", line);
            else fault_log("stranger: %s", line);
        }
        REQUIRE(waitpid(child, &status, 0) == child, "waitpid");
        CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "stranger exited with status 0x%x", status);
        fclose(from_child);
    }
    REQUIRE_RC(fault_barrier(dev), XDEV_OK);
    traffic(dev, 2); /* after every stranger was dropped */
    REQUIRE_RC(fault_barrier(dev), XDEV_OK);

    fault_step("xdev_finalize");
    CHECK_RC(xdev_finalize(dev), XDEV_OK);
    return fault_finish();
}
