/*
 * jni_device.c - the device's natives: start and finish, accessors,
 * wakeup, peer state, stats, and the native memory the binding keeps its
 * requests and array copies in.
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "xdev_jni.h"

/* Bits of init's `set`: which Config fields override the environment.
 * Must match org.xdev.Config. */
enum {
    SET_RANK = 1 << 0,
    SET_SIZE = 1 << 1,
    SET_PEERS = 1 << 2,
    SET_TRANSPORT = 1 << 3,
    SET_SECRET = 1 << 4,
    SET_EAGER = 1 << 5,
    SET_UNEXPECTED = 1 << 6,
    SET_PEER_TIMEOUT = 1 << 7,
    SET_FINALIZE_TIMEOUT = 1 << 8,
    SET_FLAGS = 1 << 9,
    SET_OPTIONS = 1 << 10,
};

/* A String[] as a NULL-terminated char *[], for xdev_config_t's lists. */
struct utf_array {
    jobjectArray array;
    int n;
    const char **utf;
};

/* The UTF-8 copies of a config's strings, released after xdev_init (which
 * copies the config). */
struct config_strings {
    jstring transport, secret;
    const char *transport_utf, *secret_utf;
    struct utf_array peers, options;
};

static const char *utf(JNIEnv *env, jstring s)
{
    return s ? (*env)->GetStringUTFChars(env, s, NULL) : NULL;
}

static void release_array(JNIEnv *env, struct utf_array *a)
{
    for (int i = 0; a->utf && i < a->n; i++) {
        if (!a->utf[i])
            continue;
        jstring s = (*env)->GetObjectArrayElement(env, a->array, i);
        (*env)->ReleaseStringUTFChars(env, s, a->utf[i]);
        (*env)->DeleteLocalRef(env, s);
    }
    free(a->utf);
}

static void release_strings(JNIEnv *env, struct config_strings *cs)
{
    if (cs->transport_utf)
        (*env)->ReleaseStringUTFChars(env, cs->transport, cs->transport_utf);
    if (cs->secret_utf)
        (*env)->ReleaseStringUTFChars(env, cs->secret, cs->secret_utf);
    release_array(env, &cs->peers);
    release_array(env, &cs->options);
}

/* Java has checked that the array has no null element. */
static int utf_array(JNIEnv *env, struct utf_array *a)
{
    a->n = (*env)->GetArrayLength(env, a->array);
    a->utf = calloc((size_t)a->n + 1, sizeof *a->utf);
    if (!a->utf)
        return XDEV_ERR_NOMEM;
    for (int i = 0; i < a->n; i++) {
        jstring s = (*env)->GetObjectArrayElement(env, a->array, i);
        a->utf[i] = utf(env, s);
        (*env)->DeleteLocalRef(env, s);
        if (!a->utf[i])
            return XDEV_ERR_NOMEM;
    }
    return XDEV_OK;
}

/* Returns the device's address, or a negative XDEV_ERR code. */
static jlong jni_init(JNIEnv *env, jclass cls, jboolean from_config, jint set, jint rank, jint size,
                      jobjectArray peers, jstring transport, jstring secret, jlong eager,
                      jlong unexpected, jint peer_timeout, jint finalize_timeout, jint flags,
                      jobjectArray options)
{
    (void)cls;
    xdev_t *dev = NULL;
    if (!from_config) {
        int rc = xdev_init(NULL, &dev);
        return rc == XDEV_OK ? (jlong)(intptr_t)dev : rc;
    }
    xdev_config_t cfg;
    int rc = xdev_config_init(&cfg);
    if (rc != XDEV_OK)
        return rc;
    struct config_strings cs = { .transport = transport, .secret = secret,
                                 .peers = { .array = peers }, .options = { .array = options } };
    if (set & SET_RANK)
        cfg.rank = rank;
    if (set & SET_SIZE)
        cfg.size = size;
    if ((set & SET_TRANSPORT) && !(cfg.transport = cs.transport_utf = utf(env, transport)))
        rc = XDEV_ERR_NOMEM;
    if ((set & SET_SECRET) && !(cfg.job_secret = cs.secret_utf = utf(env, secret)))
        rc = XDEV_ERR_NOMEM;
    if (rc == XDEV_OK && (set & SET_PEERS) && (rc = utf_array(env, &cs.peers)) == XDEV_OK)
        cfg.peers = cs.peers.utf;
    if (rc == XDEV_OK && (set & SET_OPTIONS) && (rc = utf_array(env, &cs.options)) == XDEV_OK)
        cfg.options = cs.options.utf;
    if (set & SET_EAGER)
        cfg.eager_limit = (size_t)eager;
    if (set & SET_UNEXPECTED)
        cfg.unexpected_limit = (size_t)unexpected;
    if (set & SET_PEER_TIMEOUT)
        cfg.peer_timeout_ms = peer_timeout;
    if (set & SET_FINALIZE_TIMEOUT)
        cfg.finalize_timeout_ms = finalize_timeout;
    if (set & SET_FLAGS)
        cfg.flags = (unsigned)flags;
    if (rc == XDEV_OK && (set & SET_PEERS) && cs.peers.n != cfg.size)
        rc = XDEV_ERR_ARG; /* xdev reads size entries */
    if (rc == XDEV_OK)
        rc = xdev_init(&cfg, &dev);
    release_strings(env, &cs);
    return rc == XDEV_OK ? (jlong)(intptr_t)dev : rc;
}

