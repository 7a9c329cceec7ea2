package dev.baton.conformance;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.baton.HandlerOptions;
import dev.baton.Json;
import dev.baton.RetryPolicy;
import dev.baton.Task;
import dev.baton.Worker;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.time.Duration;
import java.util.HexFormat;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

/** Runs a Java worker for the conformance task types for N seconds or until SIGTERM. */
final class Consume {
    private final Report report;
    private final Path corpus;

    private Consume(Report report, Path corpus) {
        this.report = report;
        this.corpus = corpus;
    }

    static int run(String redis, String ns, String reportPath, String corpusDir, int seconds) throws Exception {
        Report report = new Report(reportPath);
        Consume h = new Consume(report, Path.of(corpusDir));
        Worker w = Worker.builder(redis).consumerName("conformance-java-" + ProcessHandle.current().pid())
                .retry(new RetryPolicy(Duration.ofMillis(100), Duration.ofSeconds(1))).build();
        HandlerOptions opts = HandlerOptions.DEFAULT;
        w.handle(ns, "conf_echo", h::echo, opts);
        w.handle(ns, "conf_fail", h::fail, opts);
        w.handle(ns, "conf_sleep", h::sleep, opts);
        w.handle(ns, "conf_delay", h::delay, opts);
        w.handle(ns, "conf_once", h::once, opts);
        CountDownLatch stopped = new CountDownLatch(1);
        // SIGTERM: shut down gracefully, then end with status 0 (a JVM ended by a signal would exit 143;
        // halt() from a shutdown hook sets the status; the report is flushed line by line already)
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            if (stopped.getCount() > 0) {
                w.shutdown(Duration.ofSeconds(10));
                stopped.countDown();
                Runtime.getRuntime().halt(0);
            }
        }));
        w.start();
        if (!stopped.await(seconds, TimeUnit.SECONDS)) {
            w.shutdown(Duration.ofSeconds(10));
            stopped.countDown();
        }
        var s = w.stats();
        System.out.println("consume: succeeded " + s.succeeded() + ", failed " + s.failed() + ", dead " + s.dead()
                + ", malformed " + s.malformed());
        report.close();
        return 0;
    }

    private ObjectNode line(String type, Task t) {
        ObjectNode o = Json.mapper().createObjectNode();
        o.put("type", type).put("task_id", t.taskId());
        return o;
    }

    void echo(Task t) throws Exception {
        String caseName = t.extra().path("x_conformance_case").asText("");
        ObjectNode o = line("conf_echo", t);
        o.put("case", caseName).put("namespace", t.namespace()).put("task_type", t.taskType())
                .put("max_retry", t.maxRetry()).put("delay_seconds", t.delaySeconds()).put("created_at", t.createdAt());
        if (t.executionTimeout().isPresent()) {
            o.put("execution_timeout", t.executionTimeout().get().getSeconds());
        } else {
            o.putNull("execution_timeout");
        }
        o.set("extra", t.extra());
        byte[] sum = MessageDigest.getInstance("SHA-256").digest(t.payloadBytes());
        o.put("payload_sha256", HexFormat.of().formatHex(sum));
        Boolean equal = valueEqual(caseName, t);
        if (equal == null) {
            o.putNull("payload_value_equal");
        } else {
            o.put("payload_value_equal", equal);
        }
        report.append(o);
    }

    /** The SDK's own parse (exact numbers) of the payload against the same parse of the corpus file. */
    private Boolean valueEqual(String caseName, Task t) {
        if (!caseName.startsWith("payload/")) {
            return null;
        }
        try {
            JsonNode want = Json.mapper().readTree(Files.readAllBytes(corpus.resolve(caseName.substring(8) + ".json")));
            return Json.valueEquals(t.payloadTree(), want);
        } catch (java.io.IOException e) {
            return null;
        }
    }

    void fail(Task t) throws Exception {
        report.append(line("conf_fail", t).put("attempt", t.attempt()));
        throw new IllegalStateException("conf_fail: deliberate failure on attempt " + t.attempt() + " of " + t.taskId());
    }

    void sleep(Task t) throws Exception {
        report.append(line("conf_sleep", t).put("attempt", t.attempt()).put("started_ms", System.currentTimeMillis()));
        Thread.sleep(t.payloadTree().path("sleep_ms").asLong()); // interrupted at the execution_timeout
    }

    void delay(Task t) throws Exception {
        report.append(line("conf_delay", t).put("started_ms", System.currentTimeMillis()));
    }

    void once(Task t) throws Exception {
        report.append(line("conf_once", t));
    }
}
