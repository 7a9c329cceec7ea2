package dev.baton;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import redis.clients.jedis.resps.StreamEntry;

class ProducerTest extends Fixtures {
    @Test
    void enqueueWritesTheTwoFieldEntryWithExactPayload() {
        String ns = newNamespace();
        String payload = "{\"n\": 123456789012345678901234567890, \"p\": 1.10, \"s\": \"二 🚀\"}";
        long before = System.currentTimeMillis();
        try (BatonClient c = client()) {
            EnqueueResult r = c.enqueue(TaskRequest.builder(ns, "mail").payloadJson(payload).maxRetry(5)
                    .executionTimeout(Duration.ofSeconds(30)).extra("x_new", Map.of("k", 1)).build());
            assertEquals(EnqueueStatus.QUEUED, r.status());
            assertTrue(r.created());
            long ts = UuidV7.timestamp(r.taskId());
            assertTrue(ts >= before && ts <= System.currentTimeMillis());
            List<StreamEntry> entries = redis.cli().xrange(key(ns, "stream:mail"), (redis.clients.jedis.StreamEntryID) null,
                    (redis.clients.jedis.StreamEntryID) null);
            assertEquals(1, entries.size());
            assertEquals(r.detail(), entries.get(0).getID().toString());
            String task = entries.get(0).getFields().get("task");
            long createdAt = Long.parseLong(task.split("\\|")[3]);
            assertTrue(Math.abs(createdAt - before / 1000) <= 5, "created_at in seconds: " + task);
            assertEquals(r.taskId() + "|5|0|" + createdAt + "|30|0|{\"x_new\":{\"k\":1}}", task);
            assertEquals(payload, entries.get(0).getFields().get("payload"));
            assertEquals("queued|mail|0|" + r.detail(), record(ns, r.taskId()));
        }
    }

    @Test
    void sameIdIsADuplicateAndDelayedIsScheduled() {
        String ns = newNamespace();
        try (BatonClient c = client()) {
            TaskRequest req = TaskRequest.builder(ns, "t").taskId("order-42").build();
            assertEquals(EnqueueStatus.QUEUED, c.enqueue(req).status());
            EnqueueResult dup = c.enqueue(req);
            assertEquals(EnqueueStatus.DUPLICATE, dup.status());
            assertEquals("queued", dup.detail());
            EnqueueResult later = c.enqueue(TaskRequest.builder(ns, "t").delay(Duration.ofSeconds(60)).build());
            assertEquals(EnqueueStatus.SCHEDULED, later.status());
            assertTrue(Long.parseLong(later.detail()) > System.currentTimeMillis() + 50_000);
        }
    }

    @Test
    void uniqueKeyConflicts() {
        String ns = newNamespace();
        try (BatonClient c = client()) {
            EnqueueResult a = c.enqueue(TaskRequest.builder(ns, "t").uniqueKey("daily", Duration.ofMinutes(1)).build());
            EnqueueResult b = c.enqueue(TaskRequest.builder(ns, "t").uniqueKey("daily", Duration.ofMinutes(1)).build());
            assertEquals(EnqueueStatus.QUEUED, a.status());
            assertEquals(EnqueueStatus.UNIQUE_CONFLICT, b.status());
            assertEquals(a.taskId(), b.detail());
        }
    }

    @Test
    void enqueueAllKeepsOrderAcrossTypesAndAsyncWorks() throws Exception {
        String ns = newNamespace();
        try (BatonClient c = client()) {
            List<TaskRequest> reqs = List.of(TaskRequest.builder(ns, "a").taskId("x1").build(),
                    TaskRequest.builder(ns, "a").taskId("x2").build(), TaskRequest.builder(ns, "b").taskId("x3").build(),
                    TaskRequest.builder(ns, "a").taskId("x1").build());
            List<EnqueueResult> out = c.enqueueAllAsync(reqs).get(30, TimeUnit.SECONDS);
            assertEquals(List.of("x1", "x2", "x3", "x1"), out.stream().map(EnqueueResult::taskId).toList());
            assertEquals(List.of(EnqueueStatus.QUEUED, EnqueueStatus.QUEUED, EnqueueStatus.QUEUED,
                    EnqueueStatus.DUPLICATE), out.stream().map(EnqueueResult::status).toList());
            assertEquals(2L, redis.cli().xlen(key(ns, "stream:a")));
            assertEquals(EnqueueStatus.QUEUED, c.enqueueAsync(TaskRequest.builder(ns, "b").build())
                    .get(30, TimeUnit.SECONDS).status());
        }
    }

