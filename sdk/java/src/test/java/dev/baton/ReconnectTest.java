package dev.baton;

import java.time.Duration;
import org.junit.jupiter.api.Test;

class ReconnectTest extends Fixtures {
    @Test
    void theWorkerRidesOutARedisRestart() throws Exception {
        String ns = newNamespace();
        try (Worker w = worker().build()) {
            w.handle(ns, "job", t -> { });
            w.start();
            try (BatonClient c = client()) {
                String first = c.enqueue(TaskRequest.builder(ns, "job").build()).taskId();
                waitFor(Duration.ofSeconds(30), "first done", () -> isDone(ns, first));
            }
            redis.restart(); // empty again, library reloaded, same port
            try (BatonClient c = client()) {
                String second = c.enqueue(TaskRequest.builder(ns, "job").build()).taskId();
                waitFor(Duration.ofSeconds(60), "second done after reconnect", () -> isDone(ns, second));
            }
        }
    }
}
