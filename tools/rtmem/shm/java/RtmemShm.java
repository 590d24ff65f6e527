/*
 * `rtmem shm --java`: the workloads of tools/rtmem/shm/phase.h through
 * FileChannel.map's MappedByteBuffer, run by tools/rtmem/shm/java.c in a
 * JVM of its own.
 *
 * usage: java RtmemShm PATH BYTES PAGE WRITES ZEROINGS ZERO_BUDGET_NS SEED [ZERO_METHOD]
 *
 *   PATH          the file to create (it must not exist), map and remove
 *   BYTES         the region, 1 .. Integer.MAX_VALUE (one MappedByteBuffer)
 *   PAGE          the page size: one byte written per page at first touch
 *   WRITES        random one-byte writes
 *   ZEROINGS      full zeroings; 0: as many as fit in ZERO_BUDGET_NS, at
 *                 least 3
 *   SEED          splitmix64's seed
 *   ZERO_METHOD   the fill (ZERO_METHODS below); "longs" if absent
 *
 * Output, on stdout, one line each, in this order (java.c parses it and
 * refuses anything else):
 *
 *   rtmem-shm-java 2                    the protocol and its version
 *   runtime <java.vm.name> <java.version>
 *   zero-method <name>
 *   rng ops=<n> ns=<t> max=<t> sink=<0|1>
 *                                       the generator alone, the same loop,
 *                                       RNG_RUNS runs: the fastest's time,
 *                                       the slowest's
 *   checksum <u64>                      of the region after the writes
 *   zeroed <0|1>                        1: every byte 0 after the zeroings
 *   phase <name> ops=<n> ns=<t> minflt=<n> majflt=<n> jit-ms=<n> gcs=<n>
 *                                       for touch writes zeroings sync
 *                                       teardown; writes' ns is the loop's
 *                                       whole time, the generator included
 *   end
 *
 * An error: a message on stderr and exit status 1.
 *
 * The JIT: every timed loop is a static method, called here first on a
 * small direct buffer (the same class, DirectByteBuffer, as a mapping's)
 * until HotSpot's C2 has compiled it, and one whole cycle (create, map,
 * touch, write, zero, force, unmap, delete) runs on a small file in
 * java.io.tmpdir so that the classes the cycle loads are loaded before
 * anything is timed. What the JIT still does during a phase is reported
 * with it (jit-ms: CompilationMXBean's total time, in whole milliseconds,
 * across the phase).
 *
 * Faults: /proc/self/stat's minflt and majflt (fields 10 and 12) read
 * before and after each phase: they count the whole process, the JVM's
 * own threads (compiler, GC) included.
 */
import java.io.IOException;
import java.io.RandomAccessFile;
import java.lang.management.CompilationMXBean;
import java.lang.management.GarbageCollectorMXBean;
import java.lang.management.ManagementFactory;
import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.MappedByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.List;

public final class RtmemShm {
    /* Runs of the generator alone: their spread is how precise the writes'
     * net cost (their time less the generator's) is. */
    private static final int RNG_RUNS = 3;

    /* splitmix64's constants, as in tools/common/rng.h. */
    private static final long GOLDEN = 0x9e3779b97f4a7c15L;
    private static final long MIX1 = 0xbf58476d1ce4e5b9L;
    private static final long MIX2 = 0x94d049bb133111ebL;

    /* The bulk fills compared. bytes: put(int, byte[]) from a zeroed array
     * of ZERO_CHUNK bytes; direct: put(int, ByteBuffer) from a zeroed
     * direct buffer of the same size; longs: putLong(int, 0) over every
     * 8 bytes; unsafe: sun.misc.Unsafe.setMemory on the mapping's address
     * (no public API: a reference, not a contender); loop: put(byte) of a
     * 0 on every byte from position 0, one at a time (the relative put),
     * the published comparison's Java zeroing (no bulk fill at all). */
    private static final String[] ZERO_METHODS = { "bytes", "direct", "longs", "unsafe", "loop" };
    private static final int ZERO_CHUNK = 64 * 1024;
    private static final byte[] ZERO_ARRAY = new byte[ZERO_CHUNK];
    private static final ByteBuffer ZERO_DIRECT = ByteBuffer.allocateDirect(ZERO_CHUNK);

