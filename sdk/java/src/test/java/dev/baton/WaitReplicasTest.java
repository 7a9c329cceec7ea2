package dev.baton;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;
import redis.clients.jedis.Protocol.Command;

/**
 * waitReplicas on a single Redis: met with its one replica, missed when asking for two, and
 * missed without a replica; a task whose WAIT fell short is written and its outcome returned.
 */
class WaitReplicasTest extends Fixtures {
    @Test
    void waitReplicasOnASingleRedisWithAReplica() throws Exception {
        try (RedisServer replica = RedisServer.start()) {
            // the first sync otherwise waits 5 s for more replicas (repl-diskless-sync-delay)
            redis.cli().configSet("repl-diskless-sync-delay", "0");
            replica.cli().sendCommand(Command.REPLICAOF, "127.0.0.1", Integer.toString(redis.port));
            waitFor(Duration.ofSeconds(10), "the replica in sync",
                    () -> replica.cli().info("replication").contains("master_link_status:up"));
            String ns = newNamespace();
            try (BatonClient one = BatonClient.builder(redis.url()).waitReplicas(1).build()) {
                assertEquals(EnqueueStatus.QUEUED, one.enqueue(TaskRequest.builder(ns, "job").build()).status());
                assertEquals(2, one.enqueueAll(List.of(TaskRequest.builder(ns, "a").build(),
                        TaskRequest.builder(newNamespace(), "b").build())).size());
            }
            try (BatonClient two = BatonClient.builder(redis.url()).waitReplicas(2).waitTimeout(Duration.ofMillis(100))
                    .build()) {
                NotDurableException e = assertThrows(NotDurableException.class,
                        () -> two.enqueue(TaskRequest.builder(ns, "job").build()));
                assertEquals("written on the primary but acknowledged by only 1 of 2 replicas within 100 ms:"
                        + " it may still run but is not known to be durable", e.getMessage());
                String id = e.results().get(0).taskId();
                assertEquals(EnqueueStatus.QUEUED, e.results().get(0).status());
                waitFor(Duration.ofSeconds(5), "the task on the replica",
                        () -> replica.cli().hexists(key(ns, "tasks"), id));
            }
            replica.cli().sendCommand(Command.REPLICAOF, "no", "one");
        }
        // no replica now
        try (BatonClient lone = BatonClient.builder(redis.url()).waitReplicas(1).waitTimeout(Duration.ofMillis(50))
                .build()) {
            NotDurableException e = assertThrows(NotDurableException.class,
                    () -> lone.enqueue(TaskRequest.builder(newNamespace(), "job").build()));
            assertTrue(e.getMessage().contains("acknowledged by only 0 of 1 replicas within 50 ms"), e.getMessage());
        }
    }
}
