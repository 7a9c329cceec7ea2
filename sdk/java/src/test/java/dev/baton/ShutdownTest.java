package dev.baton;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.Test;

class ShutdownTest extends Fixtures {
    @Test
    void runningAttemptsFinishAndAreAckedThenNothingMoreIsFetched() throws Exception {
        String ns = newNamespace();
        CountDownLatch started = new CountDownLatch(1);
        try (BatonClient c = client()) {
            String id = c.enqueue(TaskRequest.builder(ns, "job").build()).taskId();
            Worker w = worker().build();
            w.handle(ns, "job", t -> {
                started.countDown();
                Thread.sleep(1000);
            });
            w.start();
            assertTrue(started.await(30, TimeUnit.SECONDS));
            w.shutdown(Duration.ofSeconds(20));
            assertTrue(isDone(ns, id), "the running attempt was acked before shutdown returned");
            String later = c.enqueue(TaskRequest.builder(ns, "job").build()).taskId();
            Thread.sleep(500);
            assertEquals("queued", record(ns, later).split("\\|")[0]);
            assertEquals(0L, redis.cli().xpending(key(ns, "stream:job"), "baton").getTotal());
            w.shutdown(Duration.ofSeconds(1)); // idempotent
        }
    }

    @Test
    void afterTheGraceARunningAttemptIsInterruptedAndLeftToItsLeaseWithoutAFailure() throws Exception {
        String ns = newNamespace();
        CountDownLatch started = new CountDownLatch(1);
        CountDownLatch ended = new CountDownLatch(1);
        AtomicBoolean interrupted = new AtomicBoolean();
        try (BatonClient c = client()) {
            String id = c.enqueue(TaskRequest.builder(ns, "long").maxRetry(0).build()).taskId();
            Worker w = worker().build();
            w.handle(ns, "long", t -> {
                started.countDown();
                try {
                    Thread.sleep(60_000);
                } catch (InterruptedException e) {
                    interrupted.set(true);
                    throw e;
                } finally {
                    ended.countDown();
                }
            });
            w.start();
            assertTrue(started.await(30, TimeUnit.SECONDS));
            String leased = record(ns, id);
            w.shutdown(Duration.ofMillis(300));
            assertTrue(ended.await(10, TimeUnit.SECONDS));
            assertTrue(interrupted.get(), "the handler was interrupted");
            Thread.sleep(300); // room for a (wrong) late fail to land
            assertEquals(0, errors(ns, id).size(), "no failure recorded: " + errors(ns, id));
            assertEquals(leased, record(ns, id), "the task record is untouched");
            assertEquals(1L, redis.cli().xpending(key(ns, "stream:long"), "baton").getTotal(), "still leased");
            assertEquals(0, w.stats().failed());
        }
    }

    @Test
    void shutdownDuringARedisOutageKeepsToItsGrace() throws Exception {
        String ns = newNamespace();
        Worker w = worker().build();
        for (String type : new String[] {"a", "b", "c"}) {
            w.handle(ns, type, t -> { });
        }
        w.start();
        Thread.sleep(500);
        redis.stopProcess();
        try {
            Thread.sleep(300); // every loop is now reconnecting
            long t0 = System.nanoTime();
            w.shutdown(Duration.ofSeconds(1));
            long ms = (System.nanoTime() - t0) / 1_000_000;
            assertTrue(ms < 6000, "shutdown took " + ms + " ms with a 1 s grace");
        } finally {
            redis.restart();
        }
    }

    @Test
    void shutdownHookIsRegistered() throws Exception {
        String ns = newNamespace();
        try (Worker w = worker().build()) {
            w.handle(ns, "job", t -> { });
            Thread hook = w.installShutdownHook(Duration.ofSeconds(5));
            assertTrue(Runtime.getRuntime().removeShutdownHook(hook), "hook was installed");
        }
    }
}