    /* The warm-up: each loop called WARM_CALLS times on a WARM_BYTES buffer
     * (past C2's invocation threshold, Tier4InvocationThreshold, 5000), then
     * a pause for the compiler queue to drain, up to WARM_WAIT_MS. */
    private static final int WARM_BYTES = 64 * 1024;
    private static final int WARM_CALLS = 12000;
    private static final int WARM_WRITES = 64;
    private static final int WARM_ZERO_BYTES = 4096;
    private static final long WARM_WAIT_MS = 2000;
    private static final String WARM_FILE = "rtmem-shm-warm";

    private static Object unsafe;
    private static Method invokeCleaner, setMemory, getLong;
    private static long addressOffset;

    private static final byte[] statBuf = new byte[4096];
    private static RandomAccessFile stat;
    private static CompilationMXBean jit;
    private static GarbageCollectorMXBean[] gcs;

    private static final StringBuilder out = new StringBuilder();

    public static void main(String[] args) {
        try {
            run(args);
        } catch (Throwable t) {
            System.out.print(out);
            System.out.flush();
            System.err.println("RtmemShm: " + t);
            System.exit(1);
        }
    }

    private static long arg(String[] args, int i, String name, long min, long max) {
        long v;
        try {
            v = Long.parseUnsignedLong(args[i]);
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(name + " '" + args[i] + "' is not a number");
        }
        if (Long.compareUnsigned(v, min) < 0 || Long.compareUnsigned(v, max) > 0)
            throw new IllegalArgumentException(name + " " + args[i] + " out of range");
        return v;
    }

    private static void run(String[] args) throws Exception {
        if (args.length < 7 || args.length > 8)
            throw new IllegalArgumentException(
                "usage: RtmemShm PATH BYTES PAGE WRITES ZEROINGS ZERO_BUDGET_NS SEED [ZERO_METHOD]");
        Path path = Paths.get(args[0]);
        int bytes = (int) arg(args, 1, "BYTES", 1, Integer.MAX_VALUE);
        int page = (int) arg(args, 2, "PAGE", 1, 1 << 30);
        long writes = arg(args, 3, "WRITES", 0, Long.MAX_VALUE);
        long zeroings = arg(args, 4, "ZEROINGS", 0, Long.MAX_VALUE);
        long budgetNs = arg(args, 5, "ZERO_BUDGET_NS", 0, Long.MAX_VALUE);
        long seed = arg(args, 6, "SEED", 0, -1L);
        String methodName = args.length > 7 ? args[7] : "longs";
        int method = List.of(ZERO_METHODS).indexOf(methodName);
        if (method < 0)
            throw new IllegalArgumentException("ZERO_METHOD '" + methodName + "': not one of "
                                               + String.join(" ", ZERO_METHODS));

        initUnsafe();
        stat = new RandomAccessFile("/proc/self/stat", "r");
        jit = ManagementFactory.getCompilationMXBean();
        gcs = ManagementFactory.getGarbageCollectorMXBeans().toArray(new GarbageCollectorMXBean[0]);
        warmUp(page, method);

        line("rtmem-shm-java 2");
        line("runtime " + System.getProperty("java.vm.name") + " "
             + System.getProperty("java.version"));
        line("zero-method " + methodName);
        /* What follows is timed. */

        long sink = 0, rngNs = Long.MAX_VALUE, rngMaxNs = 0;
        for (int run = 0; run < RNG_RUNS; run++) {
            long t0 = System.nanoTime();
            sink += generator(writes, seed, bytes);
            long ns = System.nanoTime() - t0;
            rngNs = Math.min(rngNs, ns);
            rngMaxNs = Math.max(rngMaxNs, ns);
        }
        long sum = 0;
        boolean zeroed = false;

        phaseBegin();
        Files.createFile(path); /* O_EXCL: never someone else's file */
        RandomAccessFile file = null;
        FileChannel ch = null;
        MappedByteBuffer buf = null;
        try {
            file = new RandomAccessFile(path.toFile(), "rw");
            file.setLength(bytes);
            ch = file.getChannel();
            buf = ch.map(FileChannel.MapMode.READ_WRITE, 0, bytes);
            buf.order(ByteOrder.LITTLE_ENDIAN);
            long pages = touch(buf, page, bytes);
            phaseEnd(0, pages);

            phaseBegin();
            writes(buf, writes, seed, bytes);
            phaseEnd(1, writes);

            sum = checksum(buf, bytes);

            phaseBegin();
            long done = zeroAll(buf, bytes, method, zeroings, budgetNs);
            phaseEnd(2, done);

            zeroed = isZero(buf, bytes);

            phaseBegin();
            buf.force();
            phaseEnd(3, 1);

            phaseBegin();
            unmap(buf);
            buf = null;
            ch.close();
            ch = null;
            file.close();
            file = null;
            Files.delete(path);
            phaseEnd(4, 1);
        } finally {
            if (buf != null)
                unmap(buf);
            if (ch != null)
                ch.close();
            if (file != null)
                file.close();
            Files.deleteIfExists(path);
        }
        /* The sink printed: the generator's loop is not dead code. */
        line("rng ops=" + writes + " ns=" + rngNs + " max=" + rngMaxNs + " sink=" + (sink & 1));
        line("checksum " + Long.toUnsignedString(sum));
        line("zeroed " + (zeroed ? 1 : 0));
        printPhases();
        line("end");
        System.out.print(out);
        System.out.flush();
    }

