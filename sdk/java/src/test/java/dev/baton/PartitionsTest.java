package dev.baton;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.baton.internal.Partitions;
import dev.baton.internal.Threads;
import java.nio.file.Files;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import redis.clients.jedis.Protocol.Command;

/**
 * Namespace partitions (docs/cluster.md, "Partitions") on a real redis-server: the partition
 * rule against every case of contract/fixtures/partitions.json, tasks of a 4-partition namespace
 * landing in every partition and running once with the namespace the handler expects, duplicates
 * across a cache refresh, and a worker serving partitions added while it runs.
 */
@Timeout(60)
class PartitionsTest extends Fixtures {
    static final String PARTITIONS = "baton:v2:partitions";

    @Test
    void everyFixtureCaseGivesItsPartition() throws Exception {
        JsonNode f = Json.mapper().readTree(Files.readAllBytes(RedisServer.repo().resolve("contract/fixtures/partitions.json")));
        int checked = 0;
        for (JsonNode c : f.get("cases")) {
            String id = c.get("task_id").asText();
            assertEquals(c.get("fnv1a32").asLong(), Partitions.fnv1a32(id), "fnv1a32 of " + id);
            for (Map.Entry<String, JsonNode> e : c.get("partition").properties()) {
                assertEquals(e.getValue().asInt(), Partitions.of(id, Integer.parseInt(e.getKey())),
                        "partition of " + id + " among " + e.getKey());
                checked++;
            }
        }
        assertTrue(checked >= 20, "cases checked: " + checked);
        assertEquals("shop", Partitions.storage("shop", 0));
        assertEquals("shop:3", Partitions.storage("shop", 3));
        assertEquals(Partitions.of("a", 1024), Partitions.of("a", 5000)); // above the maximum: the maximum
    }

    @Test
    void everyStoredCountOfTheFixtureIsReadAsInEverySdk() throws Exception {
        JsonNode f = Json.mapper().readTree(Files.readAllBytes(RedisServer.repo().resolve("contract/fixtures/partitions.json")));
        int checked = 0;
        for (JsonNode c : f.get("counts")) {
            String stored = c.get("stored").isNull() ? null : c.get("stored").asText();
            assertEquals(c.get("count").asInt(), Partitions.parse("fixture", stored), "stored " + c.get("stored"));
            checked++;
        }
        assertTrue(checked >= 10, "counts checked: " + checked);
    }

    @Test
    void tasksSpreadOverFourPartitionsRunOnceAndStayDuplicates() throws Exception {
        String ns = newNamespace();
        redis.cli().hset(PARTITIONS, ns, "4");
        Map<String, AtomicInteger> ran = new ConcurrentHashMap<>();
        List<String> seenNs = new ArrayList<>();
        try (BatonClient c = BatonClient.connect(redis.url()); Worker w = worker().build()) {
            w.handle(ns, "job", t -> {
                if (!t.namespace().equals(ns)) {
                    synchronized (seenNs) {
                        seenNs.add(t.namespace());
                    }
                }
                ran.computeIfAbsent(t.taskId(), k -> new AtomicInteger()).incrementAndGet();
            });
            w.start();
            long t0 = System.nanoTime();
            List<String> ids = new ArrayList<>();
            for (int i = 0; i < 100; i++) {
                EnqueueResult r = c.enqueue(TaskRequest.builder(ns, "job").taskId("one-" + i).build());
                assertEquals(EnqueueStatus.QUEUED, r.status(), r.taskId());
                ids.add(r.taskId());
            }
            for (int b = 0; b < 4; b++) {
                List<TaskRequest> batch = new ArrayList<>();
                for (int i = 0; i < 25; i++) {
                    batch.add(TaskRequest.builder(ns, "job").taskId("batch-" + b + "-" + i).build());
                }
                for (EnqueueResult r : c.enqueueAll(batch)) {
                    assertEquals(EnqueueStatus.QUEUED, r.status(), r.taskId());
                    ids.add(r.taskId());
                }
            }
            int[] perPartition = new int[4];
            for (String id : ids) {
                int want = Partitions.of(id, 4);
                perPartition[want]++;
                for (int p = 0; p < 4; p++) {
                    assertEquals(p == want, stored(Partitions.storage(ns, p), id), id + " in partition " + p);
                }
            }
            for (int p = 0; p < 4; p++) {
                assertTrue(perPartition[p] > 0, "partition " + p + " got no task");
            }
            Fixtures.waitFor(Duration.ofSeconds(30), "200 tasks done", () -> ids.stream()
                    .allMatch(id -> isDone(Partitions.storage(ns, Partitions.of(id, 4)), id)));
            for (String id : ids) {
                assertEquals(1, ran.get(id).get(), id + " runs");
            }
            assertEquals(200, ran.size());
            assertEquals(List.of(), seenNs, "namespaces handlers saw other than " + ns);
            System.out.printf("PartitionsTest: 200 tasks over 4 partitions %s, all done in %d ms%n",
                    java.util.Arrays.toString(perPartition), (System.nanoTime() - t0) / 1_000_000);

            TaskRequest again = TaskRequest.builder(ns, "job").taskId("one-7").build();
            assertEquals(EnqueueStatus.DUPLICATE, c.enqueue(again).status());
            // after the producer's cached count expired (5 s) and was read again: still a duplicate
            long left = Partitions.REFRESH_NANOS + 300_000_000L - (System.nanoTime() - t0);
            if (left > 0) {
                Thread.sleep(left / 1_000_000);
            }
            assertEquals(EnqueueStatus.DUPLICATE, c.enqueue(again).status());
            assertEquals(List.of(EnqueueStatus.DUPLICATE, EnqueueStatus.DUPLICATE), c.enqueueAll(List.of(again,
                    TaskRequest.builder(ns, "job").taskId("batch-3-24").build())).stream().map(EnqueueResult::status).toList());
        }
    }

