package dev.baton;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/** execution_timeout is enforced: the attempt fails at the deadline and the handler is interrupted. */
class TimeoutTest extends Fixtures {
    @Test
    void aSleepingHandlerIsInterruptedAndTheAttemptFailsAsTimeout() throws Exception {
        String ns = newNamespace();
        AtomicBoolean interrupted = new AtomicBoolean();
        AtomicLong startedMs = new AtomicLong();
        CountDownLatch ended = new CountDownLatch(1);
        try (BatonClient c = client(); Worker w = worker().build()) {
            String id = c.enqueue(TaskRequest.builder(ns, "slow").maxRetry(0)
                    .executionTimeout(Duration.ofSeconds(1)).build()).taskId();
            w.handle(ns, "slow", t -> {
                startedMs.set(System.currentTimeMillis());
                assertTrue(t.deadline().isPresent());
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
            waitFor(Duration.ofSeconds(30), "dead", () -> String.valueOf(record(ns, id)).startsWith("dead|"));
            assertTrue(ended.await(30, TimeUnit.SECONDS));
            assertTrue(interrupted.get(), "the handler thread was interrupted");
            JsonNode errs = errors(ns, id);
            assertEquals(1, errs.size());
            JsonNode e = errs.get(0);
            assertEquals("timeout", e.get("kind").asText());
            assertEquals("execution_timeout of 1 s exceeded", e.get("error").asText());
            assertTrue(e.get("stack").asText().contains("Thread.sleep("), e.get("stack").asText());
            long recordedAfter = e.get("at_ms").asLong() - startedMs.get();
            assertTrue(recordedAfter >= 900 && recordedAfter < 30_000, "recorded " + recordedAfter + " ms after start");
            assertEquals(1, w.stats().timedOut());
        }
    }

    @Test
    void aHandlerIgnoringInterruptsLosesItsResultAndSlot() throws Exception {
        String ns = newNamespace();
        AtomicInteger runs = new AtomicInteger();
        CountDownLatch release = new CountDownLatch(1);
        try (BatonClient c = client(); Worker w = worker().build()) {
            String spinning = c.enqueue(TaskRequest.builder(ns, "ignores_interrupts").maxRetry(0)
                    .executionTimeout(Duration.ofSeconds(1)).payloadJson("{\"spin\":true}").build()).taskId();
            w.handle(ns, "ignores_interrupts", t -> {
                runs.incrementAndGet();
                if (t.payloadTree().path("spin").asBoolean()) {
                    while (release.getCount() > 0) { // busy loop: ignores interrupts
                        Thread.onSpinWait();
                    }
                }
            }, HandlerOptions.DEFAULT.withConcurrency(1));
            w.start();
            waitFor(Duration.ofSeconds(30), "dead", () -> String.valueOf(record(ns, spinning)).startsWith("dead|"));
            // the slot was freed at the deadline: the next task runs while the abandoned handler spins
            String next = c.enqueue(TaskRequest.builder(ns, "ignores_interrupts").build()).taskId();
            waitFor(Duration.ofSeconds(30), "next done", () -> isDone(ns, next));
            release.countDown();
            assertEquals(2, runs.get());
            assertTrue(String.valueOf(record(ns, spinning)).startsWith("dead|"), "the late success was not acked");
        }
    }
}
