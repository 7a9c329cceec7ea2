package dev.baton.internal;

import java.lang.reflect.Method;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Threads for handlers and background loops. On Java 21+ handlers run on virtual threads (found
 * by reflection: the SDK is compiled for Java 17); on 17-20 on daemon platform threads.
 */
public final class Threads {
    private static final Method VIRTUAL_EXECUTOR = find(Executors.class, "newVirtualThreadPerTaskExecutor");
    private static final Method IS_VIRTUAL = find(Thread.class, "isVirtual");

    private Threads() {}

    private static Method find(Class<?> c, String name) {
        try {
            return c.getMethod(name);
        } catch (NoSuchMethodException e) {
            return null;
        }
    }

    /** @return whether this JVM has virtual threads (Java 21+) */
    public static boolean virtualAvailable() {
        return VIRTUAL_EXECUTOR != null;
    }

    /** @param t a thread @return whether it is a virtual thread */
    public static boolean isVirtual(Thread t) {
        try {
            return IS_VIRTUAL != null && (Boolean) IS_VIRTUAL.invoke(t);
        } catch (ReflectiveOperationException e) {
            return false;
        }
    }

    /**
     * One new thread per task: virtual threads on Java 21+, daemon platform threads otherwise.
     * The caller bounds the concurrency (the worker's per-type semaphore).
     *
     * @param name thread name prefix (platform threads only)
     * @return the executor
     */
    public static ExecutorService perTask(String name) {
        if (VIRTUAL_EXECUTOR != null) {
            try {
                return (ExecutorService) VIRTUAL_EXECUTOR.invoke(null);
            } catch (ReflectiveOperationException e) {
                // fall through to platform threads
            }
        }
        return Executors.newCachedThreadPool(daemon(name));
    }

    /** @param name prefix @return a factory of named daemon platform threads */
    public static ThreadFactory daemon(String name) {
        AtomicInteger n = new AtomicInteger();
        return r -> {
            Thread t = new Thread(r, name + "-" + n.incrementAndGet());
            t.setDaemon(true);
            return t;
        };
    }
}
