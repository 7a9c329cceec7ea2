package dev.baton;

import dev.baton.internal.Tracing;
import java.time.Instant;
import java.util.concurrent.Future;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * One run of one task: the handler on the type's executor, its execution_timeout timer, and the
 * single outcome (ack, fail or timeout) whichever comes first. At the deadline the attempt is
 * failed as a timeout right away and the handler's thread is interrupted; a handler that ignores
 * the interrupt keeps its thread, but its result is dropped and its lease is no longer renewed.
 */
final class Attempt {
    private final TypeRunner runner;
    final Task task;
    private final AtomicBoolean settled = new AtomicBoolean();
    private volatile Future<?> future;
    private volatile ScheduledFuture<?> timer;
    private volatile Thread thread;
    private HandlerOptions.Limit limit;

    Attempt(TypeRunner runner, Task task) {
        this.runner = runner;
        this.task = task;
    }

    /**
     * Starts the handler.
     *
     * @throws java.util.concurrent.RejectedExecutionException when the type's executor refuses it
     *     (nothing is left behind: no timer, not counted as running)
     */
    void start() {
        // The deadline is set before the handler can run, so that the handler always sees it; the
        // timer is armed before the submit, so that a fast handler's finish() always finds it.
        // the task's execution_timeout, else the type's default, capped by the type's maximum
        limit = runner.limitFor(task).orElse(null);
        if (limit != null) {
            task.deadline(Instant.now().plus(limit.duration()));
            timer = runner.ctx().timers.schedule(this::timeOut, limit.duration().toMillis(), TimeUnit.MILLISECONDS);
        }
        try {
            future = runner.executor().submit(this::execute);
        } catch (RuntimeException e) {
            settled.set(true);
            finish();
            throw e;
        }
    }

    private void execute() {
        if (settled.get()) {
            return; // timed out (or the worker gave up on it) before it got a thread
        }
        thread = Thread.currentThread();
        Tracing.Span span = Tracing.startConsumer("baton.process " + task.taskType(), task.traceparent().orElse(null),
                task.tracestate().orElse(null),
                "baton.namespace", task.namespace(), "baton.task_type", task.taskType(),
                "baton.task_id", task.taskId(), "baton.attempt", Integer.toString(task.attempt()));
        Throwable error = null;
        try {
            runner.handler().handle(task);
        } catch (Throwable t) {
            error = t;
        } finally {
            span.end(error);
            thread = null;
        }
        // no interrupt into the Redis calls below (their retry pauses sleep); a late one from our
        // own timeout or lost lease is cleared by the executor before the thread's next task
        Thread.interrupted();
        if (settled.compareAndSet(false, true)) {
            // The outcome is queued (ack) or recorded (fail) before the attempt stops counting as
            // running: a graceful shutdown waits for running attempts, then sends the queued acks.
            try {
                if (error == null) {
                    runner.acks().add(task.taskId(), task.streamId());
                } else {
                    runner.fail(task, Failure.of(error));
                }
            } finally {
                finish();
            }
        }
    }

    private void timeOut() {
        if (!settled.compareAndSet(false, true)) {
            return;
        }
        Thread stuck = thread;
        String message = limit.message();
        String stack = Failure.stackOf(stuck, "dev.baton.TimeoutException: " + message + "; the handler was at:");
        Future<?> f = future;
        if (f != null) {
            f.cancel(true);
        }
        finish();
        runner.ctx().counters.timedOut.increment();
        runner.ctx().background.execute(() -> runner.fail(task,
                new Failure("timeout", message, stack)));
    }

    /**
     * The lease was taken back (the heartbeat no longer holds it; the task may already run
     * elsewhere): stop working on it. The handler is interrupted and its result dropped.
     */
    void lose() {
        if (!settled.compareAndSet(false, true)) {
            return;
        }
        Future<?> f = future;
        if (f != null) {
            f.cancel(true);
        }
        finish();
        runner.ctx().counters.lost.increment();
        WorkerContext.LOG.log(System.Logger.Level.WARNING, "lease of " + task + " was taken back; handler interrupted");
    }

    /**
     * Interrupts a handler still running at the end of a shutdown's grace period. Its outcome is
     * dropped (no ack, no fail): the task is left to its lease and runs again elsewhere.
     */
    void abandon() {
        if (!settled.compareAndSet(false, true)) {
            return;
        }
        Future<?> f = future;
        if (f != null) {
            f.cancel(true);
        }
        finish();
    }

    private void finish() {
        ScheduledFuture<?> t = timer;
        if (t != null) {
            t.cancel(false);
        }
        runner.finished(this);
    }
}