static jint jni_finalize(JNIEnv *env, jclass cls, jlong dev)
{
    (void)env, (void)cls;
    return xdev_finalize(dev_of(dev));
}

static jint jni_rank(JNIEnv *env, jclass cls, jlong dev)
{
    (void)env, (void)cls;
    return xdev_rank(dev_of(dev));
}

static jint jni_size(JNIEnv *env, jclass cls, jlong dev)
{
    (void)env, (void)cls;
    return xdev_size(dev_of(dev));
}

static jstring jni_strerror(JNIEnv *env, jclass cls, jint code)
{
    (void)cls;
    return (*env)->NewStringUTF(env, xdev_strerror(code));
}

static jstring jni_version(JNIEnv *env, jclass cls)
{
    (void)cls;
    return (*env)->NewStringUTF(env, xdev_version());
}

static jint jni_wakeup(JNIEnv *env, jclass cls, jlong dev)
{
    (void)env, (void)cls;
    return xdev_wakeup(dev_of(dev));
}

static jint jni_peer_state(JNIEnv *env, jclass cls, jlong dev, jint rank)
{
    (void)env, (void)cls;
    return xdev_peer_state(dev_of(dev), rank);
}

/* counters: per transport i, counters[4i..4i+3] = msgs and bytes sent,
 * msgs and bytes received; then from 4 * names.length the totals: self
 * messages, rendezvous sent and received, unexpected bytes and peak, dead
 * peers. Returns the number of transports. Layout read by org.xdev.Stats. */
static jint jni_stats(JNIEnv *env, jclass cls, jlong dev, jlongArray counters, jobjectArray names)
{
    (void)cls;
    xdev_stats_t s;
    int rc = xdev_stats(dev_of(dev), &s);
    if (rc != XDEV_OK)
        return rc;
    jsize slots = (*env)->GetArrayLength(env, names);
    if (slots < s.ntransports || (*env)->GetArrayLength(env, counters) < 4 * slots + 6)
        return XDEV_ERR_ARG;
    for (int i = 0; i < s.ntransports; i++) {
        const struct xdev_stats_transport *t = &s.transport[i];
        char name[sizeof t->name + 1];
        memcpy(name, t->name, sizeof t->name);
        name[sizeof t->name] = '\0';
        jstring js = (*env)->NewStringUTF(env, name);
        if (!js)
            return XDEV_ERR_NOMEM;
        (*env)->SetObjectArrayElement(env, names, i, js);
        (*env)->DeleteLocalRef(env, js);
        jlong v[4] = { (jlong)t->msgs_sent, (jlong)t->bytes_sent, (jlong)t->msgs_received,
                       (jlong)t->bytes_received };
        (*env)->SetLongArrayRegion(env, counters, 4 * i, 4, v);
    }
    jlong totals[6] = { (jlong)s.self_msgs, (jlong)s.rendezvous_sent,
                        (jlong)s.rendezvous_received, (jlong)s.unexpected_bytes,
                        (jlong)s.unexpected_peak, s.peers_dead };
    (*env)->SetLongArrayRegion(env, counters, 4 * slots, 6, totals);
    return s.ntransports;
}

/* The flags xdev_init takes from the environment: Device must know
 * whether it has XDEV_FLAG_WILDCARD_FAILS, and a device does not tell. */
static jint jni_env_flags(JNIEnv *env, jclass cls)
{
    (void)env, (void)cls;
    xdev_config_t cfg;
    return xdev_config_init(&cfg) == XDEV_OK ? (jint)cfg.flags : 0;
}

/* The ranks seen dead so far, or an error. */
static jint jni_peers_dead(JNIEnv *env, jclass cls, jlong dev)
{
    (void)env, (void)cls;
    xdev_stats_t s;
    int rc = xdev_stats(dev_of(dev), &s);
    return rc == XDEV_OK ? s.peers_dead : rc;
}

