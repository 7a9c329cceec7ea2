package dev.baton;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.baton.internal.Threads;
import java.time.Duration;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * Handlers run on virtual threads on Java 21+ and on platform threads on 17. scripts/test.sh runs
 * this class a second time on Temurin 25 when it is installed.
 */
class VirtualThreadsTest extends Fixtures {
    @Test
    void handlersRunOnVirtualThreadsExactlyWhenTheJvmHasThem() throws Exception {
        boolean expected = Runtime.version().feature() >= 21;
        assertEquals(expected, Threads.virtualAvailable());
        String ns = newNamespace();
        LinkedBlockingQueue<Boolean> virtual = new LinkedBlockingQueue<>();
        try (BatonClient c = client(); Worker w = worker().build()) {
            c.enqueue(TaskRequest.builder(ns, "v").build());
            w.handle(ns, "v", t -> virtual.add(Threads.isVirtual(Thread.currentThread())));
            w.start();
            Boolean got = virtual.poll(30, TimeUnit.SECONDS);
            System.out.println("VirtualThreadsTest: Java " + Runtime.version().feature() + ", handler on a "
                    + (Boolean.TRUE.equals(got) ? "virtual" : "platform") + " thread");
            assertEquals(expected, got);
        }
    }

    @Test
    void aGivenExecutorIsUsed() throws Exception {
        String ns = newNamespace();
        LinkedBlockingQueue<String> names = new LinkedBlockingQueue<>();
        java.util.concurrent.ExecutorService pool = java.util.concurrent.Executors.newFixedThreadPool(2,
                r -> new Thread(r, "orders-pool"));
        try (BatonClient c = client(); Worker w = worker().build()) {
            c.enqueue(TaskRequest.builder(ns, "p").build());
            w.handle(ns, "p", t -> names.add(Thread.currentThread().getName()),
                    HandlerOptions.DEFAULT.withExecutor(pool).withLease(Duration.ofSeconds(10)));
            w.start();
            assertEquals("orders-pool", names.poll(30, TimeUnit.SECONDS));
        } finally {
            pool.shutdownNow();
        }
    }
}
