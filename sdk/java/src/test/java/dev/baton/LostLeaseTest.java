package dev.baton;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import redis.clients.jedis.StreamEntryID;
import redis.clients.jedis.params.XClaimParams;

/** A lease taken back while the handler runs: the heartbeat notices, the handler is interrupted. */
class LostLeaseTest extends Fixtures {
    @Test
    void aTakenBackTaskInterruptsItsHandler() throws Exception {
        String ns = newNamespace();
        LinkedBlockingQueue<Task> running = new LinkedBlockingQueue<>();
        CountDownLatch interrupted = new CountDownLatch(1);
        try (BatonClient c = client(); Worker w = worker().maintenance(false).build()) {
            String id = c.enqueue(TaskRequest.builder(ns, "held").build()).taskId();
            w.handle(ns, "held", t -> {
                running.add(t);
                try {
                    Thread.sleep(60_000);
                } catch (InterruptedException e) {
                    interrupted.countDown();
                }
            }, HandlerOptions.DEFAULT.withLease(Duration.ofSeconds(1)));
            w.start();
            Task t = running.poll(30, TimeUnit.SECONDS);
            assertEquals(id, t.taskId());
            // another consumer takes the entry over (as a reclaim + redelivery would)
            redis.cli().xclaimJustId(key(ns, "stream:held"), "baton", "thief", 0, XClaimParams.xClaimParams(),
                    new StreamEntryID(t.streamId()));
            assertTrue(interrupted.await(30, TimeUnit.SECONDS), "the handler was interrupted");
            waitFor(Duration.ofSeconds(10), "lost counted", () -> w.stats().lost() == 1);
            assertEquals(0, w.stats().succeeded());
        }
    }
}
