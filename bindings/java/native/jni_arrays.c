/*
 * jni_arrays.c - Java primitive arrays in and out of native memory.
 *
 * Arrays are copied, never pinned: Get/Set<Type>ArrayRegion is one
 * memcpy with no critical section, so the garbage collector is never held
 * up by a message that takes long to arrive. Elements travel in the
 * host's byte order, as a C program on the same host would send them.
 */
#include "xdev_jni.h"

const int kind_size[K_COUNT] = {
    [K_BYTE] = 1, [K_SHORT] = 2, [K_CHAR] = 2, [K_INT] = 4,
    [K_LONG] = 8, [K_FLOAT] = 4, [K_DOUBLE] = 8,
};

/* Java has checked kind and the bounds: a bad one would throw here. */
void array_to_mem(JNIEnv *env, jarray a, jint kind, jint off, jint n, void *mem)
{
    switch (kind) {
    case K_BYTE: (*env)->GetByteArrayRegion(env, a, off, n, mem); break;
    case K_SHORT: (*env)->GetShortArrayRegion(env, a, off, n, mem); break;
    case K_CHAR: (*env)->GetCharArrayRegion(env, a, off, n, mem); break;
    case K_INT: (*env)->GetIntArrayRegion(env, a, off, n, mem); break;
    case K_LONG: (*env)->GetLongArrayRegion(env, a, off, n, mem); break;
    case K_FLOAT: (*env)->GetFloatArrayRegion(env, a, off, n, mem); break;
    case K_DOUBLE: (*env)->GetDoubleArrayRegion(env, a, off, n, mem); break;
    }
}

void mem_to_array(JNIEnv *env, jarray a, jint kind, jint off, jint n, const void *mem)
{
    switch (kind) {
    case K_BYTE: (*env)->SetByteArrayRegion(env, a, off, n, mem); break;
    case K_SHORT: (*env)->SetShortArrayRegion(env, a, off, n, mem); break;
    case K_CHAR: (*env)->SetCharArrayRegion(env, a, off, n, mem); break;
    case K_INT: (*env)->SetIntArrayRegion(env, a, off, n, mem); break;
    case K_LONG: (*env)->SetLongArrayRegion(env, a, off, n, mem); break;
    case K_FLOAT: (*env)->SetFloatArrayRegion(env, a, off, n, mem); break;
    case K_DOUBLE: (*env)->SetDoubleArrayRegion(env, a, off, n, mem); break;
    }
}

static void jni_copy_in(JNIEnv *env, jclass cls, jarray a, jint kind, jint off, jint n,
                        jlong mem)
{
    (void)cls;
    array_to_mem(env, a, kind, off, n, (void *)(intptr_t)mem);
}

static void jni_copy_out(JNIEnv *env, jclass cls, jarray a, jint kind, jint off, jint n,
                         jlong mem)
{
    (void)cls;
    mem_to_array(env, a, kind, off, n, (const void *)(intptr_t)mem);
}

static const JNINativeMethod methods[] = {
    { "copyIn", "(Ljava/lang/Object;IIIJ)V", (void *)jni_copy_in },
    { "copyOut", "(Ljava/lang/Object;IIIJ)V", (void *)jni_copy_out },
};

const struct natives array_natives = NATIVES(methods);
