package dev.baton.conformance;

import com.fasterxml.jackson.databind.JsonNode;
import dev.baton.BatonClient;
import dev.baton.EnqueueResult;
import dev.baton.Json;
import dev.baton.TaskRequest;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;

/** Enqueues each case with the SDK: the payload file's exact bytes, the settings, the extra fields. */
final class Produce {
    private Produce() {}

    static int run(String redis, String ns, String casesFile) throws Exception {
        List<String> lines = Files.readAllLines(Path.of(casesFile), StandardCharsets.UTF_8);
        boolean failed = false;
        try (BatonClient client = BatonClient.connect(redis)) {
            for (String line : lines) {
                if (line.isBlank()) {
                    continue;
                }
                JsonNode c = Json.mapper().readTree(line);
                String name = c.path("case").asText();
                try {
                    TaskRequest.Builder b = TaskRequest.builder(ns, c.get("task_type").asText())
                            .payload(Files.readAllBytes(Path.of(c.get("payload_file").asText())))
                            .maxRetry(c.get("max_retry").asInt())
                            .delay(Duration.ofSeconds(c.path("delay_seconds").asLong()));
                    if (c.hasNonNull("execution_timeout")) {
                        b.executionTimeout(Duration.ofSeconds(c.get("execution_timeout").asLong()));
                    }
                    if (c.hasNonNull("task_id")) {
                        b.taskId(c.get("task_id").asText());
                    }
                    c.path("extra").properties().forEach(e -> b.extra(e.getKey(), e.getValue()));
                    EnqueueResult r = client.enqueue(b.build());
                    var out = Json.mapper().createObjectNode();
                    out.put("case", name).put("task_id", r.taskId()).put("status", r.status().wire());
                    System.out.println(out);
                } catch (Exception e) {
                    System.err.println("produce " + name + ": " + e);
                    failed = true;
                }
            }
        }
        System.out.flush();
        return failed ? 1 : 0;
    }
}
