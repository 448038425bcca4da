package org.xdev.bench;

/**
 * xdev-bench's method in Java (src/tools/bench_method.c): the same options,
 * tests, sizes, iteration counts and output formats, so that a script can
 * join this benchmark's results with xdev-bench's on (test, size).
 */
final class Method {
    enum Test {
        LATENCY("latency", "latency(us)", "us", 2, false, 0),
        BW("bw", "bandwidth(MB/s)", "MB/s", 2, true, 0),
        BIBW("bibw", "bandwidth(MB/s)", "MB/s", 2, true, 0),
        RATE("rate", "rate(msg/s)", "msg/s", 0, true, RATE_MAX_SIZE);

        final String name, column, unit;
        final int decimals;
        final boolean windowed;
        final long maxSize; /* 0: no cap */

        Test(String name, String column, String unit, int decimals, boolean windowed, long maxSize) {
            this.name = name;
            this.column = column;
            this.unit = unit;
            this.decimals = decimals;
            this.windowed = windowed;
            this.maxSize = maxSize;
        }
    }

    enum Format { TABLE, CSV, JSON }

    static final long LARGE_MESSAGE = 8192;
    static final long RATE_MAX_SIZE = 8192;
    static final long MAX_SIZE_LIMIT = 1L << 30;

    /* The options; defaults as xdev-bench's. */
    long minSize = 1, maxSize = 4L << 20;
    long iters = 0;    /* 0: OSU default for the test and size */
    long warmup = -1;  /* -1: OSU default */
    int window = 64;
    int ctx = 0;
    boolean[] tests = { true, true, true, true };
    Format format = Format.TABLE;
    boolean arrays;    /* byte[] rather than direct ByteBuffers */
    long jitWarmup = 20000;

    static final String USAGE =
        "Usage: xdevrun -n 2 java -cp xdev.jar:xdev-bench.jar org.xdev.bench.Bench [options]\n"
        + "OSU-style point-to-point benchmarks between the two ranks of a job, through\n"
        + "the Java binding (OMB-J style); the tests, options and output are xdev-bench's.\n"
        + "\n"
        + "Tests:\n"
        + "  latency  ping-pong with Device.send/recv; half the round trip, in us\n"
        + "  bw       rank 0 posts a window of isend and waits for them all, rank 1\n"
        + "           the matching irecv, then acks the window with a 4-byte\n"
        + "           message; MB/s (1e6 bytes/s)\n"
        + "  bibw     both ranks post a window of receives and of sends at once;\n"
        + "           MB/s of both directions together\n"
        + "  rate     the bw pattern in messages/s; sizes up to 8192 bytes only\n"
        + "\n"
        + "Options:\n"
        + "  --tests LIST  comma-separated tests to run (default latency,bw,bibw,rate)\n"
        + "  --min SIZE    smallest size (default 1); 0 adds a zero-byte size first\n"
        + "  --max SIZE    largest size (default 4M, at most 1G)\n"
        + "                sizes are the powers of two from --min to --max; SIZE may\n"
        + "                end in K, M or G (powers of 1024)\n"
        + "  --iters N     timed iterations per size (windows for bw, bibw, rate);\n"
        + "                default latency 10000, windows 1000 up to 8192 bytes,\n"
        + "                latency 1000, windows 20 above\n"
        + "  --warmup N    untimed iterations before them; default latency 1000,\n"
        + "                windows 100 up to 8192 bytes, latency 100, windows 2 above\n"
        + "  --window W    messages per window (default 64)\n"
        + "  --ctx C       xdev context to use (default 0)\n"
        + "  --buffer KIND direct (direct ByteBuffers, used in place; the default) or\n"
        + "                array (byte[], copied through the binding's native memory)\n"
        + "  --jit-warmup N  before any timing, run each test N iterations (latency;\n"
        + "                N/window windows) at min(first size, 1K) so that the JIT\n"
        + "                has compiled the loops (default 20000; 0: none)\n"
        + "  --csv         CSV: the header line test,size,iters,value,unit, then one\n"
        + "                line per test and size (units: us, MB/s, msg/s)\n"
        + "  --json        JSON Lines: one object per test and size\n"
        + "  -h, --help    this text\n"
        + "\n"
        + "The transport named in the output is $XDEV_TRANSPORT, or \"auto\" if unset.\n"
        + "Rank 0 prints; errors go to stderr and make the program exit non-zero.\n";

    /** Parses args; prints usage and exits on -h or a bad argument. */
    static Method parse(String[] args) {
        Method m = new Method();
        for (int i = 0; i < args.length; i++) {
            String a = args[i];
            if (a.equals("-h") || a.equals("--help")) {
                System.out.print(USAGE);
                System.exit(0);
            }
            if (a.equals("--csv")) { m.format = Format.CSV; continue; }
            if (a.equals("--json")) { m.format = Format.JSON; continue; }
            if (i + 1 >= args.length || !a.startsWith("--"))
                fail("bad option '" + a + "' (try --help)");
            String v = args[++i];
            switch (a) {
            case "--min": m.minSize = size(a, v); break;
            case "--max": m.maxSize = size(a, v); break;
            case "--iters": m.iters = number(a, v, 1, 1_000_000_000); break;
            case "--warmup": m.warmup = number(a, v, 0, 1_000_000_000); break;
            case "--window": m.window = (int) number(a, v, 1, 1 << 20); break;
            case "--ctx": m.ctx = (int) number(a, v, 0, Integer.MAX_VALUE); break;
            case "--jit-warmup": m.jitWarmup = number(a, v, 0, 1_000_000_000); break;
            case "--tests": m.tests = tests(v); break;
            case "--buffer":
                if (!v.equals("direct") && !v.equals("array"))
                    fail("bad value for --buffer: '" + v + "' (try --help)");
                m.arrays = v.equals("array");
                break;
            default: fail("bad option '" + a + "' (try --help)");
            }
        }
        if (m.minSize > m.maxSize)
            fail("--min is larger than --max");
        return m;
    }

