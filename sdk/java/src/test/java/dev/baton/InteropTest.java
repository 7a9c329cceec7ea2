package dev.baton;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Interop with the C++ side through the {@code baton} CLI: Java produces for {@code baton work
 * --exec} (the C++ worker), and {@code baton enqueue} produces for a Java worker whose failures
 * {@code baton task show} then lists with their Java stacks.
 */
class InteropTest extends Fixtures {
    static String cli(String... args) throws Exception {
        List<String> cmd = new ArrayList<>(List.of(CppBinaries.find("cli/baton").toString(), "--redis", redis.url()));
        cmd.addAll(List.of(args));
        Process p = new ProcessBuilder(cmd).redirectError(ProcessBuilder.Redirect.INHERIT).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(p.waitFor(60, TimeUnit.SECONDS));
        assertEquals(0, p.exitValue(), "baton " + String.join(" ", args) + ": " + out);
        return out;
    }

    @Test
    void javaProducerCppWorker(@TempDir Path dir) throws Exception {
        Path bin = CppBinaries.find("cli/baton");
        String ns = newNamespace();
        String payload = "{\"big\": 123456789012345678901234567890, \"price\": 1.10, \"text\": \"二 🚀\"}";
        EnqueueResult r;
        try (BatonClient c = client()) {
            r = c.enqueue(TaskRequest.builder(ns, "cpp_side").payloadJson(payload).maxRetry(4)
                    .extra("x_origin", java.util.Map.of("lang", "java")).build());
        }
        String script = "cat > \"$OUT/$BATON_TASK_ID.payload\"; printf '%s' \"$BATON_TASK\" > \"$OUT/$BATON_TASK_ID.task\"";
        ProcessBuilder pb = new ProcessBuilder(bin.toString(), "--redis", redis.url(), "work", "--ns", ns, "--type",
                "cpp_side", "--exec", script).redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.DISCARD);
        pb.environment().put("OUT", dir.toString());
        Process work = pb.start();
        try {
            waitFor(Duration.ofSeconds(30), "baton work to run the task", () -> isDone(ns, r.taskId()));
        } finally {
            work.destroy();
            work.waitFor(30, TimeUnit.SECONDS);
        }
        assertEquals(payload, Files.readString(dir.resolve(r.taskId() + ".payload")));
        TaskDocument doc = TaskDocument.parse(Files.readAllBytes(dir.resolve(r.taskId() + ".task")));
        assertEquals(r.taskId(), doc.taskId());
        assertEquals(ns, doc.namespace());
        assertEquals(4, doc.maxRetry());
        assertEquals(payload, new String(doc.payload(), StandardCharsets.UTF_8));
        assertEquals("{\"lang\":\"java\"}", doc.extra().get("x_origin").toString());
    }

    @Test
    void cliProducerJavaWorkerFailuresShowJavaStacks() throws Exception {
        String ns = newNamespace();
        String payload = "{\"n\": 12345678901234567890, \"f\": 1.10}";
        JsonNode enq = Json.mapper().readTree(cli("--json", "enqueue", "--ns", ns, "--type", "java_side", "--payload",
                payload, "--max-retry", "1", "--timeout", "30", "--extra",
                "{\"x_from\":\"cli\",\"headers\":{\"producer\":\"baton-cli\"}}"));
        assertEquals("queued", enq.get("outcome").asText());
        String id = enq.get("task_id").asText();
        LinkedBlockingQueue<Task> got = new LinkedBlockingQueue<>();
        try (Worker w = worker().build()) {
            w.handle(ns, "java_side", t -> {
                got.add(t);
                throw new IOException("java handler refuses");
            });
            w.start();
            Task t = got.poll(30, TimeUnit.SECONDS);
            assertEquals(id, t.taskId());
            assertEquals(payload, t.payloadText());
            assertEquals(1, t.maxRetry());
            assertEquals(Duration.ofSeconds(30), t.executionTimeout().orElseThrow());
            assertEquals("cli", t.extra().get("x_from").asText());
            assertEquals("baton-cli", t.header("producer").orElseThrow());
            waitFor(Duration.ofSeconds(30), "dead", () -> String.valueOf(record(ns, id)).startsWith("dead|"));
        }
        JsonNode show = Json.mapper().readTree(cli("--json", "task", "show", id, "--ns", ns));
        assertEquals("dead", show.get("state").asText());
        assertEquals(2, show.get("errors").size());
        for (JsonNode e : show.get("errors")) {
            assertEquals("error", e.get("kind").asText());
            assertEquals("java.io.IOException: java handler refuses", e.get("error").asText());
            assertTrue(e.get("stack").asText().contains("\tat dev.baton.InteropTest.lambda$"), e.get("stack").asText());
        }
    }
}
