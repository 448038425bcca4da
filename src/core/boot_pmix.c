/*
 * boot_pmix.c - starting under a PMIx server (Open MPI's mpirun, Slurm's
 * srun --mpi=pmix) with no xdev launcher: rank and size come from PMIx,
 * and PMIx's key-value store carries what xdevrun's boot directory does.
 *
 * Used when the process has PMIX_NAMESPACE and PMIX_RANK in its
 * environment, xdev_init is given no config, and xdevrun did not start it
 * (no XDEV_RANK or XDEV_BOOT_DIR). Keys are "xdev.<key>", put with
 * PMIX_GLOBAL scope and committed at once. Lookups read the local data
 * store only (PMIX_OPTIONAL): what is not there yet is "not yet", and the
 * caller asks again, never blocking progress on a remote server.
 *
 * Two fences, both in xdev_init and both collecting data: one after every
 * rank has published its host identity (auto needs every rank's before it
 * can choose transports), and one after the transports have published
 * their addresses. After the second, every lookup is local. The job
 * secret is rank 0's random one, which the others fetch from rank 0's
 * server with one blocking get (PMIx's direct modex, no fence) before
 * anything is authenticated; the job id is the namespace with what a file
 * name cannot carry replaced.
 *
 * Then, unless a transport publishes as it connects, the device lets go
 * of the server (boot_pmix_let_go): what its transports may still look up
 * is copied, and PMIx is finalized. Slurm's PMIx plugin cancels the
 * whole step, survivors and all, about a second after the death of a rank
 * that still held PMIx; one that had let go dies alone.
 */
#include <pmix.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include "device.h"

#define MAX_KEYS 8

struct boot_pmix {
    pmix_proc_t me;
    char job_id[65];
    char secret[33];
    char node[128];     /* PMIX_HOSTNAME: the node the launcher put us on */
    /* The keys this rank published, which are the ones its transports
     * look up (each under its own); nkeys < 0: more than fit. */
    char keys[MAX_KEYS][PMIX_MAX_KEYLEN + 1];
    int nkeys;
    /* Once let go of the server: key k of rank r at values[k * size + r],
     * NULL where that rank has none. */
    char **values;
    int size;
    int fence_s; /* how long a fence waits for every rank: the peer timeout */
};

/* A value there, but not a string: its lookups fail. */
static char unusable[1];

bool boot_pmix_wanted(void)
{
    const char *ns = getenv("PMIX_NAMESPACE"), *rank = getenv("PMIX_RANK");
    return ns && *ns && rank && *rank && !getenv("XDEV_RANK") && !getenv("XDEV_BOOT_DIR");
}

/* wait_s < 0: the local store only; otherwise wait up to wait_s seconds
 * for the key to reach it (0: as long as it takes). */
static int get_value(boot_pmix_t *b, int rank, const char *key, int wait_s, pmix_value_t **v)
{
    pmix_proc_t who;
    PMIX_PROC_LOAD(&who, b->me.nspace, rank < 0 ? PMIX_RANK_WILDCARD : (pmix_rank_t)rank);
    pmix_info_t info;
    bool yes = true;
    if (wait_s < 0)
        PMIX_INFO_LOAD(&info, PMIX_OPTIONAL, &yes, PMIX_BOOL);
    else
        PMIX_INFO_LOAD(&info, PMIX_TIMEOUT, &wait_s, PMIX_INT);
    pmix_status_t rc = PMIx_Get(&who, key, &info, 1, v);
    PMIX_INFO_DESTRUCT(&info);
    return rc == PMIX_SUCCESS ? 1 : rc == PMIX_ERR_NOT_FOUND ? 0 : XDEV_ERR_INIT;
}

/* Rank's value of key: 1 and a string of our own in *s (unusable where
 * the value is not a string), 0 where it has none yet. */
static int get_string(boot_pmix_t *b, int rank, const char *key, int wait_s, char **s)
{
    char k[PMIX_MAX_KEYLEN + 1];
    snprintf(k, sizeof k, "xdev.%s", key);
    pmix_value_t *v = NULL;
    int rc = get_value(b, rank, k, wait_s, &v);
    if (rc == 1 && (v->type != PMIX_STRING || !v->data.string))
        *s = unusable;
    else if (rc == 1 && !(*s = strdup(v->data.string)))
        rc = XDEV_ERR_NOMEM;
    if (v)
        PMIX_VALUE_RELEASE(v);
    return rc;
}

