package dev.baton;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import java.math.BigDecimal;
import java.math.BigInteger;
import java.net.InetAddress;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

class WorkerTest extends Fixtures {
    /** A payload class that declares one field; the others must survive a round trip. */
    static final class Order extends ExtensibleObject {
        public BigInteger id;
    }

    @Test
    void consumerNameHasServiceHostPidRandomSuffixAndLanguage() throws Exception {
        String prefix = "worker:" + InetAddress.getLocalHost().getHostName() + ":" + ProcessHandle.current().pid() + ":";
        try (Worker w = worker().build(); Worker other = worker().build();
                Worker custom = worker().consumerName("my-consumer").build()) {
            String name = w.consumerName();
            assertTrue(name.startsWith(prefix), name);
            assertTrue(name.substring(prefix.length()).matches("[0-9a-f]{6}:java"), name);
            assertNotEquals(name, other.consumerName());
            assertEquals("my-consumer", custom.consumerName());
        }
    }

    @Test
    void deliversTheDocumentExactlyAndPreservesUnknownFields() throws Exception {
        String ns = newNamespace();
        String payload = "{\"id\": 123456789012345678901234567890, \"price\": 1.10, \"note\": {\"x\": [1, 2.50]}}";
        LinkedBlockingQueue<Task> got = new LinkedBlockingQueue<>();
        try (BatonClient c = client(); Worker w = worker().build()) {
            EnqueueResult r = c.enqueue(TaskRequest.builder(ns, "orders").payloadJson(payload).maxRetry(7)
                    .executionTimeout(Duration.ofSeconds(600)).extra("x_future", List.of(1, "two"))
                    .traceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01").header("who", "test")
                    .build());
            w.handle(ns, "orders", got::add);
            w.start();
            Task t = got.poll(30, TimeUnit.SECONDS);
            assertEquals(r.taskId(), t.taskId());
            assertEquals(ns, t.namespace());
            assertEquals("orders", t.taskType());
            assertEquals(payload, t.payloadText());
            assertEquals(7, t.maxRetry());
            assertEquals(Duration.ofSeconds(600), t.executionTimeout().orElseThrow());
            assertEquals(1, t.attempt());
            assertTrue(Math.abs(t.createdAt() - System.currentTimeMillis() / 1000) < 60);
            assertEquals("[1,\"two\"]", t.extra().get("x_future").toString());
            assertEquals("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", t.traceparent().orElseThrow());
            assertEquals("test", t.header("who").orElseThrow());
            JsonNode tree = t.payloadTree();
            assertEquals(new BigInteger("123456789012345678901234567890"), tree.get("id").bigIntegerValue());
            assertEquals(new BigDecimal("1.10"), tree.get("price").decimalValue());
            Order o = t.payloadAs(Order.class);
            assertEquals(new BigInteger("123456789012345678901234567890"), o.id);
            assertEquals("{\"id\":123456789012345678901234567890,\"price\":1.10,\"note\":{\"x\":[1,2.50]}}",
                    Json.mapper().writeValueAsString(o));
            waitFor(Duration.ofSeconds(30), "done", () -> isDone(ns, r.taskId()));

            // a Java consumer that re-enqueues passes every field on, known or not
            EnqueueResult again = c.enqueue(TaskRequest.from(t).build());
            Task t2 = got.poll(30, TimeUnit.SECONDS);
            assertEquals(again.taskId(), t2.taskId());
            assertEquals(payload, t2.payloadText());
            assertEquals(t.extra(), t2.extra());
            assertEquals(7, t2.maxRetry());
        }
    }

    @Test
    void failuresRetryWithTheJavaStackThenDeadLetter() throws Exception {
        String ns = newNamespace();
        List<Integer> attempts = new CopyOnWriteArrayList<>();
        try (BatonClient c = client(); Worker w = worker().build()) {
            String id = c.enqueue(TaskRequest.builder(ns, "flaky").maxRetry(2).build()).taskId();
            w.handle(ns, "flaky", t -> {
                attempts.add(t.attempt());
                throw new IllegalStateException("refused on attempt " + t.attempt());
            });
            w.start();
            waitFor(Duration.ofSeconds(60), "dead", () -> String.valueOf(record(ns, id)).startsWith("dead|"));
            assertEquals(List.of(1, 2, 3), attempts);
            JsonNode errs = errors(ns, id);
            assertEquals(3, errs.size());
            for (int i = 0; i < 3; i++) {
                JsonNode e = errs.get(i);
                assertEquals("error", e.get("kind").asText());
                assertEquals("java.lang.IllegalStateException: refused on attempt " + (i + 1), e.get("error").asText());
                assertTrue(e.get("stack").asText().contains("\tat dev.baton.WorkerTest.lambda$"), e.get("stack").asText());
                assertEquals(w.consumerName(), e.get("worker").asText());
            }
            waitFor(Duration.ofSeconds(10), "stats", () -> w.stats().dead() == 1);
            assertEquals(2, w.stats().retried());
        }
    }