    @Test
    void concurrentEnqueuesShareCallsAndEachGetsItsOwnOutcome() throws Exception {
        String ns = newNamespace();
        int threads = 8;
        int each = 200;
        long fcallsBefore = fcalls();
        try (BatonClient c = client()) {
            java.util.concurrent.ExecutorService pool = java.util.concurrent.Executors.newFixedThreadPool(threads);
            List<java.util.concurrent.Future<List<EnqueueResult>>> fs = new java.util.ArrayList<>();
            for (int t = 0; t < threads; t++) {
                int thread = t;
                fs.add(pool.submit(() -> {
                    List<EnqueueResult> mine = new java.util.ArrayList<>();
                    for (int i = 0; i < each; i++) {
                        String id = "t" + thread + "-" + (i % (each / 2)); // every id twice: 2nd is a duplicate
                        EnqueueResult r = c.enqueue(TaskRequest.builder(ns, "many").taskId(id).build());
                        assertEquals(id, r.taskId());
                        mine.add(r);
                    }
                    return mine;
                }));
            }
            int queued = 0;
            int duplicate = 0;
            for (var f : fs) {
                for (EnqueueResult r : f.get(60, TimeUnit.SECONDS)) {
                    if (r.status() == EnqueueStatus.QUEUED) {
                        queued++;
                    } else if (r.status() == EnqueueStatus.DUPLICATE) {
                        duplicate++;
                    }
                }
            }
            pool.shutdown();
            assertEquals(threads * each / 2, queued);
            assertEquals(threads * each / 2, duplicate);
            assertEquals((long) threads * each / 2, redis.cli().xlen(key(ns, "stream:many")));
            long calls = fcalls() - fcallsBefore; // the version check is FCALL_RO, not counted
            assertTrue(calls < threads * each, "8 threads, " + threads * each + " enqueues, " + calls + " calls");
        }
    }

    /** FCALLs the server has run (INFO commandstats). */
    static long fcalls() {
        for (String line : redis.cli().info("commandstats").split("\r?\n")) {
            if (line.startsWith("cmdstat_fcall:")) {
                return Long.parseLong(line.replaceAll(".*calls=(\\d+).*", "$1"));
            }
        }
        return 0;
    }

    @Test
    void badFieldsAreNamed() {
        assertField("max_retry", () -> TaskRequest.builder("n", "t").maxRetry(26).build());
        assertField("namespace", () -> TaskRequest.builder("n{x}", "t").build());
        assertField("task_type", () -> TaskRequest.builder("n", "a|b").build());
        assertField("task_id", () -> TaskRequest.builder("n", "t").taskId("-x").build());
        assertField("payload", () -> TaskRequest.builder("n", "t").payloadJson("[1]").build());
        assertField("payload", () -> TaskRequest.builder("n", "t").payloadJson("{\"a\":").build());
        assertField("payload", () -> TaskRequest.builder("n", "t")
                .payloadJson("{\"b\":\"" + "x".repeat(524288) + "\"}").build());
        assertField("execution_timeout", () -> TaskRequest.builder("n", "t")
                .executionTimeout(Duration.ofSeconds(0)).build());
        assertField("delay_seconds", () -> TaskRequest.builder("n", "t").delay(Duration.ofDays(400)).build());
        assertField("trace.traceparent", () -> TaskRequest.builder("n", "t").traceparent("x".repeat(257)).build());
        assertField("max_retry", () -> TaskRequest.builder("n", "t").extra("max_retry", 3).build());
        BatonException e = assertThrows(BatonException.class, () -> TaskRequest.builder("n", "t").maxRetry(-1).build());
        assertEquals("max_retry: must be an integer 0..25 (got -1)", e.getMessage());
    }

    private static void assertField(String field, org.junit.jupiter.api.function.Executable call) {
        BatonException e = assertThrows(BatonException.class, call);
        assertEquals(ErrorCode.INVALID_ARGUMENT, e.code());
        assertEquals(field, e.field(), e.getMessage());
        assertTrue(e.getMessage().startsWith(field + ": "), e.getMessage());
    }

