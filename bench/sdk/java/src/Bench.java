import dev.baton.BatonClient;
import dev.baton.HandlerOptions;
import dev.baton.TaskRequest;
import dev.baton.Worker;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import redis.clients.jedis.AbstractPipeline;
import redis.clients.jedis.RedisClient;
import redis.clients.jedis.StreamEntryID;
import redis.clients.jedis.params.XAddParams;
import redis.clients.jedis.params.XReadGroupParams;
import redis.clients.jedis.resps.StreamEntry;

/**
 * Enqueue and drain rates of the Java SDK, end to end as the C++ bench measures it (a producer and
 * the worker at once), and the floor: a bare Jedis XADD / XREADGROUP / XACK+XDEL
 * loop on the same Redis with the same 200-byte payload. Redis' CPU per task from INFO cpu.
 *
 *   java Bench REDIS_URL REPO TASKS PRODUCERS CONCURRENCY
 */
public final class Bench {
    private Bench() {}

    record Result(String name, int tasks, double seconds, double cpuSeconds) {
        @Override
        public String toString() {
            return String.format("%-34s %9.0f tasks/s  redis cpu %6.2f us/task  (%d tasks in %.2f s)", name,
                    tasks / seconds, cpuSeconds * 1e6 / tasks, tasks, seconds);
        }
    }

    interface Phase {
        void run() throws Exception;
    }

    static RedisClient raw;

    static double cpu() {
        double s = 0;
        for (String line : raw.info("cpu").split("\r?\n")) {
            if (line.startsWith("used_cpu_sys:") || line.startsWith("used_cpu_user:")) {
                s += Double.parseDouble(line.substring(line.indexOf(':') + 1));
            }
        }
        return s;
    }

    static Result timed(String name, int tasks, Phase p) throws Exception {
        double c = cpu();
        long t0 = System.nanoTime();
        p.run();
        Result r = new Result(name, tasks, (System.nanoTime() - t0) / 1e9, cpu() - c);
        System.out.println(r);
        return r;
    }

    static String payload(int n) {
        String head = "{\"order_id\":12345,\"note\":\"";
        return head + "x".repeat(Math.max(0, n - head.length() - 2)) + "\"}";
    }

    public static void main(String[] args) throws Exception {
        String url = args[0];
        Path repo = Path.of(args[1]);
        int tasks = Integer.parseInt(args[2]);
        int producers = Integer.parseInt(args[3]);
        int concurrency = Integer.parseInt(args[4]);
        String payload = payload(200);
        raw = RedisClient.create(java.net.URI.create(url));
        try (Stream<Path> s = Files.list(repo.resolve("functions"))) {
            StringBuilder src = new StringBuilder();
            for (Path f : s.filter(p -> p.toString().endsWith(".lua")).sorted().collect(Collectors.toList())) {
                src.append(Files.readString(f));
            }
            raw.functionLoadReplace(src.toString());
        }
        System.out.printf("java %s, tasks %d, payload %d bytes, %d producer threads, handler concurrency %d%n",
                Runtime.version(), tasks, payload.length(), producers, concurrency);
        List<Result> results = new ArrayList<>();
        try (BatonClient client = BatonClient.connect(url)) {
            // warm-up (JIT) on a namespace of its own
            for (int i = 0; i < 2000; i++) {
                client.enqueue(TaskRequest.builder("warm", "t").payloadJson(payload).build());
            }
            ExecutorService pool = Executors.newFixedThreadPool(producers);
            AtomicInteger next = new AtomicInteger();
            results.add(timed("java enqueue (1/call, coalesced)", tasks, () -> {
                List<Future<?>> fs = new ArrayList<>();
                for (int p = 0; p < producers; p++) {
                    fs.add(pool.submit(() -> {
                        while (next.getAndIncrement() < tasks) {
                            client.enqueue(TaskRequest.builder("bench1", "t").payloadJson(payload).build());
                        }
                        return null;
                    }));
                }
                for (Future<?> f : fs) {
                    f.get();
                }
            }));
            pool.shutdown();
            results.add(timed("java enqueueAll (100/call)", tasks, () -> {
                for (int i = 0; i < tasks; i += 100) {
                    List<TaskRequest> batch = new ArrayList<>(100);
                    for (int k = 0; k < 100; k++) {
                        batch.add(TaskRequest.builder("bench2", "t").payloadJson(payload).build());
                    }
                    client.enqueueAll(batch);
                }
            }));
        }
        try (Worker w = Worker.builder(url).batch(64).build()) {
            w.handle("bench2", "t", t -> { }, HandlerOptions.DEFAULT.withConcurrency(concurrency));
            results.add(timed("java worker drain", tasks, () -> {
                w.start();
                while (w.stats().succeeded() < tasks) {
                    Thread.sleep(2);
                }
            }));
        }
        // the C++ bench's "baton" phase: a producer (enqueueAll of 100) and the worker at once
        try (BatonClient client = BatonClient.connect(url); Worker w = Worker.builder(url).batch(64).build()) {
            w.handle("bench3", "t", t -> { }, HandlerOptions.DEFAULT.withConcurrency(concurrency));
            w.start();
            results.add(timed("java end-to-end (as C++)", tasks, () -> {
                Thread producer = new Thread(() -> {
                    for (int i = 0; i < tasks; i += 100) {
                        List<TaskRequest> batch = new ArrayList<>(100);
                        for (int k = 0; k < 100; k++) {
                            batch.add(TaskRequest.builder("bench3", "t").payloadJson(payload).build());
                        }
                        client.enqueueAll(batch);
                    }
                });
                producer.start();
                producer.join();
                while (w.stats().succeeded() < tasks) {
                    Thread.sleep(2);
                }
            }));
        }
        results.add(bare(tasks, payload));
        raw.close();
    }

    /** The floor: XADD pipelined by 100, then XREADGROUP COUNT 100 + pipelined XACK/XDEL. */
    static Result bare(int tasks, String payload) throws Exception {
        String stream = "bare:stream";
        raw.del(stream);
        for (int i = 0; i < tasks; i += 100) {
            try (AbstractPipeline p = raw.pipelined()) {
                for (int k = 0; k < 100; k++) {
                    p.xadd(stream, XAddParams.xAddParams(), Map.of("payload", payload));
                }
            }
        }
        raw.xgroupCreate(stream, "g", new StreamEntryID(0, 0), false);
        return timed("bare jedis XREADGROUP loop", tasks, () -> {
            int done = 0;
            while (done < tasks) {
                List<Map.Entry<String, List<StreamEntry>>> r = raw.xreadGroup("g", "c",
                        XReadGroupParams.xReadGroupParams().count(100), Map.of(stream, StreamEntryID.XREADGROUP_UNDELIVERED_ENTRY));
                if (r == null || r.isEmpty()) {
                    continue;
                }
                List<StreamEntry> es = r.get(0).getValue();
                StreamEntryID[] ids = es.stream().map(StreamEntry::getID).toArray(StreamEntryID[]::new);
                try (AbstractPipeline p = raw.pipelined()) {
                    p.xack(stream, "g", ids);
                    p.xdel(stream, ids);
                }
                done += ids.length;
            }
        });
    }
}