static void free_string(char *s)
{
    if (s != unusable)
        free(s);
}

static int put(const char *key, const char *value)
{
    char k[PMIX_MAX_KEYLEN + 1];
    snprintf(k, sizeof k, "xdev.%s", key);
    pmix_value_t v;
    PMIX_VALUE_LOAD(&v, value, PMIX_STRING);
    pmix_status_t rc = PMIx_Put(PMIX_GLOBAL, k, &v);
    PMIX_VALUE_DESTRUCT(&v);
    return rc == PMIX_SUCCESS && PMIx_Commit() == PMIX_SUCCESS ? XDEV_OK : XDEV_ERR_INIT;
}

/* A rank that dies inside PMIx fails the fence at once (PMIx says "partial
 * success"), but under mpirun --enable-recovery one that died before its
 * PMIx_Init would keep the others in it for ever: a rank that has not come
 * within the peer timeout counts as dead, as it does to the secret's wait. */
int boot_pmix_fence(boot_pmix_t *b)
{
    pmix_info_t info[2];
    bool yes = true;
    PMIX_INFO_LOAD(&info[0], PMIX_COLLECT_DATA, &yes, PMIX_BOOL);
    PMIX_INFO_LOAD(&info[1], PMIX_TIMEOUT, &b->fence_s, PMIX_INT);
    pmix_status_t rc = PMIx_Fence(NULL, 0, info, 2);
    PMIX_INFO_DESTRUCT(&info[0]);
    PMIX_INFO_DESTRUCT(&info[1]);
    return rc == PMIX_SUCCESS ? XDEV_OK : XDEV_ERR_INIT;
}

static int key_index(const boot_pmix_t *b, const char *key)
{
    for (int k = 0; k < b->nkeys; k++)
        if (!strcmp(b->keys[k], key))
            return k;
    return -1;
}

int boot_pmix_publish(boot_pmix_t *b, const char *key, const char *value)
{
    if (b->values)
        return XDEV_ERR_INIT; /* let go of: see xdev_boot_done */
    int rc = put(key, value);
    if (rc != XDEV_OK || b->nkeys < 0 || key_index(b, key) >= 0)
        return rc;
    if (b->nkeys == MAX_KEYS || strlen(key) >= sizeof b->keys[0])
        b->nkeys = -1;
    else
        strcpy(b->keys[b->nkeys++], key);
    return XDEV_OK;
}

static int copy_out(const char *s, char *out, size_t cap)
{
    if (s == unusable || strlen(s) >= cap)
        return XDEV_ERR_INIT;
    strcpy(out, s);
    return 1;
}

static int lookup(boot_pmix_t *b, int rank, const char *key, int wait_s, char *out, size_t cap)
{
    if (b->values) {
        int i = key_index(b, key);
        const char *s = i < 0 ? NULL : b->values[(size_t)i * (size_t)b->size + (size_t)rank];
        return s ? copy_out(s, out, cap) : 0;
    }
    char *s = NULL;
    int rc = get_string(b, rank, key, wait_s, &s);
    if (rc == 1) {
        rc = copy_out(s, out, cap);
        free_string(s);
    }
    return rc;
}

int boot_pmix_lookup(boot_pmix_t *b, int rank, const char *key, char *out, size_t cap)
{
    return lookup(b, rank, key, -1, out, cap);
}

/* Rank 0 draws the secret once per process and every device it starts
 * puts that one: a rank may still read an earlier device's put, and its
 * secret must be the same (each device's MAC key is its own: auth_init). */
static char drawn[33];
static int drawn_rc = XDEV_ERR_SYSTEM;
static pthread_once_t drawn_once = PTHREAD_ONCE_INIT;

static void draw_secret(void)
{
    unsigned char raw[16];
    if (getrandom(raw, sizeof raw, 0) != (ssize_t)sizeof raw)
        return;
    for (size_t i = 0; i < sizeof raw; i++)
        snprintf(drawn + 2 * i, 3, "%02x", raw[i]);
    drawn_rc = XDEV_OK;
}

