package dev.baton;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.Timeout;
import redis.clients.jedis.RedisClient;

/**
 * The SDK on a real 3-primary, 3-replica Redis Cluster (tests/harness/redis_cluster.py):
 * namespaces on every primary, retries and delays, the library check on every primary, WAIT met
 * and missed, a kill -9 of a primary after which every task acknowledged with waitReplicas(1)
 * ends done, and last WAIT falling short only for the partitions on the shard left without a
 * replica.
 */
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
@Timeout(90)
class ClusterTest {
    static RedisClusterHarness cluster;
    /** The primary promoted by the failover test, which has no replica ("127.0.0.1:port"). */
    static String orphan;

    @BeforeAll
    static void startCluster() throws Exception {
        long t0 = System.nanoTime();
        cluster = RedisClusterHarness.start();
        System.out.printf("ClusterTest: cluster up in %d ms: %s%n", (System.nanoTime() - t0) / 1_000_000, cluster.url);
    }

    @AfterAll
    static void stopCluster() throws Exception {
        if (cluster != null) {
            cluster.close();
        }
    }

    static Worker.Builder worker() {
        return Worker.builder(cluster.url).maintenance(true)
                .retry(new RetryPolicy(Duration.ofMillis(50), Duration.ofMillis(100)))
                .idleBlock(Duration.ofMillis(200));
    }

    @Test
    @Order(1)
    void tasksOfNamespacesOnEveryPrimaryAllRunOnce() throws Exception {
        List<String> nss = cluster.spreadNamespaces("jcl-run");
        Map<String, AtomicInteger> ran = new ConcurrentHashMap<>();
        try (BatonClient c = BatonClient.connect(cluster.url); Worker w = worker().build()) {
            for (String ns : nss) {
                w.handle(ns, "job", t -> ran.computeIfAbsent(t.namespace() + "/" + t.taskId(), k -> new AtomicInteger())
                        .incrementAndGet());
            }
            w.start();
            List<TaskRequest> batch = new ArrayList<>();
            for (int i = 0; i < 30; i++) {
                batch.add(TaskRequest.builder(nss.get(i % 3), "job").payloadJson("{\"i\":" + i + "}").build());
            }
            List<String> want = new ArrayList<>();
            List<EnqueueResult> results = c.enqueueAll(batch);
            for (int i = 0; i < results.size(); i++) {
                assertEquals(EnqueueStatus.QUEUED, results.get(i).status(), "request " + i);
                want.add(batch.get(i).namespace() + "/" + results.get(i).taskId());
            }
            for (int i = 0; i < 9; i++) {
                String ns = nss.get(i % 3);
                want.add(ns + "/" + c.enqueue(TaskRequest.builder(ns, "job").build()).taskId());
            }
            Fixtures.waitFor(Duration.ofSeconds(30), "every task done", () -> want.stream().allMatch(k -> {
                String[] p = k.split("/");
                return cluster.isDone(p[0], p[1]);
            }));
            for (String k : want) {
                assertEquals(1, ran.get(k).get(), k + " ran");
            }
            assertEquals(want.size(), ran.size());
        }
    }

    @Test
    @Order(2)
    void retriesDeadLettersAndDelaysWork() throws Exception {
        String ns = cluster.spreadNamespaces("jcl-fail").get(1);
        AtomicInteger attempts = new AtomicInteger();
        long[] delayedRanAt = {0};
        try (BatonClient c = BatonClient.connect(cluster.url); Worker w = worker().build()) {
            w.handle(ns, "fails", t -> {
                attempts.incrementAndGet();
                throw new IllegalStateException("always fails");
            });
            w.handle(ns, "later", t -> delayedRanAt[0] = System.nanoTime());
            w.start();
            String failing = c.enqueue(TaskRequest.builder(ns, "fails").maxRetry(2).build()).taskId();
            long enqueued = System.nanoTime();
            EnqueueResult later = c.enqueue(TaskRequest.builder(ns, "later").delay(Duration.ofSeconds(1)).build());
            assertEquals(EnqueueStatus.SCHEDULED, later.status());
            Fixtures.waitFor(Duration.ofSeconds(30), "the failing task dead-lettered",
                    () -> cluster.raw.zscore(Fixtures.key(ns, "dead:fails"), failing) != null);
            Fixtures.waitFor(Duration.ofSeconds(30), "the delayed task done", () -> cluster.isDone(ns, later.taskId()));
            assertEquals(3, attempts.get(), "max_retry 2: three attempts");
            assertTrue(delayedRanAt[0] - enqueued >= 900_000_000L, "the task delayed 1 s ran too early");
        }
    }

