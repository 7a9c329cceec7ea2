package dev.baton;

import dev.baton.internal.Keys;
import dev.baton.internal.Protocol;
import dev.baton.internal.Replies;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/**
 * Acks successes of one task type in batches: one thread takes what has piled up (at most 64)
 * and sends one {@code baton_v2_ack}. Under load that batches by itself; when idle an ack leaves
 * at once.
 */
final class AckBatcher implements Runnable {
    static final int MAX_BATCH = 64;

    private record Item(String id, String sid) {}

    private final WorkerContext ctx;
    private final Keys keys;
    private final LinkedBlockingQueue<Item> queue = new LinkedBlockingQueue<>();
    private volatile boolean stopping;

    AckBatcher(WorkerContext ctx, Keys keys) {
        this.ctx = ctx;
        this.keys = keys;
    }

    void add(String id, String sid) {
        queue.add(new Item(id, sid));
    }

    /** Sends what is queued, then ends the loop. */
    void stop() {
        stopping = true;
    }

    int pending() {
        return queue.size();
    }

    @Override
    public void run() {
        List<Item> batch = new ArrayList<>(MAX_BATCH);
        while (true) {
            Item first;
            try {
                first = queue.poll(100, TimeUnit.MILLISECONDS);
            } catch (InterruptedException e) {
                return;
            }
            if (first == null) {
                if (stopping) {
                    return;
                }
                continue;
            }
            batch.clear();
            batch.add(first);
            queue.drainTo(batch, MAX_BATCH - 1);
            send(batch);
        }
    }

    private void send(List<Item> batch) {
        List<byte[]> args = new ArrayList<>(3 + 2 * batch.size());
        args.add(utf8(ctx.group));
        args.add(utf8(ctx.consumer));
        args.add(utf8(Integer.toString(batch.size())));
        for (Item i : batch) {
            args.add(utf8(i.id()));
            args.add(utf8(i.sid()));
        }
        int[] tries = {0};
        try {
            Object reply = ctx.retrying("ack", () -> {
                tries[0]++;
                return ctx.redis.fcall(Protocol.ACK, keys, List.of(), args);
            });
            if (reply != null) {
                // "done", or "stale_done" (the lease had expired but this success is the one
                // recorded); "gone" records nothing (deleted meanwhile), unless the call was
                // retried: then a first try that timed out may have recorded it
                for (Object status : Replies.list(reply)) {
                    if (tries[0] > 1 || !Replies.string(status).equals("gone")) {
                        ctx.counters.succeeded.increment();
                    }
                }
            } else {
                WorkerContext.LOG.log(System.Logger.Level.ERROR, "ack of " + batch.size() + " tasks not sent: the worker"
                        + " stopped while Redis was unavailable (their leases will expire and they will run again)");
            }
        } catch (BatonException e) {
            WorkerContext.LOG.log(System.Logger.Level.ERROR, "ack of " + batch.size() + " tasks failed: "
                    + e.getMessage() + " (their leases will expire and they will run again)");
        }
    }

    private static byte[] utf8(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }
}
