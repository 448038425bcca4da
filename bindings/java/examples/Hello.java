import org.xdev.Device;

/**
 * Hello.java - pass a token around the ring of ranks (examples/hello.c in
 * Java). From the top of the source tree, after building build-java:
 *
 *   build-java/src/tools/xdevrun -n 4 java -Djava.library.path=build-java/bindings/java \
 *       -cp build-java/bindings/java/xdev.jar bindings/java/examples/Hello.java
 */
public final class Hello {
    public static void main(String[] args) {
        try (Device dev = Device.init()) {
            int rank = dev.rank(), size = dev.size();
            int next = (rank + 1) % size, prev = (rank + size - 1) % size;
            int tag = 1, ctx = 0;
            int[] token = { 0 };

            if (rank == 0)
                dev.send(token, 0, 1, next, tag, ctx);
            dev.recv(token, 0, 1, prev, tag, ctx);
            if (rank != 0) {
                token[0]++;
                dev.send(token, 0, 1, next, tag, ctx);
            }
            if (rank == 0)
                System.out.println("token went around " + size + " ranks and came back as " + token[0]);
        }
    }
}
