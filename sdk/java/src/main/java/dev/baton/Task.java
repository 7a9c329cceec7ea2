package dev.baton;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.Optional;

/**
 * A delivered task: the task document rebuilt from what {@code baton_v2_dequeue} returned. The
 * payload is kept as the producer's exact bytes; {@link #payloadTree()} and {@link
 * #payloadAs(Class)} parse it with exact numbers ({@link java.math.BigInteger}, {@link
 * java.math.BigDecimal}). Every top-level field this SDK does not know is in {@link #extra()} and
 * travels on with {@link TaskRequest#from(Task)}.
 */
public final class Task {
    private final String taskId;
    private final String namespace;
    private final String taskType;
    private final String streamId;
    private final byte[] payload;
    private final ObjectNode payloadTree;
    private final int maxRetry;
    private final long delaySeconds;
    private final long createdAt;
    private final Integer executionTimeout;
    private final int attempt;
    private final ObjectNode extra;
    private volatile Instant deadline;

    Task(String taskId, String namespace, String taskType, String streamId, byte[] payload, ObjectNode payloadTree,
         int maxRetry, long delaySeconds, long createdAt, Integer executionTimeout, int attempt, ObjectNode extra) {
        this.taskId = taskId;
        this.namespace = namespace;
        this.taskType = taskType;
        this.streamId = streamId;
        this.payload = payload;
        this.payloadTree = payloadTree;
        this.maxRetry = maxRetry;
        this.delaySeconds = delaySeconds;
        this.createdAt = createdAt;
        this.executionTimeout = executionTimeout;
        this.attempt = attempt;
        this.extra = extra;
    }

    /**
     * @return the task id
     */
    public String taskId() {
        return taskId;
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
     * @return the work stream entry id of this delivery
     */
    public String streamId() {
        return streamId;
    }

    /**
     * @return a copy of the payload's exact bytes
     */
    public byte[] payloadBytes() {
        return payload.clone();
    }

    /**
     * @return the payload text (UTF-8)
     */
    public String payloadText() {
        return new String(payload, StandardCharsets.UTF_8);
    }

    /**
     * @return a copy of the payload as a Jackson tree, numbers exact
     */
    public ObjectNode payloadTree() {
        return payloadTree.deepCopy();
    }

    /**
     * Binds the payload to a class with {@link Json#mapper()}; properties the class does not
     * declare are ignored, or kept when it extends {@link ExtensibleObject}.
     *
     * @param type the class
     * @param <T> its type
     * @return the bound value
     * @throws NonRetryableException when the payload does not fit the class (retrying cannot help)
     */
    public <T> T payloadAs(Class<T> type) {
        try {
            return Json.mapper().readValue(payload, type);
        } catch (IOException e) {
            throw new NonRetryableException("payload does not bind to " + type.getName() + ": "
                    + Rules.firstLine(e), e);
        }
    }

    /**
     * @return retries allowed after the first attempt
     */
    public int maxRetry() {
        return maxRetry;
    }

    /**
     * @return the delay the producer asked for, in seconds
     */
    public long delaySeconds() {
        return delaySeconds;
    }

    /**
     * @return when the producer created the task, Unix seconds
     */
    public long createdAt() {
        return createdAt;
    }

    /**
     * @return the per-attempt limit, if the producer set one
     */
    public Optional<Duration> executionTimeout() {
        return executionTimeout == null ? Optional.empty() : Optional.of(Duration.ofSeconds(executionTimeout));
    }

    /**
     * @return this attempt's number: 1 on the first run, 2 on the first retry, ...
     */
    public int attempt() {
        return attempt;
    }

    /**
     * @return whether this is the last attempt the task gets (a failure dead-letters it)
     */
    public boolean lastAttempt() {
        return attempt >= 1 + maxRetry;
    }

    /**
     * @return a copy of every other top-level field (trace, headers, unknown fields)
     */
    public ObjectNode extra() {
        return extra.deepCopy();
    }

    /**
     * @return the W3C traceparent the task carries, if any
     */
    public Optional<String> traceparent() {
        JsonNode t = extra.path("trace").path("traceparent");
        return t.isTextual() ? Optional.of(t.textValue()) : Optional.empty();
    }

    /**
     * @return the W3C tracestate the task carries, if any
     */
    public Optional<String> tracestate() {
        JsonNode t = extra.path("trace").path("tracestate");
        return t.isTextual() ? Optional.of(t.textValue()) : Optional.empty();
    }

    /**
     * @param name a header
     * @return its value, if the task carries it
     */
    public Optional<String> header(String name) {
        JsonNode h = extra.path("headers").path(name);
        return h.isTextual() ? Optional.of(h.textValue()) : Optional.empty();
    }

    /**
     * @return when this attempt's execution limit ends, if it has one: its execution_timeout, else
     *     the type's default ({@link HandlerOptions#defaultExecutionTimeout()}), capped by {@link
     *     HandlerOptions#maxExecutionTimeout()}
     */
    public Optional<Instant> deadline() {
        return Optional.ofNullable(deadline);
    }

    void deadline(Instant at) {
        this.deadline = at;
    }

    @Override
    public String toString() {
        return "Task[" + namespace + "/" + taskType + "/" + taskId + " attempt " + attempt + "]";
    }
}