    @Test
    void aWorkerServesPartitionsAddedWhileItRuns() throws Exception {
        String ns = newNamespace();
        Map<String, AtomicInteger> ran = new ConcurrentHashMap<>();
        try (Worker w = worker().build()) {
            w.handle(ns, "job", t -> ran.computeIfAbsent(t.namespace() + "/" + t.taskId(), k -> new AtomicInteger())
                    .incrementAndGet());
            w.start(); // P = 1
            redis.cli().hset(PARTITIONS, ns, "3");
            long t0 = System.nanoTime();
            List<String> ids = new ArrayList<>();
            try (BatonClient c = BatonClient.connect(redis.url())) {
                for (int i = 0; i < 30; i++) {
                    ids.add(c.enqueue(TaskRequest.builder(ns, "job").taskId("grow-" + i).build()).taskId());
                }
            }
            int[] perPartition = new int[3];
            for (String id : ids) {
                int want = Partitions.of(id, 3);
                perPartition[want]++;
                assertTrue(stored(Partitions.storage(ns, want), id), id + " in partition " + want);
            }
            for (int p = 0; p < 3; p++) {
                assertTrue(perPartition[p] > 0, "partition " + p + " got no task");
            }
            Fixtures.waitFor(Duration.ofSeconds(12), "tasks of new partitions done", () -> ids.stream()
                    .allMatch(id -> isDone(Partitions.storage(ns, Partitions.of(id, 3)), id)));
            long ms = (System.nanoTime() - t0) / 1_000_000;
            System.out.printf("PartitionsTest: P 1 -> 3 while running: 30 tasks done %d ms after the change%n", ms);
            assertTrue(ms < 8000, "new partitions served after " + ms + " ms (the worker re-reads every 5 s)");
            for (String id : ids) {
                assertEquals(1, ran.get(ns + "/" + id).get(), id + " runs once, seen in namespace " + ns);
            }
        }
    }

    /** Whether the task is in the storage namespace: queued or running (tasks hash) or done. */
    static boolean stored(String storageNs, String id) {
        return redis.cli().hexists(key(storageNs, "tasks"), id) || isDone(storageNs, id);
    }

    /**
     * Callers that need a count at once share one HMGET (the server is frozen while they arrive);
     * once the count is due again, a read that fails fails the enqueue as unavailable, nothing
     * written: CLIENT PAUSE ALL holds the HMGET past the 2 s socket timeout and would have let a
     * following FCALL through at 2.6 s.
     */
    @Test
    void countReadsAreSharedAndAFailedDueReadFailsTheEnqueue() throws Exception {
        String ns = newNamespace();
        redis.cli().hset(PARTITIONS, ns, "2");
        redis.cli().configSet("slowlog-log-slower-than", "0");
        redis.cli().configSet("slowlog-max-len", "1000");
        redis.cli().slowlogReset();
        var pool = Threads.perTask("partitions-test");
        try (BatonClient c = BatonClient.connect(redis.url())) {
            int callers = 6;
            java.util.concurrent.CountDownLatch ready = new java.util.concurrent.CountDownLatch(callers);
            List<java.util.concurrent.CompletableFuture<EnqueueResult>> results = new ArrayList<>();
            redis.pause();
            try {
                for (int i = 0; i < callers; i++) {
                    TaskRequest r = TaskRequest.builder(ns, "type" + i).taskId("shared-" + i).build(); // one lane each
                    results.add(java.util.concurrent.CompletableFuture.supplyAsync(() -> {
                        ready.countDown();
                        return c.enqueue(r);
                    }, pool));
                }
                ready.await();
                Thread.sleep(300);
            } finally {
                redis.resume();
            }
            for (var r : results) {
                assertEquals(EnqueueStatus.QUEUED, r.get().status());
            }
            long readAt = System.nanoTime(); // the count was read before this
            assertEquals(1, partitionReads(), "HMGET " + PARTITIONS + " by " + callers + " callers at once");

            long left = Partitions.REFRESH_NANOS + 100_000_000L - (System.nanoTime() - readAt);
            if (left > 0) {
                Thread.sleep(left / 1_000_000);
            }
            redis.cli().sendCommand(Command.CLIENT, "PAUSE", "2600", "ALL");
            long paused = System.nanoTime();
            BatonException e = assertThrows(BatonException.class,
                    () -> c.enqueue(TaskRequest.builder(ns, "job").taskId("due-1").build()));
            assertEquals(ErrorCode.UNAVAILABLE, e.code(), e.getMessage());
            assertTrue(e.getMessage().startsWith("partition count of namespace " + ns + " not read from "
                    + PARTITIONS + ": "), e.getMessage());
            Thread.sleep(Math.max(0, 2800 - (System.nanoTime() - paused) / 1_000_000)); // the pause is over
            for (int p = 0; p < 2; p++) {
                assertFalse(stored(Partitions.storage(ns, p), "due-1"), "due-1 written in partition " + p);
            }
            assertEquals(EnqueueStatus.QUEUED, c.enqueue(TaskRequest.builder(ns, "job").taskId("due-1").build()).status());
        } finally {
            pool.shutdown();
            redis.cli().configSet("slowlog-log-slower-than", "10000");
            redis.cli().configSet("slowlog-max-len", "128");
        }
    }

