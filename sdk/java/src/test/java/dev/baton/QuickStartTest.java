package dev.baton;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.math.BigDecimal;
import java.nio.file.Files;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.junit.jupiter.api.Test;

/** The README's quick start, run against a real redis-server; the README must show exactly this code. */
class QuickStartTest extends Fixtures {
    final Map<String, BigDecimal> settled = new ConcurrentHashMap<>();

    void settle(String orderTask, BigDecimal amount) {
        settled.put(orderTask, amount);
    }

    @Test
    void quickStartRuns() throws Exception {
        String url = redis.url();
        Worker started;
        // README quick start: begin
        try (BatonClient client = BatonClient.connect(url)) {
            EnqueueResult r = client.enqueue(TaskRequest.builder("orders", "settle")
                    .payloadJson("{\"order\":42,\"amount\":12.10}")
                    .maxRetry(5)
                    .executionTimeout(Duration.ofSeconds(30))
                    .build());
            System.out.println(r.taskId() + " " + r.status()); // 0192...-7... QUEUED
        }

        Worker worker = Worker.builder(url).build();
        worker.handle("orders", "settle", task -> {
            BigDecimal amount = task.payloadTree().get("amount").decimalValue(); // exact: 12.10
            settle(task.taskId(), amount);
        });
        Thread hook = worker.installShutdownHook(Duration.ofSeconds(30));
        worker.start();
        // README quick start: end
        started = worker;
        try {
            waitFor(Duration.ofSeconds(30), "settled", () -> !settled.isEmpty());
            assertEquals(new BigDecimal("12.10"), settled.values().iterator().next());
        } finally {
            Runtime.getRuntime().removeShutdownHook(hook);
            started.close();
        }
    }

    @Test
    void readmeShowsTheQuickStart() throws Exception {
        String test = Files.readString(RedisServer.repo().resolve("sdk/java/src/test/java/dev/baton/QuickStartTest.java"));
        String code = test.substring(test.indexOf("// README quick start: begin\n") + 29,
                test.indexOf("        // README quick start: end"));
        String readme = Files.readString(RedisServer.repo().resolve("sdk/java/README.md"));
        String unindented = code.lines().map(l -> l.length() >= 8 ? l.substring(8) : l.strip())
                .reduce("", (a, b) -> a + b + "\n");
        assertTrue(readme.contains(unindented), "README quick start differs from QuickStartTest:\n" + unindented);
    }
}
