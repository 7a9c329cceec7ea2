package dev.baton;

import dev.baton.internal.Partitions;
import dev.baton.internal.Protocol;
import dev.baton.internal.Redis;
import dev.baton.internal.Threads;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;

/**
 * Runs handlers for task types: per (namespace partition, type) a fetch loop with the type's
 * concurrency and executor (a partitioned namespace, docs/cluster.md "Partitions", is served in
 * every partition; its partition count is read again every 5 s), batched fetches and acks, lease heartbeats, enforced execution_timeout, retries
 * recorded with the Java stack trace, reconnect after Redis loss, graceful shutdown.
 *
 * <pre>{@code
 * Worker worker = Worker.builder("redis://127.0.0.1:6379").build();
 * worker.handle("orders", "settle", task -> settle(task.payloadAs(Settle.class)));
 * worker.installShutdownHook(Duration.ofSeconds(30));
 * worker.start();
 * }</pre>
 */
public final class Worker implements AutoCloseable {
    private final WorkerContext ctx;
    private final boolean maintenance;
    private final Map<String, Registration> regs = new LinkedHashMap<>();
    private final List<TypeRunner> runners = new CopyOnWriteArrayList<>();
    private final List<Thread> threads = new CopyOnWriteArrayList<>();
    private final List<ExecutorService> ownedExecutors = new ArrayList<>();
    /** Guards adding runners (start and the partition watcher) against shutdown. */
    private final Object serveLock = new Object();
    /** Partitions served so far (0..n-1), per registration key of {@code regs} (only grows). */
    private final Map<String, Integer> served = new HashMap<>();
    private boolean started;
    private volatile boolean stopped;

    /** One handle() call: served in every partition of its namespace. */
    private record Registration(String namespace, String type, TaskHandler handler, HandlerOptions options,
                                ExecutorService executor) {}

    private Worker(Builder b) {
        Redis redis = new Redis(b.redisUrl, 64);
        try {
            redis.checkVersion(true);
        } catch (RuntimeException e) {
            redis.close();
            throw e;
        }
        ScheduledThreadPoolExecutor timers = new ScheduledThreadPoolExecutor(2, Threads.daemon("baton-timer"));
        // An attempt's timeout timer is cancelled when it finishes; without this it would stay
        // queued (pinning the task and its payload) until its deadline, up to 24 h later.
        timers.setRemoveOnCancelPolicy(true);
        ctx = new WorkerContext(redis, b.group, b.consumer, b.retry, b.batch, b.blockMs, timers,
                Threads.perTask("baton-background"));
        maintenance = b.maintenance;
    }

    /**
     * @param redisUrl {@code redis://host:port[/db]}, or the seed nodes of a Redis Cluster
     *     {@code redis+cluster://[user:password@]host:port[,host:port...]} (a bad one is refused
     *     by {@link Builder#build()} with {@code invalid_argument} naming {@code redis_url})
     * @return a builder with the defaults
     */
    public static Builder builder(String redisUrl) {
        return new Builder(redisUrl);
    }

    /**
     * @return this worker's consumer name (in the consumer group and in error records)
     */
    public String consumerName() {
        return ctx.consumer;
    }

    /**
     * Registers a handler with the default options.
     *
     * @param namespace the namespace
     * @param taskType the task type
     * @param handler the handler
     * @return this
     */
    public Worker handle(String namespace, String taskType, TaskHandler handler) {
        return handle(namespace, taskType, handler, HandlerOptions.DEFAULT);
    }

    /**
     * Registers a handler; must be called before {@link #start()}.
     *
     * @param namespace the namespace
     * @param taskType the task type
     * @param handler the handler
     * @param options concurrency, executor and lease of this type
     * @return this
     */
    public synchronized Worker handle(String namespace, String taskType, TaskHandler handler, HandlerOptions options) {
        Rules.name("namespace", namespace);
        Rules.name("task_type", taskType);
        if (started) {
            throw new IllegalStateException("handle() after start()");
        }
        String key = namespace + "/" + taskType;
        if (regs.containsKey(key)) {
            throw BatonException.invalid("task_type", "already has a handler in namespace " + namespace);
        }
        ExecutorService ex = options.executor();
        if (ex == null) {
            ex = Threads.perTask("baton-" + taskType);
            ownedExecutors.add(ex);
        }
        regs.put(key, new Registration(namespace, taskType, handler, options, ex));
        return this;
    }