    private static void line(String s) {
        out.append(s).append('\n');
    }

    /* The phases' figures, kept as numbers until every phase is done: no
     * string is built (no class loaded, no call site bound) between two
     * phases. Columns: PHASE_COLUMNS below. */
    private static final String[] PHASES = { "touch", "writes", "zeroings", "sync", "teardown" };
    private static final String[] PHASE_COLUMNS = { "ops", "ns", "minflt", "majflt", "jit-ms", "gcs" };
    private static final long[][] phases = new long[PHASES.length][PHASE_COLUMNS.length];
    private static final long[] begun = new long[PHASE_COLUMNS.length];

    private static void phaseBegin() throws IOException {
        readStat();
        begun[2] = statMinflt;
        begun[3] = statMajflt;
        begun[4] = jit.getTotalCompilationTime();
        begun[5] = gcCount();
        begun[1] = System.nanoTime();
    }

    private static void phaseEnd(int phase, long ops) throws IOException {
        long t = System.nanoTime() - begun[1];
        readStat();
        long[] row = phases[phase];
        row[0] = ops;
        row[1] = t;
        row[2] = statMinflt - begun[2];
        row[3] = statMajflt - begun[3];
        row[4] = jit.getTotalCompilationTime() - begun[4];
        row[5] = gcCount() - begun[5];
    }

    private static void printPhases() {
        for (int i = 0; i < PHASES.length; i++) {
            StringBuilder b = new StringBuilder("phase ").append(PHASES[i]);
            for (int c = 0; c < PHASE_COLUMNS.length; c++)
                b.append(' ').append(PHASE_COLUMNS[c]).append('=').append(phases[i][c]);
            line(b.toString());
        }
    }

    private static long gcCount() {
        long n = 0;
        for (int i = 0; i < gcs.length; i++)
            n += Math.max(0, gcs[i].getCollectionCount());
        return n;
    }

    private static long statMinflt, statMajflt;

    /* /proc/self/stat, read again from its start: fields 10 and 12, counted
     * after the ')' that ends field 2 (the name may hold spaces). */
    private static void readStat() throws IOException {
        stat.seek(0);
        int n = 0, r;
        while (n < statBuf.length && (r = stat.read(statBuf, n, statBuf.length - n)) > 0)
            n += r;
        int i = n - 1;
        while (i >= 0 && statBuf[i] != ')')
            i--;
        if (i < 0)
            throw new IOException("/proc/self/stat: no ')'");
        int field = 2;
        long v = 0;
        for (i++; i < n; i++) {
            byte c = statBuf[i];
            if (c == ' ') {
                if (field == 10)
                    statMinflt = v;
                else if (field == 12) {
                    statMajflt = v;
                    return;
                }
                field++;
                v = 0;
            } else if (c >= '0' && c <= '9') {
                v = v * 10 + (c - '0');
            }
        }
        throw new IOException("/proc/self/stat: fewer than 12 fields");
    }

