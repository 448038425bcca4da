/*
 * jni_load.c - JNI_OnLoad: register every native of org.xdev.Native.
 */
#include "xdev_jni.h"

JNIEXPORT jint JNICALL JNI_OnLoad(JavaVM *vm, void *reserved)
{
    (void)reserved;
    JNIEnv *env;
    if ((*vm)->GetEnv(vm, (void **)&env, JNI_VERSION_10) != JNI_OK)
        return JNI_ERR;
    jclass native = (*env)->FindClass(env, "org/xdev/Native");
    if (!native)
        return JNI_ERR;
    const struct natives *all[] = { &device_natives, &transfer_natives, &probe_natives,
                                    &array_natives };
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        if ((*env)->RegisterNatives(env, native, all[i]->methods, all[i]->count) != 0)
            return JNI_ERR;
    (*env)->DeleteLocalRef(env, native);
    return JNI_VERSION_10;
}