/* Rank 0 puts the secret; the others wait for it. A server asked before
 * rank 0 has even started may say "not found" at once: ask again until
 * the peer timeout. */
static int share_secret(boot_pmix_t *b, int wait_ms)
{
    uint64_t deadline = xdev_now_ms() + (uint64_t)wait_ms;
    while (b->me.rank != 0) {
        int rc = lookup(b, 0, "secret", (wait_ms + 999) / 1000, b->secret, sizeof b->secret);
        if (rc != 0)
            return rc == 1 ? XDEV_OK : rc;
        if (xdev_now_ms() >= deadline)
            return XDEV_ERR_INIT;
        nanosleep(&(struct timespec){ 0, 1000000 }, NULL);
    }
    pthread_once(&drawn_once, draw_secret);
    if (drawn_rc != XDEV_OK)
        return drawn_rc;
    memcpy(b->secret, drawn, sizeof b->secret);
    return put("secret", b->secret);
}

const char *boot_pmix_job_id(const boot_pmix_t *b)
{
    return b->job_id;
}

const char *boot_pmix_node(const boot_pmix_t *b)
{
    return b->node;
}

int boot_pmix_open(xdev_config_t *c, boot_pmix_t **out)
{
    /* c->job_secret points into *out from here on: xdev_init copies it. */
    boot_pmix_t *b = calloc(1, sizeof *b);
    if (!b)
        return XDEV_ERR_NOMEM;
    if (PMIx_Init(&b->me, NULL, 0) != PMIX_SUCCESS) {
        free(b);
        return XDEV_ERR_INIT;
    }
    b->fence_s = c->peer_timeout_ms / 1000 + 1;
    pmix_value_t *v = NULL;
    int rc = get_value(b, -1, PMIX_JOB_SIZE, 0, &v) == 1 && v->type == PMIX_UINT32
                 ? XDEV_OK
                 : XDEV_ERR_INIT;
    if (rc == XDEV_OK) {
        c->size = (int)v->data.uint32;
        c->rank = (int)b->me.rank;
    }
    if (v)
        PMIX_VALUE_RELEASE(v);
    v = NULL;
    if (rc == XDEV_OK && get_value(b, (int)b->me.rank, PMIX_HOSTNAME, 0, &v) == 1 &&
        v->type == PMIX_STRING && v->data.string)
        snprintf(b->node, sizeof b->node, "%s", v->data.string);
    if (v)
        PMIX_VALUE_RELEASE(v);
    size_t n = 0;
    for (const char *s = b->me.nspace; *s && n < sizeof b->job_id - 1; s++)
        b->job_id[n++] = strchr("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-", *s)
                             ? *s
                             : '-';
    if (rc == XDEV_OK)
        rc = share_secret(b, c->peer_timeout_ms);
    if (rc != XDEV_OK) {
        boot_pmix_close(b);
        return rc;
    }
    c->job_secret = b->secret;
    *out = b;
    return XDEV_OK;
}

static void free_values(char **values, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free_string(values[i]);
    free(values);
}

int boot_pmix_let_go(boot_pmix_t *b, int size)
{
    if (b->nkeys < 0)
        return XDEV_OK; /* cannot hold them all: stay */
    size_t n = (size_t)b->nkeys * (size_t)size;
    char **values = calloc(n ? n : 1, sizeof *values);
    if (!values)
        return XDEV_ERR_NOMEM;
    int rc = XDEV_OK;
    for (size_t i = 0; i < n && rc == XDEV_OK; i++) {
        int found = get_string(b, (int)(i % (size_t)size), b->keys[i / (size_t)size], -1,
                               &values[i]);
        if (found < 0)
            rc = found;
    }
    if (rc != XDEV_OK) {
        free_values(values, n);
        return rc;
    }
    b->values = values;
    b->size = size;
    PMIx_Finalize(NULL, 0);
    return XDEV_OK;
}

void boot_pmix_close(boot_pmix_t *b)
{
    if (!b)
        return;
    if (b->values)
        free_values(b->values, (size_t)b->nkeys * (size_t)b->size);
    else
        PMIx_Finalize(NULL, 0);
    free(b);
}
