package dev.baton;

import dev.baton.internal.Keys;
import dev.baton.internal.Protocol;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;

/**
 * The in-process maintenance of one (namespace, type), for setups without {@code batond}
 * (opt-in, {@link Worker.Builder#maintenance(boolean)}): promotes due delayed and retrying tasks
 * ({@code baton_v2_promote}) and takes back tasks whose lease ran out ({@code baton_v2_reclaim}).
 * Running it beside batond is safe (both functions are atomic), only redundant.
 */
final class Maintenance implements Runnable {
    private final WorkerContext ctx;
    private final Keys keys;

    Maintenance(WorkerContext ctx, Keys keys) {
        this.ctx = ctx;
        this.keys = keys;
    }

    @Override
    public void run() {
        try {
            ctx.redis.fcall(Protocol.PROMOTE, keys, List.of(), List.of(utf8("1000")));
            ctx.redis.fcall(Protocol.RECLAIM, keys, List.of(), List.of(utf8("100"),
                    utf8(Long.toString(ctx.retry.base().toMillis())), utf8(Long.toString(ctx.retry.max().toMillis())),
                    utf8(Long.toString(ThreadLocalRandom.current().nextLong(1L << 40))), utf8(ctx.consumer)));
        } catch (BatonException e) {
            WorkerContext.LOG.log(System.Logger.Level.WARNING, "maintenance " + keys + ": " + e.getMessage());
        }
    }

    private static byte[] utf8(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }
}
