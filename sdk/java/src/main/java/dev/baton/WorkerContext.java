package dev.baton;

import dev.baton.internal.Redis;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ThreadLocalRandom;
import java.util.function.BooleanSupplier;
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
    private volatile boolean stopping;
    private volatile long giveUpAt;

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
     * again. Gives up (returns null) once the worker is closed or a shutdown's grace period is
     * over; other errors propagate.
     */
    <T> T retrying(String what, Supplier<T> call) {
        return retrying(what, this::givingUp, call);
    }

    /** As {@link #retrying(String, Supplier)}, also giving up as soon as {@code stop} holds. */
    <T> T retrying(String what, BooleanSupplier stop, Supplier<T> call) {
        long pause = 100;
        boolean reconnecting = false;
        while (true) {
            try {
                if (reconnecting) {
                    redis.checkVersion(false);
                    LOG.log(System.Logger.Level.INFO, "reconnected to " + redis.url());
                }
                return call.get();
            } catch (BatonException e) {
                if (!Redis.isConnectionError(e)) {
                    throw e;
                }
                if (givingUp() || stop.getAsBoolean()) {
                    return null;
                }
                if (!reconnecting) {
                    LOG.log(System.Logger.Level.WARNING, what + ": " + e.getMessage() + "; reconnecting");
                }
                reconnecting = true;
                long until = System.nanoTime() + (pause + ThreadLocalRandom.current().nextLong(pause / 4 + 1)) * 1_000_000;
                while (System.nanoTime() - until < 0 && !givingUp() && !stop.getAsBoolean()) {
                    sleep(Math.min(50, (until - System.nanoTime()) / 1_000_000 + 1));
                }
                pause = Math.min(pause * 2, 5000);
            }
        }
    }

    /** Set by a shutdown: past this System.nanoTime(), calls stop retrying. */
    void giveUpAt(long nanos) {
        giveUpAt = nanos;
        stopping = true;
    }

    private boolean givingUp() {
        return closed || (stopping && System.nanoTime() - giveUpAt >= 0);
    }

    static void sleep(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
