package dev.baton.internal;

import redis.clients.jedis.BuilderFactory;
import redis.clients.jedis.CommandArguments;
import redis.clients.jedis.CommandObject;
import redis.clients.jedis.Connection;
import redis.clients.jedis.Protocol.Command;
import redis.clients.jedis.exceptions.JedisException;

/**
 * A call followed by {@code WAIT replicas timeout} on the same connection (WAIT counts the
 * replicas that have the writes of its own connection): the durable enqueue. The executor sends
 * the WAIT only after the call itself was answered, on the node that answered it (after any
 * MOVED/ASK).
 */
final class WaitingCall extends CommandObject<Object> {
    private final int replicas;
    private final long timeoutMs;
    private Long acked;
    private JedisException waitError;

    WaitingCall(CommandArguments args, int replicas, long timeoutMs) {
        super(args, BuilderFactory.RAW_OBJECT);
        this.replicas = replicas;
        this.timeoutMs = timeoutMs;
    }

    /** Sends the WAIT; its failure is recorded, not thrown (the call itself has run). */
    void waitOn(Connection c) {
        try {
            acked = c.executeCommand(new CommandObject<>(new CommandArguments(Command.WAIT).add(replicas).add(timeoutMs),
                    BuilderFactory.LONG));
            waitError = null;
        } catch (JedisException e) {
            acked = null;
            waitError = e;
        }
    }

    /** @return the replicas that acknowledged, or null when the WAIT failed */
    Long acked() {
        return acked;
    }

    /** @return why the WAIT failed, or null */
    JedisException waitError() {
        return waitError;
    }
}
