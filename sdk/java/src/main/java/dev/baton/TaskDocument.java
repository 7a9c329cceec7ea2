package dev.baton;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.util.Arrays;

/**
 * A task document as contract/task.schema.json describes it, parsed and validated. The payload
 * keeps the exact bytes it had inside the document; every top-level field the contract does not
 * define (plus {@code trace} and {@code headers}) is in {@link #extra()}.
 *
 * @param taskId task id
 * @param namespace namespace
 * @param taskType task type
 * @param payload the payload's exact bytes
 * @param maxRetry retries after the first attempt
 * @param delaySeconds delay before the first run
 * @param createdAt Unix seconds
 * @param executionTimeout seconds per attempt, or null
 * @param extra every other top-level field
 */
public record TaskDocument(String taskId, String namespace, String taskType, byte[] payload, int maxRetry,
                           long delaySeconds, long createdAt, Integer executionTimeout, ObjectNode extra) {

    /**
     * Parses and validates a task document. A refusal is an {@code invalid_argument} {@link
     * BatonException} naming the first offending field in schema order.
     *
     * @param text the document's JSON text
     * @return the document
     * @throws BatonException when the document breaks the contract
     */
    public static TaskDocument parse(byte[] text) {
        JsonNode root;
        try {
            root = Json.mapper().readTree(text);
        } catch (IOException e) {
            throw BatonException.invalid("document", "not valid JSON: " + Rules.firstLine(e));
        }
        if (root == null || !root.isObject()) {
            throw BatonException.invalid("document", "must be a JSON object (got " + Json.typeName(root) + ")");
        }
        String id = Rules.taskId("task_id", text(root, "task_id"));
        String ns = Rules.name("namespace", text(root, "namespace"));
        String type = Rules.name("task_type", text(root, "task_type"));
        JsonNode payloadNode = required(root, "payload");
        if (!payloadNode.isObject()) {
            throw BatonException.invalid("payload", "must be a JSON object (got " + Json.typeName(payloadNode) + ")");
        }
        byte[] payload = rawPayload(text);
        Rules.payload(payload);
        int maxRetry = (int) Rules.integer("max_retry", required(root, "max_retry"), 0, Rules.MAX_RETRY_MAX);
        long delay = Rules.integer("delay_seconds", required(root, "delay_seconds"), 0, Rules.DELAY_MAX);
        long createdAt = Rules.integer("created_at", required(root, "created_at"),
                Rules.CREATED_AT_MIN, Rules.CREATED_AT_MAX);
        Integer timeout = null;
        if (root.has("execution_timeout")) {
            timeout = (int) Rules.integer("execution_timeout", root.get("execution_timeout"), 1, Rules.TIMEOUT_MAX);
        }
        ObjectNode extra = Json.mapper().createObjectNode();
        root.properties().forEach(e -> {
            if (!TaskRequest.CONTRACT_FIELDS.contains(e.getKey())) {
                extra.set(e.getKey(), e.getValue());
            }
        });
        TaskRequest.checkExtra(extra);
        return new TaskDocument(id, ns, type, payload, maxRetry, delay, createdAt, timeout, extra);
    }

    private static JsonNode required(JsonNode root, String field) {
        JsonNode n = root.get(field);
        if (n == null) {
            throw BatonException.invalid(field, "required");
        }
        return n;
    }

    private static String text(JsonNode root, String field) {
        JsonNode n = required(root, field);
        return n.isTextual() ? n.textValue() : null;
    }

    /** The bytes of the top-level "payload" value, as written in the document. */
    private static byte[] rawPayload(byte[] text) {
        try (JsonParser p = Json.mapper().getFactory().createParser(text)) {
            p.nextToken();
            while (p.nextToken() == JsonToken.FIELD_NAME) {
                String name = p.currentName();
                JsonToken t = p.nextToken();
                if ("payload".equals(name)) {
                    int start = (int) p.currentTokenLocation().getByteOffset();
                    p.skipChildren();
                    int end = (int) p.currentLocation().getByteOffset();
                    return Arrays.copyOfRange(text, start, end);
                }
                if (t.isStructStart()) {
                    p.skipChildren();
                }
            }
        } catch (IOException e) {
            throw BatonException.invalid("document", "not valid JSON: " + Rules.firstLine(e));
        }
        throw BatonException.invalid("payload", "required");
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof TaskDocument d && taskId.equals(d.taskId) && namespace.equals(d.namespace)
                && taskType.equals(d.taskType) && Arrays.equals(payload, d.payload) && maxRetry == d.maxRetry
                && delaySeconds == d.delaySeconds && createdAt == d.createdAt
                && java.util.Objects.equals(executionTimeout, d.executionTimeout) && extra.equals(d.extra);
    }

    @Override
    public int hashCode() {
        return taskId.hashCode();
    }

    @Override
    public String toString() {
        return "TaskDocument[" + namespace + "/" + taskType + "/" + taskId + "]";
    }
}
