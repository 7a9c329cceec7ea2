package dev.baton;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

class ReconnectTest extends Fixtures {
    @Test
    void theWorkerRidesOutARedisRestart() throws Exception {
        String ns = newNamespace();
        try (Worker w = worker().build()) {
            w.handle(ns, "job", t -> { });
            w.start();
            try (BatonClient c = client()) {
                String first = c.enqueue(TaskRequest.builder(ns, "job").build()).taskId();
                waitFor(Duration.ofSeconds(30), "first done", () -> isDone(ns, first));
            }
            redis.restart(); // empty again, library reloaded, same port
            try (BatonClient c = client()) {
                String second = c.enqueue(TaskRequest.builder(ns, "job").build()).taskId();
                waitFor(Duration.ofSeconds(60), "second done after reconnect", () -> isDone(ns, second));
            }
        }
        }

    @Test
    void aHandlerFinishingDuringARedisOutageIsAckedAfterIt() throws Exception {
        String ns = newNamespace();
        CountDownLatch started = new CountDownLatch(1);
        CountDownLatch release = new CountDownLatch(1);
        AtomicInteger runs = new AtomicInteger();
        try (BatonClient c = client(); Worker w = worker().build()) {
            String id = c.enqueue(TaskRequest.builder(ns, "job").build()).taskId();
            w.handle(ns, "job", t -> {
                runs.incrementAndGet();
                started.countDown();
                release.await();
            });
            w.start();
            assertTrue(started.await(30, TimeUnit.SECONDS));
            redis.pause(); // calls hang, then time out: the outage the worker sees
            try {
                release.countDown();
                Thread.sleep(3000); // the ack is tried, times out and is retried
            } finally {
                redis.resume();
            }
            waitFor(Duration.ofSeconds(60), "done after the outage", () -> isDone(ns, id));
            assertEquals(1, runs.get());
            assertEquals(0, errors(ns, id).size());
            // the ack call that timed out ran when Redis woke up, so its retry finds the task gone:
            // still one success
            waitFor(Duration.ofSeconds(30), "the ack's reply", () -> w.stats().succeeded() == 1);
            Thread.sleep(300);
            assertEquals(1, w.stats().succeeded());
        }
    }
}
