package dev.baton;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.Iterator;
import java.util.Map;
import java.util.Set;

/**
 * One task to enqueue, made with {@link #builder(String, String)} and validated by {@link
 * Builder#build()} (an {@code invalid_argument} {@link BatonException} names the field).
 *
 * <pre>{@code
 * TaskRequest req = TaskRequest.builder("orders", "settle")
 *         .payloadJson("{\"order\":42,\"amount\":12.10}")
 *         .maxRetry(5)
 *         .executionTimeout(Duration.ofSeconds(30))
 *         .build();
 * }</pre>
 */
public final class TaskRequest {
    /** Top-level fields of the task document that are not "extra". */
    static final Set<String> CONTRACT_FIELDS = Set.of("task_id", "namespace", "task_type", "payload",
            "max_retry", "delay_seconds", "created_at", "execution_timeout");

    private final String namespace;
    private final String taskType;
    private final String taskId;
    private final byte[] payload;
    private final int maxRetry;
    private final long delaySeconds;
    private final Long runAtMs;
    private final Integer executionTimeout;
    private final ObjectNode extra;
    private final String uniqueKey;
    private final long uniqueTtlSeconds;

    private TaskRequest(Builder b) {
        namespace = b.namespace;
        taskType = b.taskType;
        // made here, not at enqueue: sending the same request again (after a timeout, say) is
        // then idempotent
        taskId = b.taskId != null ? b.taskId : UuidV7.generate();
        payload = b.payload;
        maxRetry = b.maxRetry;
        delaySeconds = b.delaySeconds;
        runAtMs = b.runAtMs;
        executionTimeout = b.executionTimeout;
        extra = b.extra.deepCopy();
        uniqueKey = b.uniqueKey;
        uniqueTtlSeconds = b.uniqueTtlSeconds;
    }

    /** A copy whose trace is the given context (a producer span's); the request had no trace. */
    private TaskRequest(TaskRequest r, String traceparent, String tracestate) {
        namespace = r.namespace;
        taskType = r.taskType;
        taskId = r.taskId;
        payload = r.payload;
        maxRetry = r.maxRetry;
        delaySeconds = r.delaySeconds;
        runAtMs = r.runAtMs;
        executionTimeout = r.executionTimeout;
        extra = r.extra.deepCopy();
        ObjectNode trace = extra.putObject("trace");
        trace.put("traceparent", traceparent);
        if (tracestate != null && !tracestate.isEmpty() && tracestate.length() <= Rules.TRACESTATE_MAX) {
            trace.put("tracestate", tracestate);
        }
        uniqueKey = r.uniqueKey;
        uniqueTtlSeconds = r.uniqueTtlSeconds;
    }

    TaskRequest withTrace(String traceparent, String tracestate) {
        return new TaskRequest(this, traceparent, tracestate);
    }

    /**
     * @param namespace the business area, e.g. {@code orders}
     * @param taskType the handler key, e.g. {@code settle}
     * @return a builder with the defaults (max_retry 3, no delay, no timeout, a UUIDv7 id)
     */
    public static Builder builder(String namespace, String taskType) {
        return new Builder(namespace, taskType);
    }

    /**
     * A builder that re-enqueues a delivered task: same namespace, type, payload bytes, settings
     * and every extra field (unknown ones included), with a new id. On it, {@link
     * Builder#payloadObject(Object)} lays the value over the task's payload ({@link
     * Json#merge(ObjectNode, Object)}), so a payload bound to a plain class or a record and
     * changed keeps the properties the class does not declare.
     *
     * @param task a delivered task
     * @return a builder
     */
    public static Builder from(Task task) {
        Builder b = builder(task.namespace(), task.taskType()).payload(task.payloadBytes())
                .maxRetry(task.maxRetry()).delay(Duration.ofSeconds(task.delaySeconds()));
        task.executionTimeout().ifPresent(b::executionTimeout);
        task.extra().properties().forEach(e -> b.extra.set(e.getKey(), e.getValue().deepCopy()));
        b.source = task.payloadTree();
        return b;
    }

    /**
     * @return the namespace
     */
    public String namespace() {
        return namespace;
    }

    /**
     * @return the task type
     */
    public String taskType() {
        return taskType;
    }

