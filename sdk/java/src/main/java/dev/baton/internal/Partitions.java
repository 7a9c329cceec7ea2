package dev.baton.internal;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;

/**
 * Partitions (docs/cluster.md, "Partitions"): a namespace NS may be spread over P storage
 * namespaces, NS (partition 0) and "NS:1" .. "NS:P-1", each in its own Redis Cluster slot. P is
 * {@code HGET baton:v2:partitions NS} (absent: 1). Producers put a task in partition {@link
 * #of(String, int)}; workers serve every partition; the task's document keeps namespace NS.
 */
public final class Partitions {
    private static final System.Logger LOG = System.getLogger("dev.baton");
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
     * Reads a stored count: absent is 1; text that is not an integer 1.. is 1 (logged); above
     * the maximum is the maximum.
     *
     * @param ns the namespace (for the log)
     * @param value the stored text or null
     * @return the count
     */
    static int parse(String ns, String value) {
        if (value == null) {
            return 1;
        }
        long n;
        try {
            n = value.startsWith("+") ? -1 : Long.parseLong(value);
        } catch (NumberFormatException e) {
            n = -1;
        }
        if (n < 1) {
            LOG.log(System.Logger.Level.WARNING, "baton: partition count of namespace " + ns + " in "
                    + Protocol.KeyKind.PARTITIONS.pattern + " is not an integer 1.." + Protocol.PARTITIONS_MAX
                    + " (got \"" + value + "\"); using 1");
            return 1;
        }
        return (int) Math.min(n, Protocol.PARTITIONS_MAX);
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
     * A producer's cache of partition counts, each kept {@link #REFRESH_NANOS}. Stale counts are
     * read in one HMGET; when that read fails, a count read before is used (and read again next
     * time), a count never read is an error.
     */
    public static final class Cache {
        private final Redis redis;
        private final Map<String, long[]> byNs = new HashMap<>(); // ns -> {count, readAtNanos}

        /** @param redis the gateway */
        public Cache(Redis redis) {
            this.redis = redis;
        }

        /**
         * @param namespaces namespaces (duplicates allowed)
         * @return the count of each
         */
        public Map<String, Integer> get(Collection<String> namespaces) {
            long now = System.nanoTime();
            Map<String, Integer> out = new HashMap<>();
            List<String> stale = new ArrayList<>();
            synchronized (byNs) {
                for (String ns : new LinkedHashSet<>(namespaces)) {
                    long[] e = byNs.get(ns);
                    if (e != null) {
                        out.put(ns, (int) e[0]);
                    }
                    if (e == null || now - e[1] >= REFRESH_NANOS) {
                        stale.add(ns);
                    }
                }
            }
            if (stale.isEmpty()) {
                return out;
            }
            int[] counts;
            try {
                counts = read(redis, stale);
            } catch (RuntimeException e) {
                for (String ns : stale) {
                    if (!out.containsKey(ns)) {
                        throw e;
                    }
                }
                LOG.log(System.Logger.Level.WARNING, "baton: partition counts not re-read (using the last): "
                        + e.getMessage());
                return out;
            }
            long at = System.nanoTime();
            synchronized (byNs) {
                for (int i = 0; i < counts.length; i++) {
                    byNs.put(stale.get(i), new long[] {counts[i], at});
                    out.put(stale.get(i), counts[i]);
                }
            }
            return out;
        }
    }
}