    /* One byte (1) written at the start of every page, in order. */
    private static long touch(ByteBuffer b, int page, int bytes) {
        long pages = 0;
        for (int i = 0; i < bytes; i += page) {
            b.put(i, (byte) 1);
            pages++;
            if (i > bytes - page)
                break; /* the next i would overflow */
        }
        return pages;
    }

    private static long splitmix(long z) {
        z = (z ^ (z >>> 30)) * MIX1;
        z = (z ^ (z >>> 27)) * MIX2;
        return z ^ (z >>> 31);
    }

    /* index = ((z >>> 32) * bytes) >>> 32: below bytes, bytes < 2^31. */
    private static void writes(ByteBuffer b, long n, long seed, long bytes) {
        long s = seed;
        for (long i = 0; i < n; i++) {
            s += GOLDEN;
            long z = splitmix(s);
            b.put((int) (((z >>> 32) * bytes) >>> 32), (byte) z);
        }
    }

    /* The same draws, summed into a sink the caller prints. */
    private static long generator(long n, long seed, long bytes) {
        long s = seed, sink = 0;
        for (long i = 0; i < n; i++) {
            s += GOLDEN;
            long z = splitmix(s);
            sink += (((z >>> 32) * bytes) >>> 32) ^ (z & 0xff);
        }
        return sink;
    }

    /* FNV-1a's step over the region's 64-bit little-endian words (a tail
     * shorter than 8 bytes byte by byte): java.h, shm_java_checksum. */
    private static long checksum(ByteBuffer b, int bytes) {
        long h = 0xcbf29ce484222325L;
        int i = 0;
        for (; i <= bytes - 8; i += 8)
            h = (h ^ b.getLong(i)) * 0x100000001b3L;
        for (; i < bytes; i++)
            h = (h ^ (b.get(i) & 0xff)) * 0x100000001b3L;
        return h;
    }

    private static boolean isZero(ByteBuffer b, int bytes) {
        long or = 0;
        int i = 0;
        for (; i <= bytes - 8; i += 8)
            or |= b.getLong(i);
        for (; i < bytes; i++)
            or |= b.get(i);
        return or == 0;
    }

    /* Zeroings as asked (or for the budget); returns how many. */
    private static long zeroAll(ByteBuffer b, int bytes, int method, long count, long budgetNs)
        throws Exception {
        long done = 0;
        if (count > 0) {
            for (; done < count; done++)
                zero(b, bytes, method);
            return done;
        }
        long start = System.nanoTime();
        while (done < 3 || System.nanoTime() - start < budgetNs) {
            zero(b, bytes, method);
            done++;
        }
        return done;
    }

    /* method: an index in ZERO_METHODS. */
    private static void zero(ByteBuffer b, int bytes, int method) throws Exception {
        switch (method) {
        case 0: zeroBytes(b, bytes); break;
        case 1: zeroDirect(b, bytes); break;
        case 2: zeroLongs(b, bytes); break;
        case 3: zeroUnsafe(b, bytes); break;
        default: zeroLoop(b, bytes); break;
        }
    }

    private static void zeroBytes(ByteBuffer b, int bytes) {
        for (int i = 0; i < bytes; i += ZERO_CHUNK)
            b.put(i, ZERO_ARRAY, 0, Math.min(ZERO_CHUNK, bytes - i));
    }

    private static void zeroDirect(ByteBuffer b, int bytes) {
        for (int i = 0; i < bytes; i += ZERO_CHUNK)
            b.put(i, ZERO_DIRECT, 0, Math.min(ZERO_CHUNK, bytes - i));
    }

    private static void zeroLongs(ByteBuffer b, int bytes) {
        int i = 0;
        for (; i <= bytes - 8; i += 8)
            b.putLong(i, 0L);
        for (; i < bytes; i++)
            b.put(i, (byte) 0);
    }