    /**
     * @return the id given to the builder, or the UUIDv7 made by {@link Builder#build()}: enqueueing
     *     the same request twice enqueues one task
     */
    public String taskId() {
        return taskId;
    }

    /**
     * @return a copy of the payload bytes
     */
    public byte[] payload() {
        return payload.clone();
    }

    byte[] payloadRef() {
        return payload;
    }

    /**
     * @return retries after the first attempt
     */
    public int maxRetry() {
        return maxRetry;
    }

    /**
     * @return the delay before the first run, in seconds
     */
    public long delaySeconds() {
        return delaySeconds;
    }

    /**
     * @return the absolute due time in Unix ms, or null
     */
    public Long runAtMs() {
        return runAtMs;
    }

    /**
     * @return the per-attempt limit in seconds, or null
     */
    public Integer executionTimeout() {
        return executionTimeout;
    }

    /**
     * @return a copy of the extra top-level fields (trace, headers, unknown ones)
     */
    public ObjectNode extra() {
        return extra.deepCopy();
    }

    ObjectNode extraRef() {
        return extra;
    }

    /**
     * @return the unique key, or null
     */
    public String uniqueKey() {
        return uniqueKey;
    }

    /**
     * @return how long the unique key is held, in seconds
     */
    public long uniqueTtlSeconds() {
        return uniqueTtlSeconds;
    }

    /** Checks the extra fields: no contract field among them, trace and headers by their rules. */
    static void checkExtra(ObjectNode extra) {
        for (Iterator<Map.Entry<String, JsonNode>> it = extra.properties().iterator(); it.hasNext(); ) {
            Map.Entry<String, JsonNode> e = it.next();
            if (CONTRACT_FIELDS.contains(e.getKey())) {
                throw BatonException.invalid(e.getKey(), "is a contract field: set it with its builder method");
            }
            if (e.getKey().equals("trace")) {
                Rules.trace(e.getValue());
            } else if (e.getKey().equals("headers")) {
                Rules.headers(e.getValue());
            }
        }
    }

    /** Builds a {@link TaskRequest}; not thread-safe. */
    public static final class Builder {
        private final String namespace;
        private final String taskType;
        private String taskId;
        private byte[] payload = "{}".getBytes(StandardCharsets.UTF_8);
        private int maxRetry = 3;
        private long delaySeconds;
        private Long runAtMs;
        private Integer executionTimeout;
        private final ObjectNode extra = Json.mapper().createObjectNode();
        private String uniqueKey;
        private long uniqueTtlSeconds;
        /** The delivered task's payload, on a builder made by {@link TaskRequest#from(Task)}. */
        private ObjectNode source;

        private Builder(String namespace, String taskType) {
            this.namespace = namespace;
            this.taskType = taskType;
        }

        /**
         * @param id the task id (idempotency key); default a new UUIDv7
         * @return this
         */
        public Builder taskId(String id) {
            this.taskId = id;
            return this;
        }

        /**
         * @param json the payload, a JSON object text, sent byte for byte
         * @return this
         */
        public Builder payload(byte[] json) {
            this.payload = json.clone();
            return this;
        }

        /**
         * @param json the payload, a JSON object text, sent as UTF-8
         * @return this
         */
        public Builder payloadJson(String json) {
            this.payload = json.getBytes(StandardCharsets.UTF_8);
            return this;
        }

        /**
         * Serializes the payload with {@link Json#mapper()}. On a builder made by {@link
         * TaskRequest#from(Task)}, the value is laid over the delivered task's payload instead
         * ({@link Json#merge(ObjectNode, Object)}): properties the value's class does not declare
         * are kept from the task.
         *
         * @param value an object serialized with {@link Json#mapper()} (a Map, a POJO, a record, a
         *     JsonNode)
         * @return this
         */
        public Builder payloadObject(Object value) {
            try {
                this.payload = Json.mapper().writeValueAsBytes(source == null ? value : Json.merge(source, value));
            } catch (JsonProcessingException e) {
                throw BatonException.invalid("payload", "cannot be serialized: " + Rules.firstLine(e));
            }
            return this;
        }

