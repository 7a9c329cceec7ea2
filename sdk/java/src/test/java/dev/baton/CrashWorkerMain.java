package dev.baton;

import java.time.Duration;

/**
 * A worker JVM for {@link CrashRecoveryTest}: handles {@code NS/crash} (each task sleeps 50 ms)
 * until it is killed. Args: redis URL, namespace.
 */
public final class CrashWorkerMain {
    private CrashWorkerMain() {}

    public static void main(String[] args) throws Exception {
        Worker w = Worker.builder(args[0]).consumerName("crash-victim").build();
        w.handle(args[1], "crash", t -> Thread.sleep(50),
                HandlerOptions.DEFAULT.withConcurrency(4).withLease(Duration.ofSeconds(2)));
        w.start();
        System.out.println("started");
        Thread.sleep(Long.MAX_VALUE);
    }
}
