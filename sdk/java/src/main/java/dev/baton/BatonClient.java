package dev.baton;

import dev.baton.internal.Keys;
import dev.baton.internal.Protocol;
import dev.baton.internal.Redis;
import dev.baton.internal.Replies;
import dev.baton.internal.Threads;
import dev.baton.internal.Tracing;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;

/**
 * The producer: enqueues tasks through {@code baton_v2_enqueue}. Thread-safe; one per
 * application is enough (it holds a connection pool). Close it when done.
 *
 * <pre>{@code
 * try (BatonClient client = BatonClient.connect("redis://127.0.0.1:6379")) {
 *     EnqueueResult r = client.enqueue(TaskRequest.builder("orders", "settle")
 *             .payloadJson("{\"order\":42}").build());
 * }
 * }</pre>
 */
public final class BatonClient implements AutoCloseable {
    /** Tasks per enqueue call in {@link #enqueueAll(List)}. */
    static final int BATCH = 256;

    private final Redis redis;
    private final ExecutorService async;
    private final EnqueueCoalescer coalescer = new EnqueueCoalescer(this::call);
    private volatile boolean checkVersion;

    private BatonClient(Redis redis) {
        this.redis = redis;
        this.async = Threads.perTask("baton-client");
    }

    /**
     * Connects and checks the functions library version.
     *
     * @param redisUrl {@code redis://host:port[/db]}
     * @return the client
     * @throws BatonException {@code unavailable} or {@code version_mismatch}
     */
    public static BatonClient connect(String redisUrl) {
        Redis r = new Redis(redisUrl, 16);
        try {
            r.checkVersion();
        } catch (RuntimeException e) {
            r.close();
            throw e;
        }
        return new BatonClient(r);
    }

    /**
     * Enqueues one task. Concurrent calls for one namespace and type share Redis calls: while
     * one is in flight the others wait and then go together (a lone caller is never delayed).
     *
     * @param request the task
     * @return its outcome
     * @throws BatonException on a refused call or when Redis is unavailable
     */
    public EnqueueResult enqueue(TaskRequest request) {
        return send(request, producerSpan(request));
    }

    /** Enqueues one task whose producer span (or null) was started on the caller's thread. */
    private EnqueueResult send(TaskRequest request, Tracing.ProducerSpan span) {
        if (span == null) {
            return coalescer.enqueue(request);
        }
        EnqueueResult r;
        try {
            r = coalescer.enqueue(traced(request, span));
        } catch (RuntimeException | Error e) {
            span.end(null, e);
            throw e;
        }
        span.end(r.status().wire(), null);
        return r;
    }

    /**
     * Starts the PRODUCER span of a task that has no trace of its own, child of the current
     * OpenTelemetry context, on the caller's thread (a coalesced or async call sends it from
     * another thread).
     *
     * @return the span, or null (no OpenTelemetry, or the request carries its own trace)
     */
    private static Tracing.ProducerSpan producerSpan(TaskRequest r) {
        if (!Tracing.enabled() || r.extraRef().has("trace")) {
            return null;
        }
        return Tracing.startProducer("baton.enqueue " + r.taskType(), "baton.namespace", r.namespace(),
                "baton.task_type", r.taskType(), "baton.task_id", r.taskId());
    }

    private static TaskRequest traced(TaskRequest r, Tracing.ProducerSpan span) {
        return span == null || span.traceparent() == null ? r : r.withTrace(span.traceparent(), span.tracestate());
    }

    /**
     * Enqueues tasks in as few calls as possible (consecutive tasks of one namespace and type
     * share a call, which is atomic). Results are in request order.
     *
     * @param requests the tasks
     * @return one outcome per task
     */
    public List<EnqueueResult> enqueueAll(List<TaskRequest> requests) {
        return sendAll(requests, producerSpans(requests));
    }

    private static List<Tracing.ProducerSpan> producerSpans(List<TaskRequest> requests) {
        if (!Tracing.enabled()) {
            return null;
        }
        List<Tracing.ProducerSpan> spans = new ArrayList<>(requests.size());
        for (TaskRequest r : requests) {
            spans.add(producerSpan(r));
        }
        return spans;
    }

    /** Sends the tasks; each producer span (one per task, or null) ends with its task's outcome. */
    private List<EnqueueResult> sendAll(List<TaskRequest> requests, List<Tracing.ProducerSpan> spans) {
        if (spans == null) {
            return sendAll(requests);
        }
        List<TaskRequest> sent = new ArrayList<>(requests.size());
        for (int k = 0; k < requests.size(); k++) {
            sent.add(traced(requests.get(k), spans.get(k)));
        }
        List<EnqueueResult> out;
        try {
            out = sendAll(sent);
        } catch (RuntimeException | Error e) {
            for (Tracing.ProducerSpan span : spans) {
                if (span != null) {
                    span.end(null, e);
                }
            }
            throw e;
        }
        for (int k = 0; k < spans.size(); k++) {
            if (spans.get(k) != null) {
                spans.get(k).end(out.get(k).status().wire(), null);
            }
        }
        return out;
    }

    private List<EnqueueResult> sendAll(List<TaskRequest> requests) {
        List<EnqueueResult> out = new ArrayList<>(requests.size());
        int i = 0;
        while (i < requests.size()) {
            TaskRequest first = requests.get(i);
            int j = i + 1;
            while (j < requests.size() && j - i < BATCH && sameQueue(first, requests.get(j))) {
                j++;
            }
            out.addAll(call(requests.subList(i, j)));
            i = j;
        }
        return out;
    }