        /**
         * @param n retries after the first attempt, 0..25 (default 3)
         * @return this
         */
        public Builder maxRetry(int n) {
            this.maxRetry = n;
            return this;
        }

        /**
         * @param d delay before the first run, whole seconds, up to one year (for a finer time use
         *     {@link #runAt(Instant)})
         * @return this
         * @throws BatonException {@code invalid_argument} ({@code delay_seconds}) for a fraction of
         *     a second, rather than dropping it
         */
        public Builder delay(Duration d) {
            this.delaySeconds = wholeSeconds("delay_seconds", d);
            return this;
        }

        private static long wholeSeconds(String field, Duration d) {
            if (d.getNano() != 0) {
                throw BatonException.invalid(field, "must be whole seconds (got " + d + ")");
            }
            return d.getSeconds();
        }

        /**
         * @param at the absolute time of the first run (Redis clock)
         * @return this
         */
        public Builder runAt(Instant at) {
            this.runAtMs = at.toEpochMilli();
            return this;
        }

        /**
         * @param d the limit of one attempt, whole seconds 1..86400
         * @return this
         * @throws BatonException {@code invalid_argument} ({@code execution_timeout}) for a
         *     fraction of a second or a value out of range
         */
        public Builder executionTimeout(Duration d) {
            this.executionTimeout = (int) Rules.range("execution_timeout", wholeSeconds("execution_timeout", d), 1,
                    Rules.TIMEOUT_MAX);
            return this;
        }

        /**
         * Adds a top-level field the contract does not define (it travels untouched).
         *
         * @param name the field name
         * @param value a JsonNode, or any value {@link Json#mapper()} can convert
         * @return this
         */
        public Builder extra(String name, Object value) {
            extra.set(name, value instanceof JsonNode n ? n : Json.mapper().valueToTree(value));
            return this;
        }

        /**
         * @param traceparent a W3C traceparent header value
         * @return this
         */
        public Builder traceparent(String traceparent) {
            trace().put("traceparent", traceparent);
            return this;
        }

        /**
         * @param tracestate a W3C tracestate header value
         * @return this
         */
        public Builder tracestate(String tracestate) {
            trace().put("tracestate", tracestate);
            return this;
        }

        /**
         * @param name header name
         * @param value header value (string metadata)
         * @return this
         */
        public Builder header(String name, String value) {
            JsonNode h = extra.get("headers");
            (h instanceof ObjectNode o ? o : extra.putObject("headers")).put(name, value);
            return this;
        }

        /**
         * @param key a unique key: a second task with it is refused while it is held
         * @param ttl how long the key is held (at least 1 s)
         * @return this
         */
        public Builder uniqueKey(String key, Duration ttl) {
            this.uniqueKey = key;
            this.uniqueTtlSeconds = wholeSeconds("unique_ttl_s", ttl);
            return this;
        }

        private ObjectNode trace() {
            JsonNode t = extra.get("trace");
            return t instanceof ObjectNode o ? o : extra.putObject("trace");
        }

        /**
         * @return the validated request
         * @throws BatonException {@code invalid_argument} naming the first bad field
         */
        public TaskRequest build() {
            if (taskId != null) {
                Rules.taskId("task_id", taskId);
            }
            Rules.name("namespace", namespace);
            Rules.name("task_type", taskType);
            Rules.payload(payload);
            Rules.range("max_retry", maxRetry, 0, Rules.MAX_RETRY_MAX);
            Rules.range("delay_seconds", delaySeconds, 0, Rules.DELAY_MAX);
            if (executionTimeout != null) {
                Rules.range("execution_timeout", executionTimeout, 1, Rules.TIMEOUT_MAX);
            }
            if (runAtMs != null && runAtMs < 0) {
                throw BatonException.invalid("run_at", "must not be before 1970");
            }
            if (uniqueKey != null) {
                if (uniqueKey.isEmpty() || uniqueKey.contains("{") || uniqueKey.contains("}")) {
                    throw BatonException.invalid("unique_key", "must be a non-empty string without { or }");
                }
                if (uniqueTtlSeconds < 1) {
                    throw BatonException.invalid("unique_ttl_s", "must be at least 1 second");
                }
            }
            checkExtra(extra);
            return new TaskRequest(this);
        }
    }
}
