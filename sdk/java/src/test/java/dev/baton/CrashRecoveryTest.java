package dev.baton;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** kill -9 of a worker JVM mid-run: every task still finishes, on another worker, none lost. */
class CrashRecoveryTest extends Fixtures {
    @Test
    void nothingIsLostWhenAWorkerJvmIsKilled() throws Exception {
        String ns = newNamespace();
        List<String> ids = new ArrayList<>();
        try (BatonClient c = client()) {
            List<TaskRequest> reqs = new ArrayList<>();
            for (int i = 0; i < 120; i++) {
                reqs.add(TaskRequest.builder(ns, "crash").payloadJson("{\"i\":" + i + "}").maxRetry(3).build());
            }
            c.enqueueAll(reqs).forEach(r -> ids.add(r.taskId()));
        }
        Path java = Path.of(System.getProperty("java.home"), "bin", "java");
        Process victim = new ProcessBuilder(java.toString(), "-cp", System.getProperty("java.class.path"),
                CrashWorkerMain.class.getName(), redis.url(), ns).redirectErrorStream(true)
                .redirectOutput(ProcessBuilder.Redirect.DISCARD).start();
        try {
            // let it take some tasks (done ones, and a few in flight), then SIGKILL it
            waitFor(Duration.ofSeconds(60), "the victim to finish a few tasks",
                    () -> ids.stream().filter(id -> isDone(ns, id)).count() >= 10);
            victim.destroyForcibly(); // SIGKILL on Linux: no shutdown hook, no ack, no fail
            assertTrue(victim.waitFor(30, TimeUnit.SECONDS));
        } finally {
            victim.destroyForcibly();
        }
        long doneByVictim = ids.stream().filter(id -> isDone(ns, id)).count();
        assertTrue(doneByVictim < ids.size(), "the victim must not have finished everything");
        Set<String> ranHere = ConcurrentHashMap.newKeySet();
        try (Worker rescuer = worker().consumerName("rescuer").build()) {
            rescuer.handle(ns, "crash", t -> ranHere.add(t.taskId()));
            rescuer.start();
            waitFor(Duration.ofSeconds(90), "every task done",
                    () -> ids.stream().allMatch(id -> isDone(ns, id)));
        }
        assertTrue(ranHere.size() >= ids.size() - doneByVictim, "the rescuer ran the rest");
        assertEquals(0L, redis.cli().xpending(key(ns, "stream:crash"), "baton").getTotal());
        for (String id : ids) {
            assertEquals(null, record(ns, id), "no live record left for " + id);
        }
    }
}
