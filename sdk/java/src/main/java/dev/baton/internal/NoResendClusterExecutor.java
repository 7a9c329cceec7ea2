package dev.baton.internal;

import java.time.Duration;
import redis.clients.jedis.CommandObject;
import redis.clients.jedis.Connection;
import redis.clients.jedis.StaticCommandFlagsRegistry;
import redis.clients.jedis.executors.ClusterCommandExecutor;
import redis.clients.jedis.exceptions.JedisConnectionException;
import redis.clients.jedis.exceptions.JedisDataException;
import redis.clients.jedis.exceptions.JedisException;
import redis.clients.jedis.exceptions.JedisRedirectionException;
import redis.clients.jedis.providers.ClusterConnectionProvider;

/**
 * Jedis' own cluster executor (slot routing, MOVED/ASK, slot map renewal), made to keep the
 * SDK's no-resend rule.
 *
 * <p>What Jedis 7.2.0's {@link ClusterCommandExecutor} sends again by itself, up to maxAttempts
 * times within maxTotalRetriesDuration:
 * <ul>
 *   <li>after a {@code MOVED} or {@code ASK} reply, to the node named (after {@code ASKING}): the
 *       node did not run it; kept;</li>
 *   <li>after any {@link JedisConnectionException}: both a failed connect (nothing was sent) and a
 *       connection that broke or timed out after the command was written (it may have run: an
 *       enqueue sent again answers {@code duplicate} for its own task, an ack {@code gone}).</li>
 * </ul>
 * This executor turns the second kind into a {@link MayHaveRunException}, which Jedis does not
 * retry: the caller gets {@code unavailable} and decides (the worker's loops retry; a producer
 * sends again with the same task id). A failed connect is still retried by Jedis. It also makes
 * {@code CLUSTERDOWN}, {@code TRYAGAIN}, {@code LOADING} and {@code MASTERDOWN} replies (not run)
 * retryable like a failed connect, after a 100 ms pause, so a call rides out a failover's
 * {@code CLUSTERDOWN} or a migration's {@code TRYAGAIN} (a multi-key call on an importing node)
 * for up to maxTotalRetriesDuration. A {@link WaitingCall} gets its {@code WAIT} on the same connection,
 * right after its reply.
 *
 * <p>Overriding {@code execute} is the one hook Jedis offers around the command on the chosen
 * connection; the routing stays Jedis'.
 */
final class NoResendClusterExecutor extends ClusterCommandExecutor {
    private static final String[] NOT_RUN = {"CLUSTERDOWN", "TRYAGAIN", "LOADING", "MASTERDOWN"};
    /** Pause before a call refused with one of those replies is sent again. */
    static final long NOT_RUN_PAUSE_MS = 100;

    NoResendClusterExecutor(ClusterConnectionProvider provider, int maxAttempts, Duration maxTotalRetries) {
        super(provider, maxAttempts, maxTotalRetries, StaticCommandFlagsRegistry.registry());
    }

    @Override
    protected <T> T execute(Connection connection, CommandObject<T> command) {
        T reply;
        try {
            reply = connection.executeCommand(command);
        } catch (JedisRedirectionException e) {
            throw e; // MOVED / ASK: Jedis follows it
        } catch (JedisConnectionException e) {
            // written, maybe run: never sent again. The slot map is read again so that the next
            // call finds a promoted replica without waiting for a redirection.
            renewQuietly();
            throw new MayHaveRunException("the connection to " + connection + " broke during the call (it may have run): "
                    + e.getMessage(), e);
        } catch (JedisDataException e) {
            if (notRun(e.getMessage())) {
                sleep(NOT_RUN_PAUSE_MS); // Jedis pauses only after two in a row, and never after an ASK
                throw new NotRunException(e);
            }
            throw e;
        }
        if (command instanceof WaitingCall w) {
            w.waitOn(connection);
        }
        return reply;
    }

    private void renewQuietly() {
        try {
            provider.renewSlotCache();
        } catch (JedisException ignored) {
            // no node answered: the next call's connect failure renews it again
        }
    }

    static boolean notRun(String reply) {
        if (reply == null) {
            return false;
        }
        for (String p : NOT_RUN) {
            if (reply.equals(p) || reply.startsWith(p + " ")) {
                return true;
            }
        }
        return false;
    }

    /** A connection error after which the command may have run: Jedis must not send it again. */
    static final class MayHaveRunException extends JedisException {
        private static final long serialVersionUID = 1L;

        MayHaveRunException(String message, Throwable cause) {
            super(message, cause);
        }
    }

    /** A reply that says the command did not run: Jedis may send it again (as after a failed connect). */
    static final class NotRunException extends JedisConnectionException {
        private static final long serialVersionUID = 1L;
        /** The node's reply, e.g. {@code CLUSTERDOWN The cluster is down}. */
        final String reply;

        NotRunException(JedisDataException e) {
            super(e.getMessage(), e);
            this.reply = e.getMessage();
        }
    }
}
