package org.xdev;

import java.util.Objects;

/**
 * The primitive arrays a message may be sent from or received into, with
 * their element size. The ordinals are jni_arrays.c's enum array_kind.
 */
enum ArrayKind {
    BYTE(1), SHORT(2), CHAR(2), INT(4), LONG(8), FLOAT(4), DOUBLE(8);

    final int bytes;

    ArrayKind(int bytes) {
        this.bytes = bytes;
    }

    /**
     * The kind of array, after checking that [offset, offset + count) lies
     * in it. Throws IllegalArgumentException for anything but a primitive
     * array other than boolean[] (whose layout Java leaves open).
     */
    static ArrayKind of(Object array, int offset, int count) {
        ArrayKind k;
        int length;
        if (array instanceof byte[]) { k = BYTE; length = ((byte[]) array).length; }
        else if (array instanceof int[]) { k = INT; length = ((int[]) array).length; }
        else if (array instanceof long[]) { k = LONG; length = ((long[]) array).length; }
        else if (array instanceof double[]) { k = DOUBLE; length = ((double[]) array).length; }
        else if (array instanceof float[]) { k = FLOAT; length = ((float[]) array).length; }
        else if (array instanceof short[]) { k = SHORT; length = ((short[]) array).length; }
        else if (array instanceof char[]) { k = CHAR; length = ((char[]) array).length; }
        else {
            Objects.requireNonNull(array, "array");
            throw new IllegalArgumentException("not a byte, short, char, int, long, float or double array: "
                    + array.getClass().getName());
        }
        Objects.checkFromIndexSize(offset, count, length);
        return k;
    }

    long bytes(int count) {
        return (long) count * bytes;
    }
}
