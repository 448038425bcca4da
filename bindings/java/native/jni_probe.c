/*
 * jni_probe.c - probes, the matched probe and its receives, and peek.
 *
 * A matched-probe handle (xdev_message_t) lives in Java as a long[] of its
 * words; xdev accepts a copy of a handle as long as it was not received,
 * so it is rebuilt on the stack for each call and written back after
 * (xdev zeroes a received one). Its nonblocking receive is a post
 * (jni_transfer.c).
 */
#include <string.h>

#include "xdev_jni.h"

void message_from_java(JNIEnv *env, jlongArray words, xdev_message_t *m)
{
    (*env)->GetLongArrayRegion(env, words, 0, MSG_WORDS, (jlong *)m);
}

void message_to_java(JNIEnv *env, jlongArray words, const xdev_message_t *m)
{
    (*env)->SetLongArrayRegion(env, words, 0, MSG_WORDS, (const jlong *)m);
}

/* Statuses go to the calling thread's status block, zeroed first. */

/* 1 (and the status) if a message matches, 0 if none, or an error. */
static jint jni_iprobe(JNIEnv *env, jclass cls, jlong dev, jint src, jint tag, jint ctx,
                       jlong status)
{
    (void)env, (void)cls;
    xdev_status_t *st = status_of(status);
    memset(st, 0, sizeof *st);
    int found = 0;
    int rc = xdev_iprobe(dev_of(dev), src, tag, ctx, &found, st);
    return rc == XDEV_OK ? found : rc;
}

/* The status is the message's when one was found, also with XDEV_ERR_PEER
 * for a dead sender's cut; xdev's own when a named source died with
 * nothing left (tag ANY_TAG). */
static jint jni_probe(JNIEnv *env, jclass cls, jlong dev, jint src, jint tag, jint ctx,
                      jlong status)
{
    (void)env, (void)cls;
    xdev_status_t *st = status_of(status);
    memset(st, 0, sizeof *st);
    return xdev_probe(dev_of(dev), src, tag, ctx, st);
}

/* improbe (block false) or mprobe: 1 if a message was claimed (its handle
 * in words), 0 if none matched (improbe only), or an error: XDEV_ERR_PEER
 * with the status of a dead sender's cut, consumed instead. */
static jint jni_mprobe(JNIEnv *env, jclass cls, jlong dev, jint src, jint tag, jint ctx,
                       jboolean block, jlongArray words, jlong status)
{
    (void)cls;
    xdev_status_t *st = status_of(status);
    memset(st, 0, sizeof *st);
    xdev_message_t m;
    int found = 1;
    int rc = block ? xdev_mprobe(dev_of(dev), src, tag, ctx, &m, st)
                   : xdev_improbe(dev_of(dev), src, tag, ctx, &found, &m, st);
    if (rc == XDEV_OK && found)
        message_to_java(env, words, &m);
    return rc == XDEV_OK ? found : rc;
}

static jint jni_mrecv(JNIEnv *env, jclass cls, jlong dev, jlongArray words, jobject buf,
                      jlong off, jlong len, jlong status)
{
    (void)cls;
    xdev_status_t *st = status_of(status);
    memset(st, 0, sizeof *st);
    xdev_message_t m;
    message_from_java(env, words, &m);
    int rc = xdev_mrecv(dev_of(dev), mem_of(env, buf, off), (size_t)len, &m, st);
    message_to_java(env, words, &m);
    return rc;
}

/* The user field (slot and generation) of the completion handed out, or
 * an error (XDEV_ERR_TIMEOUT, XDEV_ERR_WOKEN). */
static jlong jni_peek(JNIEnv *env, jclass cls, jlong dev, jint timeout_ms)
{
    (void)env, (void)cls;
    xdev_request_t *r;
    int rc = xdev_peek_timed(dev_of(dev), timeout_ms, &r);
    return rc == XDEV_OK ? (jlong)(intptr_t)r->user : rc;
}

static jint jni_message_words(JNIEnv *env, jclass cls)
{
    (void)env, (void)cls;
    return MSG_WORDS;
}

static const JNINativeMethod methods[] = {
    { "iprobe", "(JIIIJ)I", (void *)jni_iprobe },
    { "probe", "(JIIIJ)I", (void *)jni_probe },
    { "mprobe", "(JIIIZ[JJ)I", (void *)jni_mprobe },
    { "mrecv", "(J[JLjava/nio/ByteBuffer;JJJ)I", (void *)jni_mrecv },
    { "peek", "(JI)J", (void *)jni_peek },
    { "messageWords", "()I", (void *)jni_message_words },
};

const struct natives probe_natives = NATIVES(methods);
