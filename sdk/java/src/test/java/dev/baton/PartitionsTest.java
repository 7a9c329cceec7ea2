package dev.baton;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.baton.internal.Partitions;
import java.nio.file.Files;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

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