/* For a blocking wildcard receive or probe that woke and that Device will
 * call again: XDEV_ERR_PEER_PENDING, with the status as called, if a peer
 * died since the `dead` counted as it began (the C call would have failed
 * had it waited on), else XDEV_ERR_WOKEN. */
static jint jni_died_since(JNIEnv *env, jclass cls, jlong dev, jint dead, jint tag, jint ctx,
                           jlong status)
{
    int now = jni_peers_dead(env, cls, dev);
    if (now < 0 || now == dead)
        return XDEV_ERR_WOKEN;
    *status_of(status) = (xdev_status_t){ .source = XDEV_ANY_SOURCE, .tag = tag, .ctx = ctx,
                                          .error = XDEV_ERR_PEER_PENDING };
    return XDEV_ERR_PEER_PENDING;
}

static jint jni_request_size(JNIEnv *env, jclass cls)
{
    (void)env, (void)cls;
    return (jint)sizeof(xdev_request_t);
}

/* xdev_status_t as org.xdev.Status.read reads it. */
_Static_assert(offsetof(xdev_status_t, source) == 0 && offsetof(xdev_status_t, tag) == 4 &&
               offsetof(xdev_status_t, ctx) == 8 && offsetof(xdev_status_t, error) == 12 &&
               offsetof(xdev_status_t, count) == 16 && offsetof(xdev_status_t, msg_len) == 24 &&
               sizeof(xdev_status_t) == 32, "the status layout Status.read expects");

static jint jni_status_size(JNIEnv *env, jclass cls)
{
    (void)env, (void)cls;
    return (jint)sizeof(xdev_status_t);
}

/* Page-aligned native memory (rendezvous transports register whole
 * pages), or 0. Request slabs are zeroed, so that one starts out holding
 * no byte copy of an active request; message blocks are not, since a
 * block only ever carries the bytes copied in or received, and zeroing
 * a large one cost a 100-byte receive into a 64 MiB array 160 ms. */
static jlong jni_allocate(JNIEnv *env, jclass cls, jlong bytes, jboolean zeroed)
{
    (void)env, (void)cls;
    void *p;
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    if (bytes <= 0 || posix_memalign(&p, page, (size_t)bytes) != 0)
        return 0;
    if (zeroed)
        memset(p, 0, (size_t)bytes);
    return (jlong)(intptr_t)p;
}

static void jni_free(JNIEnv *env, jclass cls, jlong addr)
{
    (void)env, (void)cls;
    free((void *)(intptr_t)addr);
}

/* A direct ByteBuffer over native memory the binding owns (and frees). */
static jobject jni_view(JNIEnv *env, jclass cls, jlong addr, jlong bytes)
{
    (void)cls;
    return (*env)->NewDirectByteBuffer(env, (void *)(intptr_t)addr, bytes);
}

static jlong jni_address(JNIEnv *env, jclass cls, jobject buf)
{
    (void)cls;
    return (jlong)(intptr_t)(*env)->GetDirectBufferAddress(env, buf);
}

static const JNINativeMethod methods[] = {
    { "init",
      "(ZIII[Ljava/lang/String;Ljava/lang/String;Ljava/lang/String;JJIII[Ljava/lang/String;)J",
      (void *)jni_init },
    { "finalizeDevice", "(J)I", (void *)jni_finalize },
    { "rank", "(J)I", (void *)jni_rank },
    { "size", "(J)I", (void *)jni_size },
    { "strerror", "(I)Ljava/lang/String;", (void *)jni_strerror },
    { "version", "()Ljava/lang/String;", (void *)jni_version },
    { "wakeup", "(J)I", (void *)jni_wakeup },
    { "peerState", "(JI)I", (void *)jni_peer_state },
    { "stats", "(J[J[Ljava/lang/String;)I", (void *)jni_stats },
    { "envFlags", "()I", (void *)jni_env_flags },
    { "peersDead", "(J)I", (void *)jni_peers_dead },
    { "diedSince", "(JIIIJ)I", (void *)jni_died_since },
    { "requestSize", "()I", (void *)jni_request_size },
    { "statusSize", "()I", (void *)jni_status_size },
    { "allocate", "(JZ)J", (void *)jni_allocate },
    { "free", "(J)V", (void *)jni_free },
    { "view", "(JJ)Ljava/nio/ByteBuffer;", (void *)jni_view },
    { "address", "(Ljava/nio/ByteBuffer;)J", (void *)jni_address },
};

const struct natives device_natives = NATIVES(methods);
