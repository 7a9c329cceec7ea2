package dev.baton;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.node.ArrayNode;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

/** Base of the tests that need Redis: one server per test class, one namespace per test. */
abstract class Fixtures {
    static RedisServer redis;

    @BeforeAll
    static void startRedis() throws Exception {
        redis = RedisServer.start();
    }

    @AfterAll
    static void stopRedis() throws Exception {
        if (redis != null) {
            redis.close();
        }
    }

    static String newNamespace() {
        return "t" + UUID.randomUUID().toString().substring(0, 12);
    }

    static String key(String ns, String rest) {
        return "baton:v2:{" + ns + "}:" + rest;
    }

    /** Polls until the condition holds; generous deadlines (a loaded 2-core machine). */
    static void waitFor(Duration max, String what, BooleanSupplier cond) throws InterruptedException {
        long end = System.nanoTime() + max.toNanos();
        while (System.nanoTime() < end) {
            if (cond.getAsBoolean()) {
                return;
            }
            Thread.sleep(20);
        }
        throw new AssertionError("timed out waiting for " + what);
    }

    static boolean isDone(String ns, String id) {
        return redis.cli().zscore(key(ns, "done"), id) != null;
    }

    static String record(String ns, String id) {
        return redis.cli().hget(key(ns, "tasks"), id);
    }

    /** Failures kept per task in the errors hash, the newest (ERRORS_KEPT in functions/00-header.lua). */
    static final int ERRORS_KEPT = 50;

    /**
     * The failed attempts recorded for a task, oldest first (an empty array when none). The errors hash has
     * one field per failure (docs/keyspace.md, "Error history"): ID holds N, the sequence number of the
     * newest, and ID|K failure K. So: HGET ID, then HMGET ID|max(1,N-49) .. ID|N.
     */
    static ArrayNode errors(String ns, String id) throws JsonProcessingException {
        ArrayNode out = Json.mapper().createArrayNode();
        String counter = redis.cli().hget(key(ns, "errors"), id);
        if (counter == null) {
            return out;
        }
        int n = Integer.parseInt(counter);
        List<String> fields = new ArrayList<>();
        for (int k = Math.max(1, n - ERRORS_KEPT + 1); k <= n; k++) {
            fields.add(id + "|" + k);
        }
        if (fields.isEmpty()) {
            return out;
        }
        for (String value : redis.cli().hmget(key(ns, "errors"), fields.toArray(new String[0]))) {
            if (value != null) {
                out.add(Json.mapper().readTree(value));
            }
        }
        return out;
    }

    static BatonClient client() {
        return BatonClient.connect(redis.url());
    }

    /** A worker with fast retries and in-process maintenance (no batond in most tests). */
    static Worker.Builder worker() {
        return Worker.builder(redis.url()).maintenance(true)
                .retry(new RetryPolicy(Duration.ofMillis(50), Duration.ofMillis(200)))
                .idleBlock(Duration.ofMillis(200));
    }
}