    @Test
    void redisErrorsMapToContractCodes() {
        BatonException inv = BatonException.fromRedisError("BATON_INVALID max_retry (task 2): must be an integer 0..25", null);
        assertEquals(ErrorCode.INVALID_ARGUMENT, inv.code());
        assertEquals("max_retry (task 2)", inv.field());
        assertEquals(ErrorCode.CONFLICT, BatonException.fromRedisError("BATON_CONFLICT cannot", null).code());
        assertEquals(ErrorCode.RESOURCE_EXHAUSTED, BatonException.fromRedisError("OOM command not allowed", null).code());
        assertTrue(BatonException.fromRedisError("LOADING Redis is loading", null).retryable());
        assertEquals(ErrorCode.VERSION_MISMATCH,
                BatonException.fromRedisError("ERR Function not found", null).code());
        // by whole first word: BUSY is retryable, BUSYGROUP / BUSYKEY are not BUSY
        assertEquals(ErrorCode.UNAVAILABLE, BatonException.fromRedisError("BUSY Redis is busy running a script", null).code());
        assertEquals(ErrorCode.INTERNAL,
                BatonException.fromRedisError("BUSYGROUP Consumer Group name already exists", null).code());
        assertEquals(ErrorCode.INTERNAL, BatonException.fromRedisError("BUSYKEY Target key name already exists", null).code());
    }

    @Test
    void durationsAreWholeSecondsOrRefused() {
        // no silent truncation: 500 ms is not "no delay", 1.5 s is not 1 s
        assertField("delay_seconds", () -> TaskRequest.builder("n", "t").delay(Duration.ofMillis(500)).build());
        assertField("execution_timeout", () -> TaskRequest.builder("n", "t")
                .executionTimeout(Duration.ofMillis(1500)).build());
        assertField("unique_ttl_s", () -> TaskRequest.builder("n", "t")
                .uniqueKey("k", Duration.ofMillis(2500)).build());
        // a huge negative value must not wrap into range through an int cast
        assertField("execution_timeout", () -> TaskRequest.builder("n", "t")
                .executionTimeout(Duration.ofSeconds(-(1L << 32) + 5)).build());
        assertEquals(5, TaskRequest.builder("n", "t").executionTimeout(Duration.ofSeconds(5)).build().executionTimeout());
    }

    @Test
    void sendingTheSameRequestAgainIsIdempotent() {
        String ns = newNamespace();
        try (BatonClient c = client()) {
            TaskRequest req = TaskRequest.builder(ns, "t").build();
            assertTrue(req.taskId() != null, "the id is made by build()");
            EnqueueResult first = c.enqueue(req);
            EnqueueResult again = c.enqueue(req); // e.g. a retry after a timed-out call
            assertEquals(EnqueueStatus.QUEUED, first.status());
            assertEquals(EnqueueStatus.DUPLICATE, again.status());
            assertEquals(first.taskId(), again.taskId());
            assertEquals(List.of(EnqueueStatus.DUPLICATE), c.enqueueAll(List.of(req)).stream()
                    .map(EnqueueResult::status).toList());
        }
    }

    @Test
    void refusesAServerWithoutTheLibrary() throws Exception {
        try (RedisServer bare = RedisServer.start()) {
            bare.cli().functionFlush();
            BatonException e = assertThrows(BatonException.class, () -> BatonClient.connect(bare.url()));
            assertEquals(ErrorCode.VERSION_MISMATCH, e.code());
            assertTrue(e.getMessage().contains("run 'baton init'"), e.getMessage());
        }
    }

    @Test
    void unreachableRedisIsUnavailable() {
        BatonException e = assertThrows(BatonException.class, () -> BatonClient.connect("redis://127.0.0.1:1"));
        assertEquals(ErrorCode.UNAVAILABLE, e.code());
        assertTrue(e.retryable());
    }

    @Test
    void payloadBytesAreSentUnchanged() {
        String ns = newNamespace();
        byte[] payload = "{\"e\":\"\\u00e9\\ud83d\\ude80\",\"z\":-0.0}".getBytes(StandardCharsets.UTF_8);
        try (BatonClient c = client()) {
            c.enqueue(TaskRequest.builder(ns, "t").payload(payload).build());
        }
        String stored = redis.cli().xrange(key(ns, "stream:t"), (redis.clients.jedis.StreamEntryID) null,
                (redis.clients.jedis.StreamEntryID) null).get(0).getFields().get("payload");
        assertEquals(new String(payload, StandardCharsets.UTF_8), stored);
    }
}