    static void fail(String why) {
        System.err.println("xdev-java-bench: " + why);
        System.exit(2);
    }

    private static long number(String opt, String v, long lo, long hi) {
        try {
            long n = Long.parseLong(v);
            if (n >= lo && n <= hi)
                return n;
        } catch (NumberFormatException e) {
            /* reported below */
        }
        fail("bad value for " + opt + ": '" + v + "' (try --help)");
        return 0;
    }

    private static long size(String opt, String v) {
        int shift = 0;
        String digits = v;
        if (!v.isEmpty()) {
            int at = "KMG".indexOf(Character.toUpperCase(v.charAt(v.length() - 1)));
            if (at >= 0) {
                shift = 10 * (at + 1);
                digits = v.substring(0, v.length() - 1);
            }
        }
        long n = number(opt, digits, 0, MAX_SIZE_LIMIT);
        if (n << shift > MAX_SIZE_LIMIT)
            fail("bad value for " + opt + ": '" + v + "' (try --help)");
        return n << shift;
    }

    private static boolean[] tests(String list) {
        boolean[] on = new boolean[Test.values().length];
        for (String name : list.split(",", -1)) {
            boolean known = false;
            for (Test t : Test.values())
                if (t.name.equals(name))
                    known = on[t.ordinal()] = true;
            if (!known)
                fail("bad value for --tests: '" + list + "' (try --help)");
        }
        return on;
    }

    /* ---- sizes and iterations ---- */

    long firstSize() {
        if (minSize == 0)
            return 0;
        long s = 1;
        while (s < minSize)
            s *= 2;
        return s;
    }

    static long nextSize(long s) {
        return s == 0 ? 1 : 2 * s;
    }

    boolean runsAt(Test t, long size) {
        return size <= maxSize && !(t.maxSize != 0 && size > t.maxSize);
    }

    long iterations(Test t, long size) {
        boolean large = size > LARGE_MESSAGE;
        long n = t.windowed ? (large ? 20 : 1000) : (large ? 1000 : 10000);
        return iters > 0 ? iters : n;
    }

    long warmups(Test t, long size) {
        boolean large = size > LARGE_MESSAGE;
        long n = t.windowed ? (large ? 2 : 100) : (large ? 100 : 1000);
        return warmup >= 0 ? warmup : n;
    }

    /** The value a test reports from the seconds its timed iterations took. */
    double value(Test t, double secs, long size, long n) {
        switch (t) {
        case LATENCY: return secs * 1e6 / (2.0 * n);
        case BW: return (double) size * window * n / secs / 1e6;
        case BIBW: return 2.0 * size * window * n / secs / 1e6;
        default: return (double) window * n / secs;
        }
    }

    /* ---- output ----
     * Formatted by hand: java.util.Formatter, run for the first time between
     * two sizes, would have the JIT compile it during the next size's
     * timed loop, on the one CPU xdevrun binds a rank to. */

    void printHeader() {
        if (format == Format.CSV)
            System.out.println("test,size,iters,value,unit");
    }

    void printTitle(Test t, String system, String setup) {
        if (format != Format.TABLE)
            return;
        String title = "# " + system + " " + t.name + " (" + setup;
        if (t.windowed)
            title += ", window " + window;
        System.out.println(title + ")");
        System.out.println(padRight("size", 10) + " " + padLeft(t.column, 18));
    }

    void printRow(Test t, long size, long n, double v, String transport) {
        System.out.println(row(t, size, n, v, transport));
        System.out.flush();
    }

    String row(Test t, long size, long n, double v, String transport) {
        switch (format) {
        case TABLE:
            return padRight(Long.toString(size), 10) + " " + padLeft(fixed(v, t.decimals), 18);
        case CSV:
            return t.name + "," + size + "," + n + "," + fixed(v, 3) + "," + t.unit;
        default:
            return "{\"test\":\"" + t.name + "\",\"size\":" + size + ",\"iters\":" + n + ",\"value\":"
                    + fixed(v, 3) + ",\"unit\":\"" + t.unit + "\",\"transport\":\"" + transport + "\"}";
        }
    }

    void printEnd() {
        if (format == Format.TABLE)
            System.out.println();
    }

    /** v with the given decimals, rounded half up, as printf's %.Nf. */
    static String fixed(double v, int decimals) {
        long scale = 1;
        for (int i = 0; i < decimals; i++)
            scale *= 10;
        long units = Math.round(v * scale);
        String frac = Long.toString(Math.abs(units % scale) + scale).substring(1);
        String whole = Long.toString(units / scale);
        if (units < 0 && units / scale == 0)
            whole = "-0";
        return decimals == 0 ? whole : whole + "." + frac;
    }

    private static String padLeft(String s, int width) {
        return " ".repeat(Math.max(0, width - s.length())) + s;
    }

    private static String padRight(String s, int width) {
        return s + " ".repeat(Math.max(0, width - s.length()));
    }
}
