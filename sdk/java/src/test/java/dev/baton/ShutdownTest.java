package dev.baton;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
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
    void shutdownHookIsRegistered() throws Exception {
        String ns = newNamespace();
        try (Worker w = worker().build()) {
            w.handle(ns, "job", t -> { });
            Thread hook = w.installShutdownHook(Duration.ofSeconds(5));
            assertTrue(Runtime.getRuntime().removeShutdownHook(hook), "hook was installed");
        }
    }
}