    @Test
    @Order(3)
    void waitReplicasMetAndMissed() throws Exception {
        List<String> nss = cluster.spreadNamespaces("jcl-wait");
        List<TaskRequest> batch = new ArrayList<>();
        for (int i = 0; i < 12; i++) {
            batch.add(TaskRequest.builder(nss.get(i % 3), "job").build());
        }
        try (BatonClient one = BatonClient.builder(cluster.url).waitReplicas(1).build()) {
            assertEquals(EnqueueStatus.QUEUED, one.enqueue(TaskRequest.builder(nss.get(0), "job").build()).status());
            one.enqueueAll(batch).forEach(r -> assertEquals(EnqueueStatus.QUEUED, r.status()));
        }
        // each primary has one replica: WAIT 2 cannot be met; the tasks are written all the same
        String shortMsg = "written on the primary but acknowledged by only 1 of 2 replicas within 150 ms:"
                + " it may still run but is not known to be durable";
        try (BatonClient two = BatonClient.builder(cluster.url).waitReplicas(2).waitTimeout(Duration.ofMillis(150))
                .build()) {
            NotDurableException e = assertThrows(NotDurableException.class,
                    () -> two.enqueue(TaskRequest.builder(nss.get(1), "job").build()));
            assertEquals(shortMsg, e.getMessage());
            assertEquals(ErrorCode.UNAVAILABLE, e.code());
            assertEquals(1, e.results().size());
            assertEquals(EnqueueStatus.QUEUED, e.results().get(0).status());
            assertTrue(cluster.raw.hexists(Fixtures.key(nss.get(1), "tasks"), e.results().get(0).taskId()),
                    "the task of a short WAIT is written");
            List<TaskRequest> again = new ArrayList<>();
            for (int i = 0; i < 12; i++) {
                again.add(TaskRequest.builder(nss.get(i % 3), "job").build());
            }
            NotDurableException all = assertThrows(NotDurableException.class, () -> two.enqueueAll(again));
            assertEquals(shortMsg, all.getMessage());
            assertEquals(again.stream().map(TaskRequest::taskId).toList(), all.notDurableTaskIds());
            assertEquals(12, all.results().size());
            for (int i = 0; i < 12; i++) {
                assertEquals(again.get(i).taskId(), all.results().get(i).taskId());
                assertEquals(EnqueueStatus.QUEUED, all.results().get(i).status());
            }
        }
        Map<BatonClient.Builder, String> bad = Map.of(
                BatonClient.builder(cluster.url).waitReplicas(-1), "wait_replicas: must be >= 0 (got -1)",
                BatonClient.builder(cluster.url).waitTimeout(Duration.ZERO), "wait_timeout: must be at least 1 ms (got 0 ms)",
                BatonClient.builder(cluster.url).waitReplicas(1).waitTimeout(Duration.ofSeconds(5)),
                "wait_timeout: must be shorter than the Redis socket timeout 2000 ms (got 5000 ms)");
        bad.forEach((b, want) -> {
            BatonException e = assertThrows(BatonException.class, b::build);
            assertEquals(want, e.getMessage());
            assertEquals(ErrorCode.INVALID_ARGUMENT, e.code());
            assertEquals(want.substring(0, want.indexOf(':')), e.field());
        });
    }

    @Test
    @Order(4)
    void aPrimaryWithoutTheLibraryIsNamed() throws Exception {
        String ns = cluster.spreadNamespaces("jcl-lib").get(2);
        String primary = cluster.primaryOf(ns);
        int port = Integer.parseInt(primary.substring(primary.lastIndexOf(':') + 1));
        try (RedisClient node = RedisClient.create("127.0.0.1", port)) {
            byte[] dump = node.functionDump();
            node.functionFlush();
            try {
                String want = "functions library version none loaded on the primary " + primary
                        + ", this client needs 2: run 'baton init'";
                BatonException e = assertThrows(BatonException.class, () -> BatonClient.connect(cluster.url));
                assertEquals(ErrorCode.VERSION_MISMATCH, e.code());
                assertEquals(want, e.getMessage());
                BatonException w = assertThrows(BatonException.class, () -> worker().build());
                assertEquals(ErrorCode.VERSION_MISMATCH, w.code());
                assertEquals(want, w.getMessage());
            } finally {
                node.functionRestore(dump);
            }
        }
        try (BatonClient c = BatonClient.connect(cluster.url)) {
            assertEquals(EnqueueStatus.QUEUED, c.enqueue(TaskRequest.builder(ns, "job").build()).status());
        }
    }

