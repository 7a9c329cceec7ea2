package dev.baton;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.baton.internal.Keys;
import dev.baton.internal.Partitions;
import dev.baton.internal.Protocol;
import dev.baton.internal.Replies;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Semaphore;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;

/**
 * The worker loop of one (namespace partition, task type), docs/protocol.md "Worker loop": fetch with
 * {@code baton_v2_dequeue} as many tasks as there are free slots (batched), block on {@code XREAD}
 * when there are none, run each as an {@link Attempt}, heartbeat the leases of running attempts
 * every third of the lease, ack in batches ({@link AckBatcher}) and fail with the stack trace.
 */
final class TypeRunner implements Runnable {
    private final WorkerContext ctx;
    private final String namespace;
    private final Keys keys;
    private final TaskHandler handler;
    private final HandlerOptions options;
    private final ExecutorService executor;
    private final Semaphore slots;
    private final AckBatcher acks;
    private final Map<String, Attempt> running = new ConcurrentHashMap<>();
    private String lastId = "0-0";

    /**
     * @param namespace the namespace handlers see
     * @param partition the partition of it this runner serves (its keys: docs/cluster.md, "Partitions")
     */
    TypeRunner(WorkerContext ctx, String namespace, int partition, String type, TaskHandler handler,
               HandlerOptions options, ExecutorService executor) {
        this.ctx = ctx;
        this.namespace = namespace;
        this.keys = new Keys(Partitions.storage(namespace, partition), type);
        this.handler = handler;
        this.options = options;
        this.executor = executor;
        this.slots = new Semaphore(options.concurrency());
        this.acks = new AckBatcher(ctx, keys);
    }

    WorkerContext ctx() {
        return ctx;
    }

    Keys keys() {
        return keys;
    }

    TaskHandler handler() {
        return handler;
    }

    ExecutorService executor() {
        return executor;
    }

    AckBatcher acks() {
        return acks;
    }

    int runningCount() {
        return running.size();
    }

    java.util.Optional<HandlerOptions.Limit> limitFor(Task task) {
        return options.limitFor(task.executionTimeout());
    }

    long leaseMs() {
        return options.lease().toMillis();
    }

    /** The fetch loop; returns once the worker stops fetching. */
    @Override
    public void run() {
        while (ctx.fetching) {
            int free;
            try {
                if (!slots.tryAcquire(200, TimeUnit.MILLISECONDS)) {
                    continue;
                }
            } catch (InterruptedException e) {
                return;
            }
            free = 1 + slots.drainPermits();
            int want = Math.min(free, ctx.batch);
            slots.release(free - want);
            int used = 0;
            try {
                used = fetch(want);
            } catch (RuntimeException e) {
                // whatever it is, the loop carries on: a dead fetch thread would stop the type for good
                WorkerContext.LOG.log(System.Logger.Level.ERROR, "dequeue " + keys + ": " + e, e);
                WorkerContext.sleep(1000);
            } finally {
                slots.release(want - used);
            }
        }
    }

    /** One dequeue; starts what came back and returns how many slots it took. */
    private int fetch(int count) {
        List<byte[]> args = List.of(utf8(ctx.group), utf8(ctx.consumer), utf8(Integer.toString(count)),
                utf8(Long.toString(leaseMs())));
        // a fetch that fails while the worker stops is not retried (the shutdown must not wait for Redis)
        Object reply = ctx.retrying("dequeue", () -> !ctx.fetching,
                () -> ctx.redis.fcall(Protocol.DEQUEUE, keys, List.of(), args));
        if (reply == null) {
            return 0;
        }
        List<Object> r = Replies.list(reply);
        List<Object> flat = Replies.list(r.get(0));
        if (flat.isEmpty()) {
            lastId = Replies.string(r.get(1));
            ctx.retrying("xread", () -> !ctx.fetching, () -> {
                ctx.redis.waitForEntries(keys.key(Protocol.KeyKind.STREAM), lastId, ctx.blockMs);
                return Boolean.TRUE;
            });
            return 0;
        }
        int n = flat.size() / 9;
        for (int i = 0; i < n; i++) {
            deliver(flat.subList(9 * i, 9 * i + 9));
        }
        return n;
    }

    /** Rebuilds the task document of one delivered entry and starts it (or fails it as malformed). */
    private void deliver(List<Object> e) {
        String sid = Replies.string(e.get(0));
        String id = Replies.string(e.get(1));
        byte[] payload = Replies.bytes(e.get(2));
        Task task;
        try {
            task = decode(sid, id, payload, e);
        } catch (RuntimeException bad) {
            ctx.counters.malformed.increment();
            Task shell = new Task(id, namespace, keys.type(), sid, payload, null, 0, 0, 0, null, 0, null);
            slots.release();
            fail(shell, new Failure("malformed", "cannot decode the delivered task: " + bad.getMessage(),
                    Failure.stackOf(bad)));
            return;
        }
        Attempt a = new Attempt(this, task);
        running.put(sid, a);
        try {
            a.start();
        } catch (RuntimeException rejected) {
            // e.g. a given executor that is shut down or has a full bounded queue: start() has
            // freed the slot; the attempt is failed (retried after the backoff), not stranded
            fail(task, new Failure("error", "the executor of " + keys + " did not take the task: " + rejected,
                    Failure.stackOf(rejected)));
        }
    }