    /**
     * Starts the fetch loops (one per partition and type), ack batchers, heartbeats (and
     * maintenance); returns at once.
     */
    public synchronized void start() {
        if (started) {
            return;
        }
        if (regs.isEmpty()) {
            throw new IllegalStateException("no handler registered");
        }
        started = true;
        List<String> namespaces = regs.values().stream().map(Registration::namespace).distinct().toList();
        int[] counts;
        try {
            counts = Partitions.read(ctx.redis, namespaces);
        } catch (BatonException e) { // serve partition 0 now; the watcher reads the counts again
            WorkerContext.LOG.log(System.Logger.Level.WARNING, "partition counts: " + e.getMessage()
                    + " (serving partition 0, read again in " + Protocol.PARTITIONS_REFRESH_SECONDS + " s)");
            counts = new int[namespaces.size()];
            java.util.Arrays.fill(counts, 1);
        }
        serve(namespaces, counts);
        long every = Protocol.PARTITIONS_REFRESH_SECONDS * 1000L;
        ctx.timers.scheduleWithFixedDelay(() -> ctx.background.execute(() -> watchPartitions(namespaces)),
                every, every, TimeUnit.MILLISECONDS);
    }

    /** Re-reads the partition counts and serves the partitions a namespace gained. */
    private void watchPartitions(List<String> namespaces) {
        if (stopped) {
            return;
        }
        try {
            serve(namespaces, Partitions.read(ctx.redis, namespaces));
        } catch (RuntimeException e) { // keeps serving what it serves; the next re-read starts the rest
            WorkerContext.LOG.log(System.Logger.Level.WARNING, "partition counts (read again in "
                    + Protocol.PARTITIONS_REFRESH_SECONDS + " s): " + e.getMessage());
        }
    }

    /**
     * Starts the runners of the partitions not served yet (P only grows: a smaller count stops
     * nothing). Progress is kept per registration and partition, so when a start fails midway the
     * next call starts only what is still missing.
     */
    private void serve(List<String> namespaces, int[] counts) {
        synchronized (serveLock) {
            if (stopped) {
                return;
            }
            for (int i = 0; i < namespaces.size(); i++) {
                String ns = namespaces.get(i);
                int from = Integer.MAX_VALUE;
                for (Map.Entry<String, Registration> e : regs.entrySet()) {
                    Registration reg = e.getValue();
                    if (!reg.namespace().equals(ns)) {
                        continue;
                    }
                    int next = served.getOrDefault(e.getKey(), 0);
                    from = Math.min(from, next);
                    for (int p = next; p < counts[i]; p++) {
                        startRunner(new TypeRunner(ctx, ns, p, reg.type(), reg.handler(), reg.options(),
                                reg.executor()));
                        served.put(e.getKey(), p + 1);
                    }
                }
                if (from > 0 && counts[i] > from) {
                    WorkerContext.LOG.log(System.Logger.Level.INFO, "serving new partitions " + from + ".."
                            + (counts[i] - 1) + " of namespace " + ns);
                }
            }
        }
    }

    private void startRunner(TypeRunner r) {
        // each type's idle fetch holds a connection for its whole XREAD BLOCK and its ack thread
        // may hold another; the rest (fails, heartbeats, maintenance) share what is left
        ctx.redis.ensureConnections(2 * (runners.size() + 1) + 32);
        runners.add(r);
        String name = r.keys().namespace() + "/" + r.keys().type();
        threads.add(daemon("baton-fetch-" + name, r));
        threads.add(daemon("baton-ack-" + name, r.acks()));
        long beat = Math.max(100, r.leaseMs() / 3);
        ctx.timers.scheduleWithFixedDelay(() -> ctx.background.execute(r::heartbeat), beat, beat,
                TimeUnit.MILLISECONDS);
        if (maintenance) {
            Maintenance m = new Maintenance(ctx, r.keys());
            ctx.timers.scheduleWithFixedDelay(() -> ctx.background.execute(m), 0, 500, TimeUnit.MILLISECONDS);
        }
    }

    private static Thread daemon(String name, Runnable r) {
        Thread t = new Thread(r, name);
        t.setDaemon(true);
        t.start();
        return t;
    }