    /**
     * MOVED and ASK are still followed (the executor only stops resends after a broken
     * connection): a namespace's slot is migrated to another primary while a client that read
     * the old slot map enqueues to it.
     */
    @Test
    @Order(5)
    void movedAndAskRedirectionsAreFollowed() throws Exception {
        String ns = null;
        for (int i = 0; ns == null; i++) {
            String candidate = "jcl-move" + i;
            try (RedisClient owner = node(cluster.primaryOf(candidate))) {
                if (cluster(owner, "COUNTKEYSINSLOT", Integer.toString(slotOf(candidate))) instanceof Long n && n == 0) {
                    ns = candidate;
                }
            }
        }
        final String moving = ns;
        int slot = slotOf(ns);
        String source = cluster.primaryOf(ns);
        String target = cluster.spreadNamespaces("jcl-move-target").stream().map(cluster::primaryOf)
                .filter(a -> !a.equals(source)).findFirst().orElseThrow();
        List<String> order = new ArrayList<>(List.of(target, source)); // the new owner first
        primaries().stream().filter(a -> !order.contains(a)).forEach(order::add);
        try (BatonClient c = BatonClient.connect(cluster.url); BatonClient stale = BatonClient.connect(cluster.url);
             RedisClient src = node(source); RedisClient tgt = node(target)) {
            String srcId = myId(src);
            String tgtId = myId(tgt);
            cluster(tgt, "SETSLOT", Integer.toString(slot), "IMPORTING", srcId);
            cluster(src, "SETSLOT", Integer.toString(slot), "MIGRATING", tgtId);
            // The source has none of the call's keys: it answers ASK, and Jedis sends ASKING and the
            // call to the target; the target answers TRYAGAIN (a multi-key call on keys it does not
            // have yet), which is sent again until the migration ends and the source answers MOVED.
            long askingBefore = askingCalls(tgt);
            java.util.concurrent.CompletableFuture<EnqueueResult> during = java.util.concurrent.CompletableFuture
                    .supplyAsync(() -> c.enqueue(TaskRequest.builder(moving, "job").build()));
            Fixtures.waitFor(Duration.ofSeconds(5), "an ASK followed to the target", () -> askingCalls(tgt) > askingBefore);
            for (String addr : order) {
                try (RedisClient n = node(addr)) {
                    cluster(n, "SETSLOT", Integer.toString(slot), "NODE", tgtId);
                }
            }
            EnqueueResult asked = during.get(10, java.util.concurrent.TimeUnit.SECONDS);
            assertEquals(EnqueueStatus.QUEUED, asked.status());
            assertEquals(target, cluster.primaryOf(moving));
            // a client that read the slot map before the move routes it to the source: MOVED, followed
            EnqueueResult moved = stale.enqueue(TaskRequest.builder(moving, "job").build());
            assertEquals(EnqueueStatus.QUEUED, moved.status());
            for (String id : List.of(asked.taskId(), moved.taskId())) {
                assertTrue(tgt.hexists(Fixtures.key(moving, "tasks"), id), id + " is on the new primary");
            }
        }
        try (Worker w = worker().build()) {
            w.handle(moving, "job", t -> { });
            w.start();
            Fixtures.waitFor(Duration.ofSeconds(30), "both tasks done on the new primary",
                    () -> cluster.raw.zcard(Fixtures.key(moving, "done")) == 2);
        }
    }

    /** The ASKING commands the node has run (INFO commandstats). */
    private static long askingCalls(RedisClient n) {
        for (String line : n.info("commandstats").split("\r?\n")) {
            if (line.startsWith("cmdstat_asking:calls=")) {
                return Long.parseLong(line.substring("cmdstat_asking:calls=".length(), line.indexOf(',')));
            }
        }
        return 0;
    }

    private static int slotOf(String ns) {
        return redis.clients.jedis.util.JedisClusterCRC16.getSlot(Fixtures.key(ns, "tasks"));
    }

    private static RedisClient node(String addr) {
        return RedisClient.create("127.0.0.1", Integer.parseInt(addr.substring(addr.lastIndexOf(':') + 1)));
    }

    private static Object cluster(RedisClient n, String... args) {
        return n.sendCommand(redis.clients.jedis.Protocol.Command.CLUSTER, args);
    }

