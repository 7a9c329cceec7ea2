package dev.baton;

/**
 * Counters of a worker since it started.
 *
 * @param succeeded attempts whose success was recorded ({@code done} or {@code stale_done}; not an
 *     ack of a task deleted meanwhile)
 * @param failed failed attempts recorded (errors, timeouts, malformed; not a {@code stale} fail
 *     of a task that was no longer this worker's)
 * @param retried failed attempts that will run again
 * @param dead failed attempts that dead-lettered their task
 * @param timedOut attempts stopped at their execution_timeout
 * @param malformed deliveries that could not be decoded
 * @param lost attempts whose lease was taken back while they ran (handler interrupted, result dropped)
 */
public record WorkerStats(long succeeded, long failed, long retried, long dead, long timedOut, long malformed,
                          long lost) {}