    /**
     * Stops gracefully: no new fetches; running attempts get {@code grace} to finish and are
     * acked or failed; what still runs after that is interrupted and left to its lease, with no
     * failure recorded (it runs again elsewhere); queued acks are sent; connections close. Calls
     * that Redis does not answer stop retrying when the grace ends. Idempotent.
     *
     * @param grace how long running attempts may take
     */
    public synchronized void shutdown(Duration grace) {
        if (stopped) {
            return;
        }
        synchronized (serveLock) { // from here no runner is added
            stopped = true;
        }
        ctx.fetching = false;
        long end = System.nanoTime() + grace.toNanos();
        ctx.giveUpAt(end);
        joinFetchers(end);
        while (System.nanoTime() < end && runners.stream().anyMatch(r -> r.runningCount() > 0)) {
            WorkerContext.sleep(20);
        }
        runners.forEach(TypeRunner::abandonRunning);
        runners.forEach(r -> r.acks().stop());
        for (Thread t : threads) {
            try {
                t.join(10000);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                break;
            }
        }
        ctx.closed = true;
        ctx.timers.shutdownNow();
        ctx.background.shutdown();
        try {
            ctx.background.awaitTermination(5, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        ownedExecutors.forEach(ExecutorService::shutdownNow);
        ctx.redis.close();
    }

    private void joinFetchers(long endNanos) {
        for (Thread t : threads) {
            if (t.getName().startsWith("baton-fetch-")) {
                try {
                    t.join(Math.max(1, Math.max(ctx.blockMs + 2000, (endNanos - System.nanoTime()) / 1_000_000)));
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    return;
                }
            }
        }
    }

    /** Shuts down with a 30 s grace period. */
    @Override
    public void close() {
        shutdown(Duration.ofSeconds(30));
    }

    /**
     * Registers a JVM shutdown hook (SIGTERM, SIGINT, System.exit) that calls {@link
     * #shutdown(Duration)}.
     *
     * @param grace the grace period for running attempts
     * @return the hook thread (to remove it with {@link Runtime#removeShutdownHook(Thread)})
     */
    public Thread installShutdownHook(Duration grace) {
        Thread hook = new Thread(() -> shutdown(grace), "baton-shutdown");
        Runtime.getRuntime().addShutdownHook(hook);
        return hook;
    }

    /**
     * @return counters since start
     */
    public WorkerStats stats() {
        return ctx.counters.snapshot();
    }

    /** @return timers still queued (heartbeats, maintenance, running attempts' timeouts); for tests */
    int pendingTimers() {
        return ((ScheduledThreadPoolExecutor) ctx.timers).getQueue().size();
    }

    /** Settings of a {@link Worker}. */
    public static final class Builder {
        private final String redisUrl;
        private String group = "baton";
        private String consumer = defaultConsumer();
        private RetryPolicy retry = RetryPolicy.DEFAULT;
        private int batch = 32;
        private long blockMs = 1000;
        private boolean maintenance;

        private Builder(String redisUrl) {
            this.redisUrl = redisUrl;
        }

        /** {@code worker:<host>:<pid>:<6 hex>:java}, the form of every Baton SDK's default. */
        private static String defaultConsumer() {
            String host;
            try {
                host = InetAddress.getLocalHost().getHostName();
            } catch (UnknownHostException e) {
                host = "unknown";
            }
            return "worker:" + host + ":" + ProcessHandle.current().pid() + ":"
                    + String.format("%06x", ThreadLocalRandom.current().nextInt(1 << 24)) + ":java";
        }

        /**
         * @param name consumer name, unique per worker process (default
         *     {@code worker:<host>:<pid>:<6 hex>:java}); kept as given
         * @return this
         */
        public Builder consumerName(String name) {
            this.consumer = name;
            return this;
        }

        /**
         * @param name the consumer group (default {@code baton}, shared by every Baton worker)
         * @return this
         */
        public Builder group(String name) {
            this.group = name;
            return this;
        }

        /**
         * @param policy retry backoff (default 2 s doubling to 10 min)
         * @return this
         */
        public Builder retry(RetryPolicy policy) {
            this.retry = policy;
            return this;
        }

        /**
         * @param n most tasks one dequeue fetches, 1..1000 (default 32)
         * @return this
         */
        public Builder batch(int n) {
            if (n < 1 || n > 1000) {
                throw BatonException.invalid("batch", "must be 1..1000 (got " + n + ")");
            }
            this.batch = n;
            return this;
        }

        /**
         * @param d how long an idle fetch loop blocks on XREAD between checks (default 1 s)
         * @return this
         */
        public Builder idleBlock(Duration d) {
            this.blockMs = Math.max(1, d.toMillis());
            return this;
        }

        /**
         * @param on run promotion of due tasks and reclaim of expired leases in this process
         *     (for setups without batond; default off)
         * @return this
         */
        public Builder maintenance(boolean on) {
            this.maintenance = on;
            return this;
        }

        /**
         * Connects and checks the library version.
         *
         * @return the worker (not started)
         */
        public Worker build() {
            return new Worker(this);
        }
    }
}