    private Task decode(String sid, String id, byte[] payload, List<Object> e) {
        JsonNode tree = Rules.payload(payload);
        int maxRetry = (int) Replies.integer(e.get(3));
        long delay = Replies.integer(e.get(4));
        long createdAt = Replies.integer(e.get(5));
        String timeout = Replies.string(e.get(6));
        byte[] extraText = Replies.bytes(e.get(7));
        int attempt = (int) Replies.integer(e.get(8)) + 1;
        ObjectNode extra;
        if (extraText.length == 0) {
            extra = Json.mapper().createObjectNode();
        } else {
            JsonNode x;
            try {
                x = Json.mapper().readTree(extraText);
            } catch (java.io.IOException ex) {
                throw BatonException.invalid("extra", "not valid JSON: " + Rules.firstLine(ex));
            }
            if (!(x instanceof ObjectNode o)) {
                throw BatonException.invalid("extra", "must be a JSON object");
            }
            extra = o;
        }
        Integer limit = timeout.isEmpty() ? null : Integer.valueOf(timeout);
        return new Task(id, namespace, keys.type(), sid, payload, (ObjectNode) tree, maxRetry, delay,
                createdAt, limit, attempt, extra);
    }

    /** Called once per attempt when its outcome is decided: frees its slot, ends its heartbeat. */
    void finished(Attempt a) {
        if (running.remove(a.task.streamId(), a)) {
            slots.release();
        }
    }

    /** Records a failed attempt with {@code baton_v2_fail} (retry with backoff or dead-letter). */
    void fail(Task task, Failure f) {
        List<byte[]> args = new ArrayList<>(10);
        for (String s : new String[] {ctx.group, ctx.consumer, task.taskId(), task.streamId(), f.kind(), f.error(),
                f.stack(), Long.toString(ctx.retry.base().toMillis()), Long.toString(ctx.retry.max().toMillis()),
                Double.toString(ThreadLocalRandom.current().nextDouble())}) {
            args.add(utf8(s));
        }
        int[] tries = {0};
        try {
            Object reply = ctx.retrying("fail", () -> {
                tries[0]++;
                return ctx.redis.fcall(Protocol.FAIL, keys, List.of(), args);
            });
            if (reply != null) {
                // "stale": the task is no longer ours (taken back, deleted), nothing was recorded;
                // after a retried call, a first try that timed out may have recorded it
                String status = Replies.string(Replies.list(reply).get(0));
                if (status.equals("stale") && tries[0] > 1) {
                    ctx.counters.failed.increment();
                }
                if (status.equals("retry")) {
                    ctx.counters.failed.increment();
                    ctx.counters.retried.increment();
                } else if (status.equals("dead")) {
                    ctx.counters.failed.increment();
                    ctx.counters.dead.increment();
                }
            }
        } catch (BatonException e) {
            WorkerContext.LOG.log(System.Logger.Level.ERROR, "fail of " + task.taskId() + ": " + e.getMessage());
        }
    }

    /** Renews the leases of running attempts ({@code baton_v2_extend}); run every lease/3. */
    void heartbeat() {
        if (running.isEmpty()) {
            return;
        }
        List<byte[]> args = new ArrayList<>();
        args.add(utf8(ctx.group));
        args.add(utf8(ctx.consumer));
        args.add(utf8(Long.toString(leaseMs())));
        List<String> sent = new ArrayList<>();
        for (Attempt a : running.values()) {
            args.add(utf8(a.task.taskId()));
            args.add(utf8(a.task.streamId()));
            sent.add(a.task.streamId());
        }
        try {
            Object reply = ctx.redis.fcall(Protocol.EXTEND, keys, List.of(), args);
            java.util.Set<String> held = new java.util.HashSet<>();
            for (Object o : Replies.list(reply)) {
                held.add(Replies.string(o));
            }
            for (String sid : sent) {
                Attempt a = running.get(sid);
                if (!held.contains(sid) && a != null) {
                    a.lose();
                }
            }
        } catch (BatonException e) {
            WorkerContext.LOG.log(System.Logger.Level.WARNING, "heartbeat " + keys + ": " + e.getMessage());
        }
    }

    /** Interrupts what still runs (shutdown grace is over); their leases expire and they run again. */
    void abandonRunning() {
        for (Attempt a : running.values()) {
            a.abandon();
        }
    }

    private static byte[] utf8(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }
}
