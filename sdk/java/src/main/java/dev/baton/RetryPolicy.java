package dev.baton;

import java.time.Duration;

/**
 * Retry backoff of failed attempts, computed inside {@code baton_v2_fail}: after the n-th failure
 * the delay is {@code min(base * 2^(n-1), max)} plus up to a quarter of jitter.
 *
 * @param base the first delay
 * @param max the largest delay
 */
public record RetryPolicy(Duration base, Duration max) {
    /** Baton's defaults: 2 s, at most 10 min. */
    public static final RetryPolicy DEFAULT = new RetryPolicy(Duration.ofSeconds(2), Duration.ofMinutes(10));

    /**
     * Checks the values.
     *
     * @param base the first delay, at least 1 ms
     * @param max the largest delay, at least base
     */
    public RetryPolicy {
        if (base.toMillis() < 1 || max.compareTo(base) < 0) {
            throw BatonException.invalid("retry", "base must be at least 1 ms and max at least base");
        }
    }
}