    private static String myId(RedisClient n) {
        return new String((byte[]) cluster(n, "MYID"), java.nio.charset.StandardCharsets.UTF_8);
    }

    private static List<String> primaries() {
        return cluster.spreadNamespaces("jcl-primaries").stream().map(cluster::primaryOf).toList();
    }

    /**
     * A call whose connection times out after it was written is not sent again (stock Jedis
     * would send it again on a new connection): the primary holds write commands for 2.6 s
     * (CLIENT PAUSE WRITE), longer than the 2 s socket timeout. The SDK reports unavailable once,
     * at the timeout, and the task is not written by a second send when the pause ends (Redis
     * drops the held command of a closed connection).
     */
    @Test
    @Order(6)
    void aCallWhoseConnectionTimedOutIsNotSentAgain() throws Exception {
        String ns = cluster.spreadNamespaces("jcl-noresend").get(1);
        try (BatonClient c = BatonClient.connect(cluster.url); RedisClient owner = node(cluster.primaryOf(ns))) {
            c.enqueue(TaskRequest.builder(ns, "warmup").build()); // a pooled connection to the node
            owner.sendCommand(redis.clients.jedis.Protocol.Command.CLIENT, "PAUSE", "2600", "WRITE");
            long t0 = System.nanoTime();
            BatonException e = assertThrows(BatonException.class,
                    () -> c.enqueue(TaskRequest.builder(ns, "job").taskId("held").build()));
            long tookMs = (System.nanoTime() - t0) / 1_000_000;
            assertEquals(ErrorCode.UNAVAILABLE, e.code(), e.getMessage());
            assertTrue(e.getMessage().contains("broke during the call (it may have run)"), e.getMessage());
            assertTrue(tookMs < 2500, "failed after " + tookMs + " ms: sent again?");
            Thread.sleep(1500); // the pause is over
            assertEquals(false, cluster.raw.hexists(Fixtures.key(ns, "tasks"), "held"),
                    "the task was written after the pause: the call was sent again");
            // the producer's own retry with the same id writes it once
            assertEquals(EnqueueStatus.QUEUED, c.enqueue(TaskRequest.builder(ns, "job").taskId("held").build()).status());
        }
    }

    /**
     * A namespace of 6 partitions (docs/cluster.md, "Partitions") whose partitions are on at
     * least 2 primaries: the producer sends each task to its partition's primary, the worker
     * serves every partition, every task runs once and handlers see the namespace.
     */
    @Test
    @Order(6)
    void aNamespaceOfSixPartitionsSpreadsOverPrimaries() throws Exception {
        String ns = "jcl-parts";
        cluster.raw.hset("baton:v2:partitions", ns, "6");
        java.util.Set<String> primaries = new java.util.TreeSet<>();
        for (int p = 0; p < 6; p++) {
            primaries.add(cluster.primaryOf(dev.baton.internal.Partitions.storage(ns, p)));
        }
        assertTrue(primaries.size() >= 2, "6 partitions on primaries " + primaries);
        Map<String, AtomicInteger> ran = new ConcurrentHashMap<>();
        try (BatonClient c = BatonClient.connect(cluster.url); Worker w = worker().build()) {
            w.handle(ns, "job", t -> ran.computeIfAbsent(t.namespace() + "/" + t.taskId(), k -> new AtomicInteger())
                    .incrementAndGet());
            w.start();
            long t0 = System.nanoTime();
            List<TaskRequest> batch = new ArrayList<>();
            List<String> ids = new ArrayList<>();
            for (int i = 0; i < 60; i++) {
                TaskRequest r = TaskRequest.builder(ns, "job").taskId("part-" + i).build();
                ids.add(r.taskId());
                if (i % 2 == 0) {
                    batch.add(r);
                } else {
                    assertEquals(EnqueueStatus.QUEUED, c.enqueue(r).status(), r.taskId());
                }
            }
            for (EnqueueResult r : c.enqueueAll(batch)) {
                assertEquals(EnqueueStatus.QUEUED, r.status(), r.taskId());
            }
            java.util.Set<Integer> used = new java.util.TreeSet<>();
            for (String id : ids) {
                int p = dev.baton.internal.Partitions.of(id, 6);
                used.add(p);
                String storage = dev.baton.internal.Partitions.storage(ns, p);
                assertTrue(cluster.raw.hexists(Fixtures.key(storage, "tasks"), id) || cluster.isDone(storage, id),
                        id + " in partition " + p); // queued, running or done there
            }
            assertEquals(6, used.size(), "partitions used: " + used);
            Fixtures.waitFor(Duration.ofSeconds(30), "60 tasks done", () -> ids.stream().allMatch(id ->
                    cluster.isDone(dev.baton.internal.Partitions.storage(ns, dev.baton.internal.Partitions.of(id, 6)), id)));
            for (String id : ids) {
                assertEquals(1, ran.get(ns + "/" + id).get(), id + " runs once in namespace " + ns);
            }
            assertEquals(60, ran.size());
            System.out.printf("ClusterTest: 6 partitions on %d primaries, 60 tasks enqueued and done in %d ms%n", primaries.size(),
                    (System.nanoTime() - t0) / 1_000_000);
        }
    }