    /** The HMGETs of the partitions key in the slow log (which logs every command here). */
    private static int partitionReads() {
        Object entries = redis.cli().sendCommand(Command.SLOWLOG, "GET", "1000");
        int n = 0;
        for (Object entry : (List<?>) entries) {
            List<?> args = (List<?>) ((List<?>) entry).get(3);
            if (args.size() >= 2 && "HMGET".equalsIgnoreCase(text(args.get(0))) && PARTITIONS.equals(text(args.get(1)))) {
                n++;
            }
        }
        return n;
    }

    private static String text(Object o) {
        return new String((byte[]) o, java.nio.charset.StandardCharsets.UTF_8);
    }

    /**
     * A coalesced batch over 2 partitions whose partition-1 call is refused: the partition-0 task
     * was written by its own call and its caller gets QUEUED (not DUPLICATE from a resend); the
     * refused call's tasks are sent again one by one, so only the bad one fails.
     */
    @Test
    void aRefusedCallOfACoalescedBatchFailsOnlyItsBadTask() throws Exception {
        String ns = newNamespace();
        redis.cli().hset(PARTITIONS, ns, "2");
        List<String> p0 = new ArrayList<>();
        List<String> p1 = new ArrayList<>();
        for (int i = 0; p0.size() < 2 || p1.size() < 2; i++) {
            (Partitions.of("co-" + i, 2) == 0 ? p0 : p1).add("co-" + i);
        }
        // run_at_ms beyond the library's 15 digits: the SDK sends it, the library refuses the call
        TaskRequest bad = TaskRequest.builder(ns, "job").taskId(p1.get(0))
                .runAt(java.time.Instant.ofEpochMilli(1_000_000_000_000_000L)).build();
        TaskRequest good0 = TaskRequest.builder(ns, "job").taskId(p0.get(1)).build();
        TaskRequest good1 = TaskRequest.builder(ns, "job").taskId(p1.get(1)).build();
        var pool = Threads.perTask("coalesce-test");
        try (BatonClient c = BatonClient.connect(redis.url())) {
            redis.cli().sendCommand(Command.CLIENT, "PAUSE", "800", "WRITE");
            // the first call waits out the pause; the next three queue behind it in this order
            var first = java.util.concurrent.CompletableFuture.supplyAsync(
                    () -> c.enqueue(TaskRequest.builder(ns, "job").taskId(p0.get(0)).build()), pool);
            List<java.util.concurrent.CompletableFuture<Object>> queued = new ArrayList<>();
            for (TaskRequest r : List.of(good0, bad, good1)) {
                Thread.sleep(150);
                queued.add(java.util.concurrent.CompletableFuture.supplyAsync(() -> {
                    try {
                        return c.enqueue(r);
                    } catch (BatonException e) { // a waiting caller gets the error itself
                        return e;
                    }
                }, pool));
            }
            assertEquals(EnqueueStatus.QUEUED, first.get().status());
            assertEquals(EnqueueStatus.QUEUED, ((EnqueueResult) queued.get(0).get()).status(), "the partition-0 task of the batch");
            BatonException e = (BatonException) queued.get(1).get();
            assertEquals(ErrorCode.INVALID_ARGUMENT, e.code(), e.getMessage());
            assertTrue(e.getMessage().startsWith("run_at_ms: "), e.getMessage());
            assertEquals(EnqueueStatus.QUEUED, ((EnqueueResult) queued.get(2).get()).status(), "the other task of the refused call");
            assertFalse(stored(Partitions.storage(ns, 1), bad.taskId()));
            assertTrue(stored(ns, good0.taskId()));
            assertTrue(stored(Partitions.storage(ns, 1), good1.taskId()));
        } finally {
            pool.shutdown();
        }
    }

    @Test
    void anUnparsableCountIsOne() throws Exception {
        String ns = newNamespace();
        redis.cli().hset(PARTITIONS, ns, "lots");
        try (BatonClient c = BatonClient.connect(redis.url())) {
            for (int i = 0; i < 10; i++) {
                c.enqueue(TaskRequest.builder(ns, "job").taskId("u-" + i).build());
            }
        }
        assertEquals(10, redis.cli().hlen(key(ns, "tasks")));
    }
}
