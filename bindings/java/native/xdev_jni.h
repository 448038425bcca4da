/*
 * xdev_jni.h - what the native half of org.xdev shares between its files.
 *
 * The natives are static methods of org.xdev.Native, registered by
 * JNI_OnLoad (jni_load.c) so that a name or signature that does not match
 * fails when the library loads, not at a first call. They only turn Java
 * arguments into xdev calls and back: every decision about lifetimes
 * (which request storage may be posted, when a buffer may go) is made in
 * Java. Errors come back as xdev's negative codes; nothing here throws.
 *
 * Buffers: a (ByteBuffer, offset) pair names memory. A direct ByteBuffer
 * means its address plus offset; a null buffer means offset is itself a
 * native address (the binding's pooled memory for arrays). No call holds
 * a JNI critical section or a Java monitor: arrays are copied with
 * Get/Set<Type>ArrayRegion into native memory before or after xdev sees
 * them.
 */
#ifndef XDEV_JNI_H
#define XDEV_JNI_H

#include <jni.h>
#include <stdint.h>

#include "xdev.h"

/* The element kinds of org.xdev.ArrayKind, by ordinal. */
enum array_kind { K_BYTE, K_SHORT, K_CHAR, K_INT, K_LONG, K_FLOAT, K_DOUBLE, K_COUNT };
extern const int kind_size[K_COUNT];

static inline xdev_t *dev_of(jlong h) { return (xdev_t *)(intptr_t)h; }
static inline xdev_request_t *req_of(jlong h) { return (xdev_request_t *)(intptr_t)h; }

/*
 * Statuses are written to native memory that Java reads through a direct
 * ByteBuffer (org.xdev.Status.read), not into Java objects field by field:
 * a blocking call's to its thread's status block, a request's to the
 * slot after its xdev_request_t in the binding's request slabs.
 */
static inline xdev_status_t *status_of(jlong h) { return (xdev_status_t *)(intptr_t)h; }
static inline xdev_status_t *request_status(xdev_request_t *r)
{
    return (xdev_status_t *)(void *)(r + 1);
}
_Static_assert(sizeof(xdev_request_t) % 8 == 0, "a request's status slot stays aligned");

/* The memory (buf, off) names; see above. */
static inline void *mem_of(JNIEnv *env, jobject buf, jlong off)
{
    if (!buf)
        return (void *)(intptr_t)off;
    return (char *)(*env)->GetDirectBufferAddress(env, buf) + off;
}

/* A matched-probe handle to and from its Java long[] (jni_probe.c). */
#define MSG_WORDS ((jsize)(sizeof(xdev_message_t) / sizeof(jlong)))
_Static_assert(sizeof(xdev_message_t) % sizeof(jlong) == 0, "a handle is whole longs");
void message_from_java(JNIEnv *env, jlongArray words, xdev_message_t *m);
void message_to_java(JNIEnv *env, jlongArray words, const xdev_message_t *m);

/* Copy n elements of a primitive array, from element off, to or from mem. */
void array_to_mem(JNIEnv *env, jarray a, jint kind, jint off, jint n, void *mem);
void mem_to_array(JNIEnv *env, jarray a, jint kind, jint off, jint n, const void *mem);

/* Each file's natives, registered by JNI_OnLoad. */
struct natives {
    const JNINativeMethod *methods;
    int count;
};
#define NATIVES(table) { table, (int)(sizeof table / sizeof table[0]) }
extern const struct natives device_natives, transfer_natives, probe_natives, array_natives;

#endif
