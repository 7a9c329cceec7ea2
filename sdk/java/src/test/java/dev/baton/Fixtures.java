package dev.baton;

import java.time.Duration;
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

    static String errors(String ns, String id) {
        return redis.cli().hget(key(ns, "errors"), id);
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
