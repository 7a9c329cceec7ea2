package dev.baton;

import dev.baton.internal.Redis;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ThreadLocalRandom;
import java.util.function.Supplier;

/** What every part of one worker shares. */
final class WorkerContext {
    static final System.Logger LOG = System.getLogger("dev.baton.Worker");

    final Redis redis;
    final String group;
    final String consumer;
    final RetryPolicy retry;
    final int batch;
    final long blockMs;
    final Counters counters = new Counters();
    final ScheduledExecutorService timers;
    final ExecutorService background;
    volatile boolean fetching = true;
    volatile boolean closed;

    WorkerContext(Redis redis, String group, String consumer, RetryPolicy retry, int batch, long blockMs,
                  ScheduledExecutorService timers, ExecutorService background) {
        this.redis = redis;
        this.group = group;
        this.consumer = consumer;
        this.retry = retry;
        this.batch = batch;
        this.blockMs = blockMs;
        this.timers = timers;
        this.background = background;
    }

    /**
     * Runs a Redis call until it succeeds, riding out connection loss: after a failure it waits
     * (100 ms doubling to 5 s), re-checks the library version (every reconnect must) and tries
     * again. Gives up (returns null) once the worker is closed; other errors propagate.
     */
    <T> T retrying(String what, Supplier<T> call) {
        long pause = 100;
        boolean reconnecting = false;
        while (true) {
            try {
                if (reconnecting) {
                    redis.checkVersion();
                    LOG.log(System.Logger.Level.INFO, "reconnected to " + redis.url());
                }
                return call.get();
            } catch (BatonException e) {
                if (!Redis.isConnectionError(e)) {
                    throw e;
                }
                if (closed) {
                    return null;
                }
                if (!reconnecting) {
                    LOG.log(System.Logger.Level.WARNING, what + ": " + e.getMessage() + "; reconnecting");
                }
                reconnecting = true;
                sleep(pause + ThreadLocalRandom.current().nextLong(pause / 4 + 1));
                pause = Math.min(pause * 2, 5000);
            }
        }
    }

    static void sleep(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