    @Test
    void nonRetryableDiesAtOnce() throws Exception {
        String ns = newNamespace();
        AtomicInteger runs = new AtomicInteger();
        try (BatonClient c = client(); Worker w = worker().build()) {
            String id = c.enqueue(TaskRequest.builder(ns, "bad").maxRetry(5).build()).taskId();
            w.handle(ns, "bad", t -> {
                runs.incrementAndGet();
                throw new NonRetryableException("cannot ever work", new IllegalArgumentException("root"));
            });
            w.start();
            waitFor(Duration.ofSeconds(30), "dead", () -> String.valueOf(record(ns, id)).startsWith("dead|"));
            JsonNode e = errors(ns, id).get(0);
            assertEquals("non_retryable", e.get("kind").asText());
            assertTrue(e.get("stack").asText().contains("Caused by: java.lang.IllegalArgumentException: root"));
            assertEquals(1, runs.get());
        }
    }

    @Test
    void undecodablePayloadIsFailedAsMalformedNeverDropped() throws Exception {
        String ns = newNamespace();
        // Lua only checks the braces; this text is not JSON, so the worker must bury it with the reason
        redis.cli().fcall("baton_v2_enqueue", keysOf(ns, "raw"), List.of("1", "m1", "{not json}", "3", "0",
                "1722489600", "", "", "0", "", "0"));
        AtomicInteger runs = new AtomicInteger();
        try (Worker w = worker().build()) {
            w.handle(ns, "raw", t -> runs.incrementAndGet());
            w.start();
            waitFor(Duration.ofSeconds(30), "dead", () -> String.valueOf(record(ns, "m1")).startsWith("dead|"));
            JsonNode e = errors(ns, "m1").get(0);
            assertEquals("malformed", e.get("kind").asText());
            assertTrue(e.get("error").asText().contains("payload: not valid JSON"), e.get("error").asText());
            assertEquals(0, runs.get());
            assertEquals(1, w.stats().malformed());
        }
    }

    static List<String> keysOf(String ns, String type) {
        return List.of(key(ns, "stream:" + type), key(ns, "scheduled:" + type), key(ns, "tasks"), key(ns, "bodies"),
                key(ns, "events"), key(ns, "types"), key(ns, "done"), key(ns, "ended"), key(ns, "config"));
    }

    @Test
    void concurrencyPerTypeIsRespectedAndAcksAreBatched() throws Exception {
        String ns = newNamespace();
        AtomicInteger now = new AtomicInteger();
        AtomicInteger peak = new AtomicInteger();
        ConcurrentHashMap<String, Boolean> seen = new ConcurrentHashMap<>();
        try (BatonClient c = client(); Worker w = worker().build()) {
            List<TaskRequest> reqs = new java.util.ArrayList<>();
            for (int i = 0; i < 200; i++) {
                reqs.add(TaskRequest.builder(ns, "bulk").payloadJson("{\"i\":" + i + "}").build());
            }
            List<EnqueueResult> rs = c.enqueueAll(reqs);
            w.handle(ns, "bulk", t -> {
                int n = now.incrementAndGet();
                peak.accumulateAndGet(n, Math::max);
                Thread.sleep(2);
                seen.put(t.taskId(), true);
                now.decrementAndGet();
            }, HandlerOptions.DEFAULT.withConcurrency(3));
            w.start();
            waitFor(Duration.ofSeconds(60), "all done", () -> rs.stream().allMatch(r -> isDone(ns, r.taskId())));
            assertEquals(200, seen.size());
            assertTrue(peak.get() <= 3, "peak " + peak.get());
            waitFor(Duration.ofSeconds(10), "stats", () -> w.stats().succeeded() == 200);
            long ackEvents = redis.cli().xrange(key(ns, "events"), (redis.clients.jedis.StreamEntryID) null,
                    (redis.clients.jedis.StreamEntryID) null).stream()
                    .filter(e -> "done".equals(e.getFields().get("to"))).count();
            assertTrue(ackEvents >= 1 && ackEvents <= 200, "ack calls " + ackEvents);
        }
    }

    @Test
    void heartbeatsKeepALongTaskFromBeingReclaimed() throws Exception {
        String ns = newNamespace();
        AtomicInteger runs = new AtomicInteger();
        try (BatonClient c = client(); Worker w = worker().build()) {
            String id = c.enqueue(TaskRequest.builder(ns, "long").build()).taskId();
            w.handle(ns, "long", t -> {
                runs.incrementAndGet();
                Thread.sleep(3500); // 3.5 leases of 1 s: only heartbeats keep it
            }, HandlerOptions.DEFAULT.withLease(Duration.ofSeconds(1)));
            w.start();
            waitFor(Duration.ofSeconds(60), "done", () -> isDone(ns, id));
            assertEquals(1, runs.get());
            assertTrue(errors(ns, id).isEmpty(), "no lease_expired error");
        }
    }
}
