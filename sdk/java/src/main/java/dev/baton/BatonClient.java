package dev.baton;

import dev.baton.internal.Keys;
import dev.baton.internal.Partitions;
import dev.baton.internal.Protocol;
import dev.baton.internal.Redis;
import dev.baton.internal.Replies;
import dev.baton.internal.Threads;
import dev.baton.internal.Tracing;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
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
    /** How long {@link Builder#waitReplicas(int)} waits by default. */
    public static final Duration DEFAULT_WAIT_TIMEOUT = Duration.ofSeconds(1);

    private final Redis redis;
    private final ExecutorService async;
    private final EnqueueCoalescer coalescer = new EnqueueCoalescer(this::sendEach);
    private final Partitions.Cache partitions;
    private volatile boolean checkVersion;

    private final int waitReplicas;
    private final long waitTimeoutMs;

    private BatonClient(Redis redis, int waitReplicas, long waitTimeoutMs) {
        this.redis = redis;
        this.waitReplicas = waitReplicas;
        this.waitTimeoutMs = waitTimeoutMs;
        this.async = Threads.perTask("baton-client");
        this.partitions = new Partitions.Cache(redis);
    }

    /**
     * Connects and checks the functions library version (on a Redis Cluster: on every primary).
     *
     * @param redisUrl {@code redis://host:port[/db]}, or the seed nodes of a Redis Cluster
     *     {@code redis+cluster://[user:password@]host:port[,host:port...]}
     * @return the client
     * @throws BatonException {@code invalid_argument} (a bad URL, naming {@code redis_url} for a
     *     cluster URL), {@code unavailable} or {@code version_mismatch}
     */
    public static BatonClient connect(String redisUrl) {
        return builder(redisUrl).build();
    }

    /**
     * @param redisUrl as for {@link #connect(String)}
     * @return a builder with the defaults (no WAIT)
     */
    public static Builder builder(String redisUrl) {
        return new Builder(redisUrl);
    }

    /** Settings of a {@link BatonClient}. */
    public static final class Builder {
        private final String redisUrl;
        private int waitReplicas;
        private Duration waitTimeout = DEFAULT_WAIT_TIMEOUT;

        private Builder(String redisUrl) {
            this.redisUrl = redisUrl;
        }

        /**
         * Durable enqueue (default 0: off). After each enqueue call, on the same connection of
         * the same primary, the client sends {@code WAIT n <waitTimeout>}. When fewer than
         * {@code n} replicas acknowledged the write in time, the enqueue throws {@link
         * NotDurableException} ({@code unavailable}): the task was written on the primary (it
         * may still run) but is not known to survive a failover. Works on a Redis Cluster and on
         * a single Redis with replicas.
         *
         * @param n replicas to wait for, at least 0
         * @return this
         */
        public Builder waitReplicas(int n) {
            this.waitReplicas = n;
            return this;
        }

        /**
         * @param d how long {@link #waitReplicas(int)} waits (default 1 s; at least 1 ms and
         *     shorter than the Redis socket timeout, 2 s)
         * @return this
         */
        public Builder waitTimeout(Duration d) {
            this.waitTimeout = d;
            return this;
        }

        /**
         * Checks the settings, connects and checks the library version.
         *
         * @return the client
         * @throws BatonException {@code invalid_argument} naming {@code wait_replicas} or
         *     {@code wait_timeout}, or as {@link BatonClient#connect(String)}
         */
        public BatonClient build() {
            if (waitReplicas < 0) {
                throw BatonException.invalid("wait_replicas", "must be >= 0 (got " + waitReplicas + ")");
            }
            if (waitTimeout == null || waitTimeout.toMillis() < 1) {
                throw BatonException.invalid("wait_timeout", "must be at least 1 ms (got "
                        + (waitTimeout == null ? "null" : waitTimeout.toMillis() + " ms") + ")");
            }
            if (waitReplicas > 0 && waitTimeout.toMillis() >= Redis.SOCKET_TIMEOUT_MS) {
                throw BatonException.invalid("wait_timeout", "must be shorter than the Redis socket timeout "
                        + Redis.SOCKET_TIMEOUT_MS + " ms (got " + waitTimeout.toMillis() + " ms)");
            }
            Redis r = new Redis(redisUrl, 16);
            try {
                r.checkVersion(true);
            } catch (RuntimeException e) {
                r.close();
                throw e;
            }
            return new BatonClient(r, waitReplicas, waitTimeout.toMillis());
        }
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
     * Enqueues tasks in as few calls as possible (the tasks of one namespace partition and type
     * share calls of up to 256 tasks, each atomic). Results are in request order.
     *
     * @param requests the tasks
     * @return one outcome per task
     * @throws NotDurableException with {@link Builder#waitReplicas(int)}, after every call was sent,
     *     when the {@code WAIT} of some fell short: every outcome, and the tasks of the short calls
     *     in {@link NotDurableException#notDurableTaskIds()}
     * @throws BatonException the first error of a call; a call refused ({@code invalid_argument})
     *     does not stop the calls of the other (partition, type) groups, any other error does
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
        } catch (NotDurableException e) { // only the tasks of short calls end with the error
            java.util.Set<String> notDurable = new java.util.HashSet<>(e.notDurableTaskIds());
            for (int k = 0; k < spans.size(); k++) {
                EnqueueResult r = e.results().get(k);
                boolean fellShort = notDurable.contains(r.taskId());
                if (spans.get(k) != null) {
                    spans.get(k).end(fellShort ? null : r.status().wire(), fellShort ? e : null);
                }
            }
            throw e;
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

    /**
     * Sends tasks and throws the first error of any call; a short {@code WAIT} of some calls is
     * thrown, after every call was sent, as one {@link NotDurableException} with every outcome and
     * the ids of the tasks of the short calls.
     */
    private List<EnqueueResult> sendAll(List<TaskRequest> requests) {
        List<Sent> sent = sendEach(requests);
        List<EnqueueResult> out = new ArrayList<>(sent.size());
        List<String> shortIds = new ArrayList<>();
        String shortWhy = null;
        for (Sent s : sent) {
            if (s.error() != null) {
                throw s.error();
            }
            out.add(s.result());
            if (s.notDurable() != null) {
                shortIds.add(s.result().taskId());
                shortWhy = shortWhy == null ? s.notDurable() : shortWhy;
            }
        }
        if (shortWhy == null) {
            return out;
        }
        if (shortIds.size() < out.size()) {
            String shown = String.join(", ", shortIds.subList(0, Math.min(10, shortIds.size())))
                    + (shortIds.size() > 10 ? ", ..." : "");
            shortWhy = shortIds.size() + " of " + out.size() + " tasks (" + shown + ") " + shortWhy;
        }
        throw new NotDurableException(shortWhy, out, shortIds);
    }

    /**
     * What became of one task of {@link #sendEach}: its outcome, with the message of its call's short
     * {@code WAIT} (or null), or the error of its call, which had {@code callSize} tasks (0: not sent,
     * after an earlier call failed with {@code error}).
     */
    record Sent(EnqueueResult result, String notDurable, BatonException error, int callSize) {}

    /**
     * Sends tasks: each goes to the partition of its id (docs/cluster.md, "Partitions"); the
     * tasks of one (partition, type) share calls of up to {@link #BATCH}, each atomic, so each
     * task gets the outcome of its own call. A refused call ({@code invalid_argument}, about its
     * own tasks) does not stop the others; any other error does (the rest would most likely meet
     * it too) and the tasks not sent get it. Results in request order.
     *
     * @throws BatonException when the partition counts cannot be read (nothing sent)
     */
    List<Sent> sendEach(List<TaskRequest> requests) {
        Map<String, Integer> counts;
        try {
            counts = partitions.get(requests.stream().map(TaskRequest::namespace).toList());
        } catch (BatonException e) {
            if (e.code() == ErrorCode.UNAVAILABLE) {
                checkVersion = true; // as after a failed call: the next one checks the library again
            }
            throw e;
        }
        Map<List<String>, List<Integer>> groups = new LinkedHashMap<>(); // (storage ns, type) -> request indexes
        for (int k = 0; k < requests.size(); k++) {
            TaskRequest r = requests.get(k);
            String storage = Partitions.storage(r.namespace(), Partitions.of(r.taskId(), counts.get(r.namespace())));
            groups.computeIfAbsent(List.of(storage, r.taskType()), g -> new ArrayList<>()).add(k);
        }
        Sent[] out = new Sent[requests.size()];
        BatonException stop = null;
        for (Map.Entry<List<String>, List<Integer>> g : groups.entrySet()) {
            List<Integer> idx = g.getValue();
            for (int i = 0; i < idx.size(); i += BATCH) {
                List<Integer> part = idx.subList(i, Math.min(idx.size(), i + BATCH));
                if (stop != null) {
                    for (int k : part) {
                        out[k] = new Sent(null, null, stop, 0);
                    }
                    continue;
                }
                try {
                    List<EnqueueResult> res = call(g.getKey().get(0), part.stream().map(requests::get).toList());
                    for (int j = 0; j < part.size(); j++) {
                        out[part.get(j)] = new Sent(res.get(j), null, null, part.size());
                    }
                } catch (NotDurableException e) { // written: the other calls go on
                    for (int j = 0; j < part.size(); j++) {
                        out[part.get(j)] = new Sent(e.results().get(j), e.getMessage(), null, part.size());
                    }
                } catch (BatonException e) {
                    for (int k : part) {
                        out[k] = new Sent(null, null, e, part.size());
                    }
                    if (e.code() != ErrorCode.INVALID_ARGUMENT) {
                        stop = e;
                    }
                }
            }
        }
        return Arrays.asList(out);
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

    /** One enqueue call of tasks of one type into one storage namespace (a partition). */
    private List<EnqueueResult> call(String storageNamespace, List<TaskRequest> batch) {
        TaskRequest first = batch.get(0);
        Keys keys = new Keys(storageNamespace, first.taskType());
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
        if (waitReplicas == 0) {
            Object reply = invoke(() -> redis.fcall(Protocol.ENQUEUE, keys, uniques, args));
            return enqueueResults(ids, reply);
        }
        Redis.Durable d = (Redis.Durable) invoke(() -> redis.fcallDurable(Protocol.ENQUEUE, keys, uniques, args,
                waitReplicas, waitTimeoutMs));
        List<EnqueueResult> out = enqueueResults(ids, d.reply());
        if (d.acked() == null) {
            throw new NotDurableException("written on the primary, but WAIT " + waitReplicas + " failed (" + d.waitError()
                    + "): it may still run but is not known to be durable", out);
        }
        if (d.acked() < waitReplicas) {
            throw new NotDurableException("written on the primary but acknowledged by only " + d.acked() + " of "
                    + waitReplicas + " replicas within " + waitTimeoutMs
                    + " ms: it may still run but is not known to be durable", out);
        }
        return out;
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
            redis.checkVersion(false);
            checkVersion = false;
        }
        try {
            return op.get();
        } catch (BatonException e) {
            if (e.code() == ErrorCode.UNAVAILABLE && !(e instanceof NotDurableException)) {
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