    /* The relative put, which moves the position on by one each call: C2
     * keeps it a byte at a time (an absolute put(i, (byte) 0) loop, by
     * contrast, it turns into wide stores, as fast as a bulk fill). */
    private static void zeroLoop(ByteBuffer b, int bytes) {
        b.position(0);
        for (int i = 0; i < bytes; i++)
            b.put((byte) 0);
        b.position(0);
    }

    private static void zeroUnsafe(ByteBuffer b, int bytes) throws Exception {
        long address = (Long) getLong.invoke(unsafe, b, addressOffset);
        setMemory.invoke(unsafe, address, (long) bytes, (byte) 0);
    }

    /* sun.misc.Unsafe (module jdk.unsupported, open to reflection): its
     * invokeCleaner is the only way to unmap a MappedByteBuffer before the
     * garbage collector finds it; setMemory and the address of
     * java.nio.Buffer serve the "unsafe" fill only. */
    private static void initUnsafe() throws Exception {
        Class<?> c = Class.forName("sun.misc.Unsafe");
        Field f = c.getDeclaredField("theUnsafe");
        f.setAccessible(true);
        unsafe = f.get(null);
        invokeCleaner = c.getMethod("invokeCleaner", ByteBuffer.class);
        setMemory = c.getMethod("setMemory", long.class, long.class, byte.class);
        getLong = c.getMethod("getLong", Object.class, long.class);
        Field address = java.nio.Buffer.class.getDeclaredField("address");
        addressOffset = (Long) c.getMethod("objectFieldOffset", Field.class).invoke(unsafe, address);
    }

    private static void unmap(ByteBuffer b) throws Exception {
        invokeCleaner.invoke(unsafe, b);
    }

    /* The loops compiled, the cycle's classes loaded (see the top). */
    private static void warmUp(int page, int method) throws Exception {
        ByteBuffer b = ByteBuffer.allocateDirect(WARM_BYTES).order(ByteOrder.LITTLE_ENDIAN);
        long sink = 0;
        for (int k = 0; k < WARM_CALLS; k++) {
            sink += touch(b, page, WARM_BYTES);
            writes(b, WARM_WRITES, k, WARM_BYTES);
            sink += generator(WARM_WRITES, k, WARM_BYTES);
            /* Both of zeroAll's loops (a count, a budget), mostly on a
             * small part of the buffer: the calls count, not the bytes. */
            sink += zeroAll(b, WARM_ZERO_BYTES, method, 1, 0);
            if (k % 16 == 0) {
                sink += checksum(b, WARM_BYTES);
                sink += zeroAll(b, WARM_BYTES, method, 0, 0);
                sink += isZero(b, WARM_BYTES) ? 1 : 0;
            }
        }
        if (sink == 42)
            System.err.print(""); /* the sink used: no loop is dead code */
        unmap(b);

        /* A fixed name, which java.c registers for removal. */
        Path warm = Paths.get(System.getProperty("java.io.tmpdir"), WARM_FILE);
        Files.createFile(warm);
        try (RandomAccessFile f = new RandomAccessFile(warm.toFile(), "rw")) {
            f.setLength(WARM_BYTES);
            MappedByteBuffer m = f.getChannel().map(FileChannel.MapMode.READ_WRITE, 0, WARM_BYTES);
            m.order(ByteOrder.LITTLE_ENDIAN);
            touch(m, page, WARM_BYTES);
            writes(m, WARM_WRITES, 1, WARM_BYTES);
            checksum(m, WARM_BYTES);
            zeroAll(m, WARM_BYTES, method, 0, 0);
            m.force();
            unmap(m);
        } finally {
            Files.delete(warm);
        }
        phaseBegin();
        phaseEnd(0, 0);

        /* The compiler queue drained: no compile time added for 100 ms. */
        long last = jit.getTotalCompilationTime();
        for (long waited = 0; waited < WARM_WAIT_MS; waited += 100) {
            Thread.sleep(100);
            long now = jit.getTotalCompilationTime();
            if (now == last)
                break;
            last = now;
        }
    }
}