    /**
     * It changes the topology (the last test relies on it). Tasks acknowledged with waitReplicas(1) survive a kill -9 of
     * their primary and all end done on the promoted replica.
     */
    @Test
    @Order(7)
    void afterAFailoverEveryAcknowledgedTaskIsDone() throws Exception {
        String ns = cluster.spreadNamespaces("jcl-failover").get(0);
        String primary = cluster.primaryOf(ns);
        Map<String, AtomicInteger> ran = new ConcurrentHashMap<>();
        List<String> ids = new ArrayList<>();
        try (BatonClient c = BatonClient.builder(cluster.url).waitReplicas(1).waitTimeout(Duration.ofMillis(300)).build();
             Worker w = worker().build()) {
            w.handle(ns, "job", t -> {
                Thread.sleep(20);
                ran.computeIfAbsent(t.taskId(), k -> new AtomicInteger()).incrementAndGet();
            }, HandlerOptions.DEFAULT.withConcurrency(4).withLease(Duration.ofSeconds(2)));
            w.start();
            for (int i = 0; i < 40; i++) {
                ids.add(c.enqueue(TaskRequest.builder(ns, "job").payloadJson("{\"i\":" + i + "}").build()).taskId());
            }
            ProcessHandle.of(cluster.pidOf(primary)).orElseThrow().destroyForcibly(); // SIGKILL
            long killed = System.nanoTime();
            // The producer keeps going: unavailable without a result while the replica takes over
            // is sent again with the same task id (duplicate then means the first try was written).
            // The promoted replica has no replica of its own, so WAIT 1 now falls short: the task
            // is written and the error says so.
            int shortWaits = 0;
            int refused = 0;
            long firstWritten = 0;
            for (int i = 0; i < 10; i++) {
                String id = "after-kill-" + i;
                while (true) {
                    EnqueueResult r = null;
                    try {
                        r = c.enqueue(TaskRequest.builder(ns, "job").taskId(id).build());
                    } catch (NotDurableException e) {
                        assertTrue(e.getMessage().startsWith("written on the primary but acknowledged by only 0 of 1 replicas"),
                                e.getMessage());
                        r = e.results().get(0);
                        shortWaits++;
                    } catch (BatonException e) {
                        assertEquals(ErrorCode.UNAVAILABLE, e.code(), e.getMessage());
                        refused++;
                    }
                    if (r != null) {
                        assertTrue(r.status() == EnqueueStatus.QUEUED || r.status() == EnqueueStatus.DUPLICATE, r.toString());
                        if (firstWritten == 0) {
                            firstWritten = System.nanoTime() - killed;
                        }
                        break;
                    }
                    assertTrue(System.nanoTime() - killed < 30_000_000_000L, "enqueue after the kill still fails");
                    Thread.sleep(100);
                }
                ids.add(id);
            }
            assertTrue(shortWaits > 0, "WAIT 1 never fell short on a shard that lost its replica");
            System.out.printf("ClusterTest failover: first enqueue written %d ms after the kill, %d refused as"
                    + " unavailable meanwhile, %d short WAITs, 10 written after %d ms%n", firstWritten / 1_000_000,
                    refused, shortWaits, (System.nanoTime() - killed) / 1_000_000);
            Fixtures.waitFor(Duration.ofSeconds(40), "every acknowledged task done after the failover",
                    () -> ids.stream().allMatch(id -> cluster.isDone(ns, id)));
            System.out.printf("ClusterTest failover: all %d acknowledged tasks done %d ms after the kill;"
                    + " %d ran more than once%n", ids.size(), (System.nanoTime() - killed) / 1_000_000,
                    ran.values().stream().filter(n -> n.get() > 1).count());
            assertNotEquals(primary, cluster.primaryOf(ns), "the namespace is still on the killed primary");
            orphan = cluster.primaryOf(ns);
            for (String id : ids) {
                assertTrue(ran.containsKey(id), id + " is done but never ran here");
            }
        }
    }

