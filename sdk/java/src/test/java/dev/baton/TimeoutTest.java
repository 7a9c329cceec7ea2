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

    /** A task without execution_timeout is stopped at its type's default, like one with its own. */
    @Test
    void aTaskWithoutTimeoutIsStoppedAtTheTypesDefault() throws Exception {
        String ns = newNamespace();
        AtomicBoolean interrupted = new AtomicBoolean();
        AtomicLong startedMs = new AtomicLong();
        try (BatonClient c = client(); Worker w = worker().build()) {
            String id = c.enqueue(TaskRequest.builder(ns, "hangs").maxRetry(0).build()).taskId();
            w.handle(ns, "hangs", t -> {
                startedMs.set(System.currentTimeMillis());
                assertTrue(t.executionTimeout().isEmpty(), "the task itself has none");
                assertTrue(t.deadline().isPresent(), "the default gives the attempt a deadline");
                try {
                    Thread.sleep(60_000);
                } catch (InterruptedException e) {
                    interrupted.set(true);
                    throw e;
                }
            }, HandlerOptions.DEFAULT.withDefaultExecutionTimeout(Duration.ofSeconds(1)));
            w.start();
            waitFor(Duration.ofSeconds(30), "dead", () -> String.valueOf(record(ns, id)).startsWith("dead|"));
            waitFor(Duration.ofSeconds(10), "interrupt", interrupted::get);
            JsonNode e = errors(ns, id).get(0);
            assertEquals("timeout", e.get("kind").asText());
            assertEquals("execution timeout of 1 s exceeded (the worker's default for this type: the task has no "
                    + "execution_timeout)", e.get("error").asText());
            long recordedAfter = e.get("at_ms").asLong() - startedMs.get();
            assertTrue(recordedAfter >= 900 && recordedAfter < 30_000, "recorded " + recordedAfter + " ms after start");
            assertEquals(1, w.stats().timedOut());
        }
    }

    /** The task's own execution_timeout wins over the default; the cap limits even the task's own. */
    @Test
    void theTasksOwnTimeoutBeatsTheDefaultAndTheCapBeatsBoth() throws Exception {
        String ns = newNamespace();
        try (BatonClient c = client(); Worker w = worker().build()) {
            // own 1 s under a 3600 s default: stopped at 1 s
            String own = c.enqueue(TaskRequest.builder(ns, "own").maxRetry(0)
                    .executionTimeout(Duration.ofSeconds(1)).build()).taskId();
            // own 3600 s under a 1 s cap: stopped at 1 s
            String capped = c.enqueue(TaskRequest.builder(ns, "capped").maxRetry(0)
                    .executionTimeout(Duration.ofSeconds(3600)).build()).taskId();
            // none, no default, 1 s cap: stopped at 1 s
            String none = c.enqueue(TaskRequest.builder(ns, "capped").maxRetry(0).build()).taskId();
            TaskHandler sleeps = t -> Thread.sleep(60_000);
            w.handle(ns, "own", sleeps, HandlerOptions.DEFAULT.withDefaultExecutionTimeout(Duration.ofSeconds(3600)));
            w.handle(ns, "capped", sleeps, HandlerOptions.DEFAULT.withMaxExecutionTimeout(Duration.ofSeconds(1)));
            w.start();
            for (String id : new String[] {own, capped, none}) {
                String ns0 = ns;
                waitFor(Duration.ofSeconds(30), "dead " + id, () -> String.valueOf(record(ns0, id)).startsWith("dead|"));
            }
            assertEquals("execution_timeout of 1 s exceeded", errors(ns, own).get(0).get("error").asText());
            assertEquals("execution timeout of 1 s exceeded (the worker's cap for this type)",
                    errors(ns, capped).get(0).get("error").asText());
            assertEquals("execution timeout of 1 s exceeded (the worker's cap for this type)",
                    errors(ns, none).get(0).get("error").asText());
            assertEquals(3, w.stats().timedOut());
        }
    }

    @Test
    void limitsAreWholeSecondsWithinTheContractsRange() {
        for (Duration bad : new Duration[] {Duration.ofMillis(500), Duration.ofMillis(1500), Duration.ZERO,
                Duration.ofSeconds(-1), Duration.ofSeconds(86401)}) {
            BatonException e = org.junit.jupiter.api.Assertions.assertThrows(BatonException.class,
                    () -> HandlerOptions.DEFAULT.withDefaultExecutionTimeout(bad));
            assertEquals(ErrorCode.INVALID_ARGUMENT, e.code());
            assertEquals("default_execution_timeout", e.field());
            e = org.junit.jupiter.api.Assertions.assertThrows(BatonException.class,
                    () -> HandlerOptions.DEFAULT.withMaxExecutionTimeout(bad));
            assertEquals("max_execution_timeout", e.field());
        }
        assertEquals(Duration.ofHours(24),
                HandlerOptions.DEFAULT.withDefaultExecutionTimeout(Duration.ofHours(24)).defaultExecutionTimeout());
    }
}
