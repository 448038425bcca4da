/*
 * jni_transfer.c - sends, receives and requests.
 *
 * The blocking calls go straight to xdev_send and xdev_recv, arrays
 * through the caller's scratch memory in the same native call, so that
 * a small message costs one JNI transition. The request calls take the
 * address of request storage Java allocated in native memory (it never
 * moves); post stores the Java-side slot and its generation in its
 * `user` field, for xdev_peek to name the Request object again.
 */
#include <stdlib.h>
#include <string.h>

#include "xdev_jni.h"

enum post_op { OP_ISEND, OP_ISSEND, OP_IRECV, OP_IMRECV }; /* as org.xdev.Device */

static jint jni_send(JNIEnv *env, jclass cls, jlong dev, jobject buf, jlong off, jlong len,
                     jint dst, jint tag, jint ctx, jboolean sync)
{
    (void)cls;
    void *mem = mem_of(env, buf, off);
    return sync ? xdev_ssend(dev_of(dev), mem, (size_t)len, dst, tag, ctx)
                : xdev_send(dev_of(dev), mem, (size_t)len, dst, tag, ctx);
}

/* The status (zeroed first, for an error that leaves it alone) goes to
 * the calling thread's status block. */
static jint jni_recv(JNIEnv *env, jclass cls, jlong dev, jobject buf, jlong off, jlong len,
                     jint src, jint tag, jint ctx, jlong status)
{
    (void)cls;
    xdev_status_t *st = status_of(status);
    memset(st, 0, sizeof *st);
    return xdev_recv(dev_of(dev), mem_of(env, buf, off), (size_t)len, src, tag, ctx, st);
}

static jint jni_send_array(JNIEnv *env, jclass cls, jlong dev, jarray a, jint kind, jint off,
                           jint n, jlong scratch, jint dst, jint tag, jint ctx, jboolean sync)
{
    array_to_mem(env, a, kind, off, n, (void *)(intptr_t)scratch);
    return jni_send(env, cls, dev, NULL, scratch, (jlong)n * kind_size[kind], dst, tag, ctx, sync);
}

/* Copies out what arrived: whole elements only (a truncated receive
 * fills the array). */
static jint jni_recv_array(JNIEnv *env, jclass cls, jlong dev, jarray a, jint kind, jint off,
                           jint n, jlong scratch, jint src, jint tag, jint ctx, jlong status)
{
    int size = kind_size[kind];
    int rc = jni_recv(env, cls, dev, NULL, scratch, (jlong)n * size, src, tag, ctx, status);
    if (rc == XDEV_OK || rc == XDEV_ERR_TRUNCATE)
        mem_to_array(env, a, kind, off, (jint)(status_of(status)->count / size),
                     (void *)(intptr_t)scratch);
    return rc;
}

/* Posts into the request storage at req, naming the Java Request in the
 * user field (its slot and the slot's generation, RequestTable.add). For
 * OP_IMRECV, msg holds the claimed message's handle (see jni_probe.c),
 * written back zeroed once received. */
static jint jni_post(JNIEnv *env, jclass cls, jlong dev, jint op, jobject buf, jlong off,
                     jlong len, jint peer, jint tag, jint ctx, jlong req, jlong user,
                     jlongArray msg)
{
    (void)cls;
    xdev_request_t *r = req_of(req);
    void *mem = mem_of(env, buf, off);
    r->user = (void *)(intptr_t)user;
    switch (op) {
    case OP_ISEND: return xdev_isend(dev_of(dev), mem, (size_t)len, peer, tag, ctx, r);
    case OP_ISSEND: return xdev_issend(dev_of(dev), mem, (size_t)len, peer, tag, ctx, r);
    case OP_IRECV: return xdev_irecv(dev_of(dev), mem, (size_t)len, peer, tag, ctx, r);
    case OP_IMRECV: {
        xdev_message_t m;
        message_from_java(env, msg, &m);
        int rc = xdev_imrecv(dev_of(dev), mem, (size_t)len, &m, r);
        message_to_java(env, msg, &m);
        return rc;
    }
    }
    return XDEV_ERR_ARG;
}

/* The status goes to the request's status slot, and only when this call
 * reaped it: a thread that reaped it concurrently is writing it. */
static jint jni_wait(JNIEnv *env, jclass cls, jlong req)
{
    (void)env, (void)cls;
    xdev_status_t st;
    int rc = xdev_wait(req_of(req), &st);
    if (rc == XDEV_OK)
        *request_status(req_of(req)) = st;
    return rc;
}

/* 1 if reaped (status in its slot), 0 if not complete, or an error. */
static jint jni_test(JNIEnv *env, jclass cls, jlong req)
{
    (void)env, (void)cls;
    xdev_status_t st;
    int done = 0;
    int rc = xdev_test(req_of(req), &done, &st);
    if (rc != XDEV_OK)
        return rc;
    if (done)
        *request_status(req_of(req)) = st;
    return done;
}

static jint jni_cancel(JNIEnv *env, jclass cls, jlong req)
{
    (void)env, (void)cls;
    return xdev_cancel(req_of(req));
}

/* xdev_testsome or xdev_waitsome over reqs (0 entries skipped). Returns
 * the number reaped with their indices in index and each one's status in
 * its slot, or an error. */
static jint jni_some(JNIEnv *env, jclass cls, jboolean block, jlongArray reqs, jintArray index)
{
    (void)cls;
    jsize n = (*env)->GetArrayLength(env, reqs);
    jlong *addrs = malloc((size_t)n * sizeof *addrs + 1);
    xdev_request_t **rp = malloc((size_t)n * sizeof *rp + 1);
    int *which = malloc((size_t)n * sizeof *which + 1);
    xdev_status_t *st = malloc((size_t)n * sizeof *st + 1);
    int count = 0;
    int rc = addrs && rp && which && st ? XDEV_OK : XDEV_ERR_NOMEM;
    if (rc == XDEV_OK) {
        (*env)->GetLongArrayRegion(env, reqs, 0, n, addrs);
        for (jsize i = 0; i < n; i++)
            rp[i] = req_of(addrs[i]);
        rc = block ? xdev_waitsome(n, rp, &count, which, st)
                   : xdev_testsome(n, rp, &count, which, st);
    }
    if (rc == XDEV_OK) {
        for (int k = 0; k < count; k++)
            *request_status(rp[which[k]]) = st[k];
        (*env)->SetIntArrayRegion(env, index, 0, count, (const jint *)which);
    }
    free(addrs);
    free(rp);
    free(which);
    free(st);
    return rc == XDEV_OK ? count : rc;
}

static const JNINativeMethod methods[] = {
    { "send", "(JLjava/nio/ByteBuffer;JJIIIZ)I", (void *)jni_send },
    { "recv", "(JLjava/nio/ByteBuffer;JJIIIJ)I", (void *)jni_recv },
    { "sendArray", "(JLjava/lang/Object;IIIJIIIZ)I", (void *)jni_send_array },
    { "recvArray", "(JLjava/lang/Object;IIIJIIIJ)I", (void *)jni_recv_array },
    { "post", "(JILjava/nio/ByteBuffer;JJIIIJJ[J)I", (void *)jni_post },
    { "await", "(J)I", (void *)jni_wait },
    { "test", "(J)I", (void *)jni_test },
    { "cancel", "(J)I", (void *)jni_cancel },
    { "some", "(Z[J[I)I", (void *)jni_some },
};

const struct natives transfer_natives = NATIVES(methods);
