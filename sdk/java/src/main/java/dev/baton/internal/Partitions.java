package dev.baton.internal;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Partitions (docs/cluster.md, "Partitions"): a namespace NS may be spread over P storage
 * namespaces, NS (partition 0) and "NS:1" .. "NS:P-1", each in its own Redis Cluster slot. P is
 * {@code HGET baton:v2:partitions NS} (absent: 1). Producers put a task in partition {@link
 * #of(String, int)}; workers serve every partition; the task's document keeps namespace NS.
 */
public final class Partitions {
    private static final System.Logger LOG = System.getLogger("dev.baton");
    /** (namespace, value) pairs already logged as unparsable. */
    private static final Set<String> WARNED = ConcurrentHashMap.newKeySet();
    /** How old a cached count may get before it is read again. */
    public static final long REFRESH_NANOS = Protocol.PARTITIONS_REFRESH_SECONDS * 1_000_000_000L;

    private Partitions() {}

    /**
     * @param s a string
     * @return FNV-1a (32 bits) of its UTF-8 bytes, as an unsigned value
     */
    public static long fnv1a32(String s) {
        int h = Protocol.FNV1A32_OFFSET_BASIS;
        for (byte b : s.getBytes(StandardCharsets.UTF_8)) {
            h ^= b & 0xff;
            h *= Protocol.FNV1A32_PRIME; // int overflow is arithmetic modulo 2^32, as the rule says
        }
        return Integer.toUnsignedLong(h);
    }

    /**
     * @param taskId a task id
     * @param count the namespace's partition count (below 2: 0; above the maximum: the maximum)
     * @return the task's partition, 0..count-1
     */
    public static int of(String taskId, int count) {
        if (count <= 1) {
            return 0;
        }
        return (int) (fnv1a32(taskId) % Math.min(count, Protocol.PARTITIONS_MAX));
    }

    /**
     * @param ns a namespace
     * @param p a partition
     * @return the namespace whose keys hold partition p: ns for 0, "ns:p" otherwise
     */
    public static String storage(String ns, int p) {
        return p <= 0 ? ns : ns + ":" + p;
    }

    /**
     * Reads a stored count as every SDK does (the "counts" of contract/fixtures/partitions.json):
     * absent is 1; ASCII digits (any number of them, leading zeros allowed) worth at least 1 are
     * that value, at most the maximum; anything else is 1, with a warning logged once per
     * namespace and value.
     *
     * @param ns the namespace (for the log)
     * @param value the stored text or null
     * @return the count, 1..{@link Protocol#PARTITIONS_MAX}
     */
    public static int parse(String ns, String value) {
        if (value == null) {
            return 1;
        }
        long n = 0;
        for (int i = 0; i < value.length() && n >= 0; i++) {
            char c = value.charAt(i);
            // capped while accumulating: digits past the cap (however many) are the cap
            n = c >= '0' && c <= '9' ? Math.min(n * 10 + (c - '0'), Protocol.PARTITIONS_MAX + 1L) : -1;
        }
        if (n >= 1) {
            return (int) Math.min(n, Protocol.PARTITIONS_MAX);
        }
        if (WARNED.add(ns + '\0' + value)) { // the worker re-reads every 5 s: warn once, not each time
            String shown = value.length() > 40 ? value.substring(0, 40) + "..." : value;
            LOG.log(System.Logger.Level.WARNING, "baton: partition count of namespace " + ns + " in "
                    + Protocol.KeyKind.PARTITIONS.pattern + " is not an integer 1.." + Protocol.PARTITIONS_MAX
                    + " in ASCII digits (got \"" + shown + "\"); using 1");
        }
        return 1;
    }

    /**
     * Reads the counts of namespaces in one HMGET.
     *
     * @param redis the gateway
     * @param namespaces the namespaces
     * @return their counts, in order
     */
    public static int[] read(Redis redis, List<String> namespaces) {
        String key = Protocol.KeyKind.PARTITIONS.pattern;
        List<String> values = redis.with(j -> j.hmget(key, namespaces.toArray(new String[0])));
        if (values.size() != namespaces.size()) {
            throw new dev.baton.BatonException(dev.baton.ErrorCode.INTERNAL, "partition counts: HMGET " + key
                    + " answered " + values.size() + " values for " + namespaces.size() + " namespaces", null);
        }
        int[] out = new int[values.size()];
        for (int i = 0; i < out.length; i++) {
            out[i] = parse(namespaces.get(i), values.get(i));
        }
        return out;
    }

    /**
     * A producer's cache of partition counts, each kept {@link #REFRESH_NANOS}. Counts never read
     * or older than that are read in one HMGET, shared by the threads that need them meanwhile;
     * when that read fails, the call fails (docs/cluster.md: an enqueue whose count needs reading
     * fails while it cannot be read), and the next call reads again.
     */
    public static final class Cache {
        private final Redis redis;
        private final Map<String, long[]> byNs = new HashMap<>(); // ns -> {count, readAtNanos}
        /** The reads in flight, per namespace (guarded by byNs). */
        private final Map<String, CompletableFuture<Integer>> reading = new HashMap<>();

        /** @param redis the gateway */
        public Cache(Redis redis) {
            this.redis = redis;
        }

        /**
         * @param namespaces namespaces (duplicates allowed)
         * @return the count of each
         * @throws dev.baton.BatonException when a count due for reading cannot be read ({@code
         *     unavailable} when Redis cannot be reached)
         */
        public Map<String, Integer> get(Collection<String> namespaces) {
            long now = System.nanoTime();
            Map<String, Integer> out = new HashMap<>();
            List<String> mine = new ArrayList<>(); // read by this thread
            Map<String, CompletableFuture<Integer>> theirs = new HashMap<>(); // read by another one now
            synchronized (byNs) {
                for (String ns : new LinkedHashSet<>(namespaces)) {
                    long[] e = byNs.get(ns);
                    if (e != null && now - e[1] < REFRESH_NANOS) {
                        out.put(ns, (int) e[0]);
                    } else if (reading.containsKey(ns)) {
                        theirs.put(ns, reading.get(ns));
                    } else {
                        mine.add(ns);
                        reading.put(ns, new CompletableFuture<>());
                    }
                }
            }
            if (!mine.isEmpty()) {
                int[] counts;
                try {
                    counts = read(redis, mine);
                } catch (RuntimeException e) {
                    RuntimeException failure = notRead(mine, e);
                    finish(mine, null, failure);
                    throw failure;
                } catch (Error e) { // the waiting threads must not hang
                    finish(mine, null, notRead(mine, e));
                    throw e;
                }
                finish(mine, counts, null);
                for (int i = 0; i < counts.length; i++) {
                    out.put(mine.get(i), counts[i]);
                }
            }
            for (Map.Entry<String, CompletableFuture<Integer>> t : theirs.entrySet()) {
                try {
                    out.put(t.getKey(), t.getValue().join());
                } catch (CompletionException e) {
                    throw e.getCause() instanceof dev.baton.BatonException b
                            ? new dev.baton.BatonException(b.code(), b.getMessage(), b) // this thread's stack
                            : e;
                }
            }
            return out;
        }

        private static RuntimeException notRead(List<String> namespaces, Throwable e) {
            String what = "partition count of namespace" + (namespaces.size() > 1 ? "s " : " ")
                    + String.join(", ", namespaces) + " not read from " + Protocol.KeyKind.PARTITIONS.pattern + ": ";
            if (e instanceof dev.baton.BatonException b) {
                return new dev.baton.BatonException(b.code(), what + b.getMessage(), b);
            }
            return new dev.baton.BatonException(dev.baton.ErrorCode.INTERNAL, what + e, e);
        }

        /** Stores the counts read (or the failure) and wakes the threads that waited for them. */
        private void finish(List<String> namespaces, int[] counts, RuntimeException failure) {
            long at = System.nanoTime();
            synchronized (byNs) {
                for (int i = 0; i < namespaces.size(); i++) {
                    CompletableFuture<Integer> f = reading.remove(namespaces.get(i));
                    if (failure != null) {
                        f.completeExceptionally(failure);
                    } else {
                        byNs.put(namespaces.get(i), new long[] {counts[i], at});
                        f.complete(counts[i]);
                    }
                }
            }
        }
    }
}
