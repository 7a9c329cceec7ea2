package dev.baton;

import java.time.Duration;
import java.util.concurrent.ExecutorService;

/**
 * Per task type settings of a {@link Worker}.
 *
 * @param concurrency attempts of this type running at once
 * @param executor where handlers run; null = the worker's default (a virtual thread per attempt
 *     on Java 21+, a platform thread per attempt otherwise). The worker never shuts a given one down.
 * @param lease the lease of a delivered task, renewed every third of it while the handler runs
 */
public record HandlerOptions(int concurrency, ExecutorService executor, Duration lease) {
    /** 16 at once, default executor, 30 s leases. */
    public static final HandlerOptions DEFAULT = new HandlerOptions(16, null, Duration.ofSeconds(30));

    /**
     * Checks the values.
     *
     * @param concurrency attempts of this type running at once, 1..10000
     * @param executor where handlers run, or null for the default
     * @param lease the lease length, 1 s..24 h
     */
    public HandlerOptions {
        if (concurrency < 1 || concurrency > 10000) {
            throw BatonException.invalid("concurrency", "must be 1..10000 (got " + concurrency + ")");
        }
        if (lease.toMillis() < 1000 || lease.toMillis() > 86400000) {
            throw BatonException.invalid("lease", "must be 1 s..24 h (got " + lease + ")");
        }
    }

    /**
     * @param n attempts at once
     * @return a copy with that concurrency
     */
    public HandlerOptions withConcurrency(int n) {
        return new HandlerOptions(n, executor, lease);
    }

    /**
     * @param e the executor for this type's handlers
     * @return a copy with it
     */
    public HandlerOptions withExecutor(ExecutorService e) {
        return new HandlerOptions(concurrency, e, lease);
    }

    /**
     * @param d the lease length
     * @return a copy with it
     */
    public HandlerOptions withLease(Duration d) {
        return new HandlerOptions(concurrency, executor, d);
    }
}
