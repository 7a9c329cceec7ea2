package dev.baton;

import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.ExecutorService;

/**
 * Per task type settings of a {@link Worker}.
 *
 * <p>The execution limit of an attempt is the task's own {@code execution_timeout}, else
 * {@code defaultExecutionTimeout}; {@code maxExecutionTimeout}, when set, caps it (and so also
 * applies to a task that has none). Both null (the default): a task without {@code
 * execution_timeout} runs without a deadline. A task's stored {@code execution_timeout} is never
 * changed; the limit only decides when this worker fails the attempt as {@code timeout}.
 *
 * @param concurrency attempts of this type running at once
 * @param executor where handlers run; null = the worker's default (a virtual thread per attempt
 *     on Java 21+, a platform thread per attempt otherwise). The worker never shuts a given one down.
 * @param lease the lease of a delivered task, renewed every third of it while the handler runs
 * @param defaultExecutionTimeout the limit of an attempt whose task has no {@code
 *     execution_timeout}, or null for none
 * @param maxExecutionTimeout the most an attempt of this type may run, whatever the task asks, or
 *     null for no cap
 */
public record HandlerOptions(int concurrency, ExecutorService executor, Duration lease,
                             Duration defaultExecutionTimeout, Duration maxExecutionTimeout) {
    /** 16 at once, default executor, 30 s leases, no default timeout and no cap. */
    public static final HandlerOptions DEFAULT = new HandlerOptions(16, null, Duration.ofSeconds(30));

    /**
     * Checks the values.
     *
     * @param concurrency attempts of this type running at once, 1..10000
     * @param executor where handlers run, or null for the default
     * @param lease the lease length, 1 s..24 h
     * @param defaultExecutionTimeout whole seconds, 1 s..24 h (the contract's range of {@code
     *     execution_timeout}), or null
     * @param maxExecutionTimeout whole seconds, 1 s..24 h, or null
     */
    public HandlerOptions {
        if (concurrency < 1 || concurrency > 10000) {
            throw BatonException.invalid("concurrency", "must be 1..10000 (got " + concurrency + ")");
        }
        if (lease.toMillis() < 1000 || lease.toMillis() > 86400000) {
            throw BatonException.invalid("lease", "must be 1 s..24 h (got " + lease + ")");
        }
        checkLimit("default_execution_timeout", defaultExecutionTimeout);
        checkLimit("max_execution_timeout", maxExecutionTimeout);
    }

    /**
     * Options without execution limits.
     *
     * @param concurrency attempts of this type running at once, 1..10000
     * @param executor where handlers run, or null for the default
     * @param lease the lease length, 1 s..24 h
     */
    public HandlerOptions(int concurrency, ExecutorService executor, Duration lease) {
        this(concurrency, executor, lease, null, null);
    }

    private static void checkLimit(String field, Duration d) {
        if (d == null) {
            return;
        }
        if (d.isNegative() || d.getNano() != 0 || d.getSeconds() < 1 || d.getSeconds() > Rules.TIMEOUT_MAX) {
            throw BatonException.invalid(field, "must be whole seconds, 1 s..24 h (got " + d + ")");
        }
    }

    /**
     * @param n attempts at once
     * @return a copy with that concurrency
     */
    public HandlerOptions withConcurrency(int n) {
        return new HandlerOptions(n, executor, lease, defaultExecutionTimeout, maxExecutionTimeout);
    }

    /**
     * @param e the executor for this type's handlers
     * @return a copy with it
     */
    public HandlerOptions withExecutor(ExecutorService e) {
        return new HandlerOptions(concurrency, e, lease, defaultExecutionTimeout, maxExecutionTimeout);
    }

    /**
     * @param d the lease length
     * @return a copy with it
     */
    public HandlerOptions withLease(Duration d) {
        return new HandlerOptions(concurrency, executor, d, defaultExecutionTimeout, maxExecutionTimeout);
    }

    /**
     * @param d the limit of attempts whose task has no {@code execution_timeout} (whole seconds,
     *     1 s..24 h), or null for none
     * @return a copy with it
     */
    public HandlerOptions withDefaultExecutionTimeout(Duration d) {
        return new HandlerOptions(concurrency, executor, lease, d, maxExecutionTimeout);
    }

    /**
     * @param d the most an attempt of this type may run, also when its task asks for more (whole
     *     seconds, 1 s..24 h), or null for no cap
     * @return a copy with it
     */
    public HandlerOptions withMaxExecutionTimeout(Duration d) {
        return new HandlerOptions(concurrency, executor, lease, defaultExecutionTimeout, d);
    }

    /**
     * The limit of one attempt, and where it comes from.
     *
     * @param own the task's execution_timeout, if any
     * @return the limit, or empty for none
     */
    Optional<Limit> limitFor(Optional<Duration> own) {
        Duration d = own.orElse(defaultExecutionTimeout);
        String source = own.isPresent() ? "task" : "default";
        if (maxExecutionTimeout != null && (d == null || d.compareTo(maxExecutionTimeout) > 0)) {
            d = maxExecutionTimeout;
            source = "cap";
        }
        return d == null ? Optional.empty() : Optional.of(new Limit(d, source));
    }

    /** An attempt's execution limit; source is {@code task}, {@code default} or {@code cap}. */
    record Limit(Duration duration, String source) {
        /** @return the error recorded when the attempt runs past it */
        String message() {
            long s = duration.getSeconds();
            return switch (source) {
                case "task" -> "execution_timeout of " + s + " s exceeded";
                case "default" -> "execution timeout of " + s
                        + " s exceeded (the worker's default for this type: the task has no execution_timeout)";
                default -> "execution timeout of " + s + " s exceeded (the worker's cap for this type)";
            };
        }
    }
}