    /**
     * After the failover one shard has no replica: with waitReplicas(1) only the tasks of the
     * partitions on that shard fall short, in enqueueAll (named in notDurableTaskIds) and in a
     * coalesced batch of single enqueues (the other callers get their outcome).
     */
    @Test
    @Order(8)
    void aShortWaitFailsOnlyTheTasksOfItsShard() throws Exception {
        org.junit.jupiter.api.Assumptions.assumeTrue(orphan != null, "needs the failover of the test before");
        String ns = null;
        java.util.Set<Integer> onOrphan = new java.util.TreeSet<>();
        for (int k = 0; ns == null; k++) { // a namespace of 6 partitions, some on the orphan, some not
            assertTrue(k < 50, "no namespace with partitions on and off " + orphan);
            onOrphan.clear();
            for (int p = 0; p < 6; p++) {
                if (cluster.primaryOf(dev.baton.internal.Partitions.storage("jcl-short" + k, p)).equals(orphan)) {
                    onOrphan.add(p);
                }
            }
            if (!onOrphan.isEmpty() && onOrphan.size() < 6) {
                ns = "jcl-short" + k;
            }
        }
        cluster.raw.hset("baton:v2:partitions", ns, "6");
        java.util.function.Predicate<String> isShort = id -> onOrphan.contains(dev.baton.internal.Partitions.of(id, 6));
        try (BatonClient c = BatonClient.builder(cluster.url).waitReplicas(1).waitTimeout(Duration.ofMillis(300)).build()) {
            List<TaskRequest> batch = new ArrayList<>();
            for (int i = 0; i < 24; i++) {
                batch.add(TaskRequest.builder(ns, "job").taskId("all-" + i).build());
            }
            List<String> want = batch.stream().map(TaskRequest::taskId).filter(isShort).toList();
            assertTrue(!want.isEmpty() && want.size() < 24, "tasks on the orphan: " + want);
            NotDurableException all = assertThrows(NotDurableException.class, () -> c.enqueueAll(batch));
            assertEquals(want, all.notDurableTaskIds());
            assertTrue(all.getMessage().startsWith(want.size() + " of 24 tasks (" + want.get(0)), all.getMessage());
            all.results().forEach(r -> assertEquals(EnqueueStatus.QUEUED, r.status(), r.taskId()));

            // one caller on the orphan waits out its WAIT while the others queue, then go as one batch
            String name = ns;
            var pool = dev.baton.internal.Threads.perTask("short-test");
            try {
                String lead = java.util.stream.IntStream.range(0, 100).mapToObj(i -> "lead-" + i).filter(isShort)
                        .findFirst().orElseThrow();
                var first = java.util.concurrent.CompletableFuture.supplyAsync(() -> outcome(c, name, lead), pool);
                Thread.sleep(100);
                Map<String, java.util.concurrent.CompletableFuture<Object>> each = new java.util.LinkedHashMap<>();
                for (int i = 0; i < 12; i++) {
                    String id = "one-" + i;
                    each.put(id, java.util.concurrent.CompletableFuture.supplyAsync(() -> outcome(c, name, id), pool));
                }
                assertTrue(first.get() instanceof NotDurableException, String.valueOf(first.get()));
                int shortOnes = 0;
                for (var e : each.entrySet()) {
                    Object got = e.getValue().get();
                    if (isShort.test(e.getKey())) {
                        shortOnes++;
                        assertTrue(got instanceof NotDurableException, e.getKey() + ": " + got);
                        NotDurableException nd = (NotDurableException) got;
                        assertEquals(List.of(e.getKey()), nd.notDurableTaskIds());
                        assertEquals(EnqueueStatus.QUEUED, nd.results().get(0).status());
                    } else {
                        assertTrue(got instanceof EnqueueResult r && r.status() == EnqueueStatus.QUEUED,
                                e.getKey() + " on a shard with its replica: " + got);
                    }
                }
                assertTrue(shortOnes > 0 && shortOnes < 12, "tasks on the orphan: " + shortOnes + " of 12");
            } finally {
                pool.shutdown();
            }
        }
    }

    /** @return the outcome of one enqueue, or its error */
    private static Object outcome(BatonClient c, String ns, String id) {
        try {
            return c.enqueue(TaskRequest.builder(ns, "job").taskId(id).build());
        } catch (BatonException e) {
            return e;
        }
    }
}
