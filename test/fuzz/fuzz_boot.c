/*
 * fuzz_boot.c - the bootstrap record reader (xdev_boot_lookup on a boot
 * directory entry) and the address parser its records go to
 * (tcp_parse_addr), on any file content.
 *
 * A boot directory entry is a file another process wrote, so its reader
 * promises: whatever the file holds, the answer fits the caller's buffer
 * (one of exactly the size tcp's dial passes, 300 bytes, so ASan sees a
 * byte past it), ends in a NUL and is the file's first bytes; an empty
 * file is an error. The address parser then promises a socket address of
 * a family and length that go together, with the port the text named, or
 * an error, never a partly parsed address taken for a good one.
 */
#include <arpa/inet.h>
#include <fcntl.h>
#include <unistd.h>
#include "device.h"
#include "fuzz_check.h"
#include "tcp.h"

enum { CAP = 300, PEER = 1 };

static char dir[] = "/tmp/fuzz-boot-XXXXXX"; /* not xdev-*: no job's leftover */
static char path[4096];
static xdev_t dev = { .rank = 0, .size = 2 };

static void remove_dir(void)
{
    unlink(path);
    rmdir(dir);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    FUZZ_CHECK(mkdtemp(dir));
    atexit(remove_dir);
    dev.boot_dir = dir; /* what xdev_init copies from XDEV_BOOT_DIR */
    snprintf(path, sizeof path, "%s/tcp.%d", dir, PEER);
    return 0;
}

static void check_addr(const char *text)
{
    struct sockaddr_storage ss;
    socklen_t len = 0;
    if (tcp_parse_addr(text, &ss, &len) != XDEV_OK)
        return;
    const char *colon = strrchr(text, ':');
    FUZZ_CHECK(colon);
    long port = strtol(colon + 1, NULL, 10);
    if (ss.ss_family == AF_INET) {
        FUZZ_CHECK(len == sizeof(struct sockaddr_in));
        FUZZ_CHECK(ntohs(((struct sockaddr_in *)&ss)->sin_port) == port);
    } else {
        FUZZ_CHECK(ss.ss_family == AF_INET6 && len == sizeof(struct sockaddr_in6));
        FUZZ_CHECK(ntohs(((struct sockaddr_in6 *)&ss)->sin6_port) == port);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    FUZZ_CHECK(fd >= 0 && write(fd, data, size) == (ssize_t)size && close(fd) == 0);
    char *out = malloc(CAP);
    FUZZ_CHECK(out);
    int rc = xdev_boot_lookup(&dev, PEER, "tcp", out, CAP);
    if (size == 0) {
        FUZZ_CHECK(rc == XDEV_ERR_INIT);
    } else {
        size_t n = size < CAP - 1 ? size : CAP - 1;
        FUZZ_CHECK(rc == 1 && out[n] == '\0' && memcmp(out, data, n) == 0);
        check_addr(out);
    }
    free(out);
    return 0;
}