    /**
     * @param request the task
     * @return its outcome, completed on another thread
     */
    public CompletableFuture<EnqueueResult> enqueueAsync(TaskRequest request) {
        Tracing.ProducerSpan span = producerSpan(request); // on the caller's thread: its context
        return CompletableFuture.supplyAsync(() -> send(request, span), async);
    }

    /**
     * @param requests the tasks
     * @return their outcomes, completed on another thread
     */
    public CompletableFuture<List<EnqueueResult>> enqueueAllAsync(List<TaskRequest> requests) {
        List<TaskRequest> copy = List.copyOf(requests);
        List<Tracing.ProducerSpan> spans = producerSpans(copy);
        return CompletableFuture.supplyAsync(() -> sendAll(copy, spans), async);
    }

    private static boolean sameQueue(TaskRequest a, TaskRequest b) {
        return a.namespace().equals(b.namespace()) && a.taskType().equals(b.taskType());
    }

    private List<EnqueueResult> call(List<TaskRequest> batch) {
        TaskRequest first = batch.get(0);
        Keys keys = new Keys(first.namespace(), first.taskType());
        long now = System.currentTimeMillis();
        List<byte[]> args = new ArrayList<>(1 + 10 * batch.size());
        List<String> uniques = new ArrayList<>();
        List<String> ids = new ArrayList<>(batch.size());
        args.add(utf8(Integer.toString(batch.size())));
        for (TaskRequest r : batch) {
            String id = r.taskId();
            ids.add(id);
            ObjectNode extra = r.extraRef();
            args.add(utf8(id));
            args.add(r.payloadRef());
            args.add(utf8(Integer.toString(r.maxRetry())));
            args.add(utf8(Long.toString(r.delaySeconds())));
            args.add(utf8(Long.toString(now / 1000)));
            args.add(utf8(r.executionTimeout() == null ? "" : r.executionTimeout().toString()));
            args.add(extra.isEmpty() ? new byte[0] : utf8(extra.toString()));
            args.add(utf8(r.runAtMs() == null ? "0" : r.runAtMs().toString()));
            args.add(utf8(r.uniqueKey() == null ? "" : r.uniqueKey()));
            args.add(utf8(Long.toString(r.uniqueKey() == null ? 0 : r.uniqueTtlSeconds())));
            if (r.uniqueKey() != null) {
                uniques.add(r.uniqueKey());
            }
        }
        Object reply = invoke(() -> redis.fcall(Protocol.ENQUEUE, keys, uniques, args));
        return enqueueResults(ids, reply);
    }

    /**
     * Reads the reply of {@code baton_v2_enqueue}: a flat array of 2N values, {@code status,
     * detail} for each task in call order (docs/protocol.md), e.g. {@code ["queued",
     * "1722489600000-0", "duplicate", "active"]}.
     *
     * @param ids the ids of the N tasks sent, in call order
     * @param reply the raw reply
     * @return one outcome per task, in call order
     * @throws BatonException {@code internal} naming {@code baton_v2_enqueue} when the reply is
     *     not an array of exactly 2N values, or a status is unknown
     */
    static List<EnqueueResult> enqueueResults(List<String> ids, Object reply) {
        if (!(reply instanceof List<?> flat)) {
            throw malformedEnqueueReply("expected an array, got " + typeName(reply));
        }
        if (flat.size() != 2 * ids.size()) {
            throw malformedEnqueueReply("expected " + 2 * ids.size() + " values (status, detail for each of "
                    + ids.size() + " tasks), got " + flat.size());
        }
        List<EnqueueResult> out = new ArrayList<>(ids.size());
        for (int k = 0; k < ids.size(); k++) {
            Object status = flat.get(2 * k);
            Object detail = flat.get(2 * k + 1);
            if (!(status instanceof byte[]) || !(detail instanceof byte[] || detail instanceof Long)) {
                throw malformedEnqueueReply("task " + (k + 1) + ": expected a status and a detail, got "
                        + typeName(status) + " and " + typeName(detail));
            }
            EnqueueStatus s;
            try {
                s = EnqueueStatus.fromWire(Replies.string(status));
            } catch (BatonException e) {
                throw malformedEnqueueReply("task " + (k + 1) + ": " + e.getMessage());
            }
            out.add(new EnqueueResult(ids.get(k), s, Replies.string(detail)));
        }
        return out;
    }

    private static BatonException malformedEnqueueReply(String why) {
        return new BatonException(ErrorCode.INTERNAL, "unexpected reply from baton_v2_enqueue: " + why, null);
    }

    private static String typeName(Object o) {
        return o == null ? "nil" : o.getClass().getSimpleName();
    }

    /** Runs a call; after a connection failure the next call first re-checks the library version. */
    private Object invoke(java.util.function.Supplier<Object> op) {
        if (checkVersion) {
            redis.checkVersion();
            checkVersion = false;
        }
        try {
            return op.get();
        } catch (BatonException e) {
            if (e.code() == ErrorCode.UNAVAILABLE) {
                checkVersion = true;
            }
            throw e;
        }
    }

    private static byte[] utf8(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    @Override
    public void close() {
        async.shutdown();
        redis.close();
    }
}
