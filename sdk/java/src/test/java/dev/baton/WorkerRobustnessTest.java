package dev.baton;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/** What the worker does when its own machinery misbehaves: a refusing executor, timers, counters. */
class WorkerRobustnessTest extends Fixtures {
    @Test
    void anExecutorThatRefusesATaskFailsThatAttemptAndTheTypeKeepsConsuming() throws Exception {
        String ns = newNamespace();
        AtomicInteger submits = new AtomicInteger();
        ThreadPoolExecutor pool = new ThreadPoolExecutor(4, 4, 1, TimeUnit.SECONDS, new LinkedBlockingQueue<>()) {
            @Override
            public void execute(Runnable r) {
                if (submits.getAndIncrement() == 0) {
                    throw new RejectedExecutionException("queue full");
                }
                super.execute(r);
            }
        };
        try (BatonClient c = client(); Worker w = worker().build()) {
            String first = c.enqueue(TaskRequest.builder(ns, "job").maxRetry(3).build()).taskId();
            w.handle(ns, "job", t -> { }, HandlerOptions.DEFAULT.withExecutor(pool));
            w.start();
            waitFor(Duration.ofSeconds(30), "first done on its retry", () -> isDone(ns, first));
            String second = c.enqueue(TaskRequest.builder(ns, "job").build()).taskId();
            waitFor(Duration.ofSeconds(30), "second done", () -> isDone(ns, second));
            // the refused attempt was failed and retried (its error history left with it when it was done);
            // a task is done in Redis a moment before the worker thread counts it
            waitFor(Duration.ofSeconds(10), "both successes counted", () -> w.stats().succeeded() == 2);
            assertEquals(1, w.stats().retried());
            assertEquals(2, w.stats().succeeded());
            assertEquals(0L, redis.cli().xpending(key(ns, "stream:job"), "baton").getTotal());
        } finally {
            pool.shutdownNow();
        }
    }

    @Test
    void finishedAttemptsLeaveNoTimeoutTimerBehind() throws Exception {
        String ns = newNamespace();
        try (BatonClient c = client(); Worker w = worker().build()) {
            w.handle(ns, "quick", t -> { });
            w.start();
            List<TaskRequest> reqs = new ArrayList<>();
            for (int i = 0; i < 100; i++) {
                reqs.add(TaskRequest.builder(ns, "quick").executionTimeout(Duration.ofHours(1)).build());
            }
            List<EnqueueResult> sent = c.enqueueAll(reqs);
            waitFor(Duration.ofSeconds(60), "all done", () -> sent.stream().allMatch(r -> isDone(ns, r.taskId())));
            // what stays: the type's heartbeat and maintenance schedules and the partition-count
            // watcher; not 100 one-hour timers, each pinning a finished task and its payload until
            // its deadline
            waitFor(Duration.ofSeconds(10), "timers cancelled and removed", () -> w.pendingTimers() <= 3);
        }
    }

    @Test
    void statsCountOnlyOutcomesThatWereRecorded() throws Exception {
        String ns = newNamespace();
        CountDownLatch started = new CountDownLatch(2);
        CountDownLatch release = new CountDownLatch(1);
        try (BatonClient c = client()) {
            String ok = c.enqueue(TaskRequest.builder(ns, "job").payloadJson("{\"ok\":true}").build()).taskId();
            String bad = c.enqueue(TaskRequest.builder(ns, "job").payloadJson("{\"ok\":false}").build()).taskId();
            Worker w = worker().build();
            w.handle(ns, "job", t -> {
                started.countDown();
                release.await();
                if (!t.payloadTree().get("ok").asBoolean()) {
                    throw new IllegalStateException("boom");
                }
            });
            w.start();
            assertTrue(started.await(30, TimeUnit.SECONDS));
            // both tasks are deleted while they run: the ack answers "gone", the fail "stale"
            redis.cli().hdel(key(ns, "tasks"), ok, bad);
            release.countDown();
            w.shutdown(Duration.ofSeconds(20)); // waits for both outcomes to be sent
            assertEquals(new WorkerStats(0, 0, 0, 0, 0, 0, 0), w.stats());
        }
    }

    @Test
    void manyIdleTypesDoNotStarveThePool() throws Exception {
        String ns = newNamespace();
        // 70 idle types: 70 fetch loops each holding a connection in an 8 s XREAD BLOCK
        try (BatonClient c = client();
             Worker w = Worker.builder(redis.url()).idleBlock(Duration.ofSeconds(8)).build()) {
            for (int i = 0; i < 70; i++) {
                w.handle(ns, "type" + i, t -> { });
            }
            w.start();
            Thread.sleep(1000); // every loop is blocked now
            long t0 = System.nanoTime();
            String id = c.enqueue(TaskRequest.builder(ns, "type69").build()).taskId();
            waitFor(Duration.ofSeconds(30), "done", () -> isDone(ns, id));
            long ms = (System.nanoTime() - t0) / 1_000_000;
            assertTrue(ms < 4000, "took " + ms + " ms (waiting for a pooled connection?)");
        }
    }
}
