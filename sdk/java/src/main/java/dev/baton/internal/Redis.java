package dev.baton.internal;

import dev.baton.BatonException;
import dev.baton.ErrorCode;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Function;
import org.apache.commons.pool2.impl.GenericObjectPoolConfig;
import redis.clients.jedis.Connection;
import redis.clients.jedis.RedisClient;
import redis.clients.jedis.Protocol.Command;
import redis.clients.jedis.exceptions.JedisConnectionException;
import redis.clients.jedis.exceptions.JedisDataException;
import redis.clients.jedis.exceptions.JedisException;

/**
 * The SDK's only door to Redis: a Jedis {@link RedisClient} (a connection pool), FCALL of the protocol functions with
 * their KEYS in contract order, and the mapping of every Redis or connection error to a {@link
 * BatonException} (connection trouble is {@code unavailable}, retryable).
 */
public final class Redis implements AutoCloseable {
    private final RedisClient client;
    private final String url;

    /**
     * @param url {@code redis://host:port[/db]}
     * @param maxConnections pool size
     */
    public Redis(String url, int maxConnections) {
        this.url = url;
        GenericObjectPoolConfig<Connection> cfg = new GenericObjectPoolConfig<>();
        cfg.setMaxTotal(maxConnections);
        cfg.setMaxIdle(maxConnections);
        cfg.setMaxWait(Duration.ofSeconds(10));
        cfg.setJmxEnabled(false);
        try {
            client = RedisClient.builder().fromURI(URI.create(url)).poolConfig(cfg).build();
        } catch (IllegalArgumentException | JedisException e) {
            throw BatonException.invalid("redis", "not a Redis URL (" + url + "): " + e.getMessage());
        }
    }

    /**
     * Raises the pool size (never lowers it).
     *
     * @param n the connections the caller may hold at once
     */
    public void ensureConnections(int n) {
        var pool = client.getPool();
        if (pool.getMaxTotal() < n) {
            pool.setMaxTotal(n);
            pool.setMaxIdle(n);
        }
    }

    /** @return the URL this gateway connects to */
    public String url() {
        return url;
    }

    /**
     * Runs one operation on a pooled connection, mapping errors.
     *
     * @param op the operation
     * @param <T> its result
     * @return the result
     */
    public <T> T with(Function<RedisClient, T> op) {
        try {
            return op.apply(client);
        } catch (JedisDataException e) {
            throw BatonException.fromRedisError(e.getMessage(), e);
        } catch (JedisException e) {
            throw new BatonException(ErrorCode.UNAVAILABLE, "Redis at " + url + " is unavailable: "
                    + rootMessage(e), e);
        }
    }

    /**
     * FCALL of a protocol function.
     *
     * @param f the function
     * @param keys the key builder
     * @param extraKeys unique keys (enqueue only)
     * @param args ARGV
     * @return the raw reply (byte[], Long, List)
     */
    public Object fcall(Protocol.Function f, Keys keys, List<String> extraKeys, List<byte[]> args) {
        List<byte[]> k = keys.forCall(f, extraKeys);
        List<byte[]> argv = new ArrayList<>(2 + k.size() + args.size());
        argv.add(utf8(f.name()));
        argv.add(utf8(Integer.toString(k.size())));
        argv.addAll(k);
        argv.addAll(args);
        byte[][] a = argv.toArray(new byte[0][]);
        return with(j -> j.sendCommand(f.readOnly() ? Command.FCALL_RO : Command.FCALL, a));
    }

    /**
     * Checks that the loaded functions library is the version this SDK needs (on every connect
     * and reconnect, docs/protocol.md).
     *
     * @throws BatonException {@code version_mismatch} when it is not, {@code unavailable} when
     *     Redis cannot be reached
     */
    public void checkVersion() {
        Object v;
        try {
            v = with(j -> j.sendCommand(Command.FCALL_RO, utf8(Protocol.VERSION.name()), utf8("0")));
        } catch (BatonException e) {
            if (e.code() == ErrorCode.VERSION_MISMATCH) {
                throw new BatonException(ErrorCode.VERSION_MISMATCH, "functions library version none loaded in Redis,"
                        + " this client needs " + Protocol.LIBRARY_VERSION + ": run 'baton init'", e);
            }
            throw e;
        }
        String got = Replies.string(v);
        if (!Protocol.LIBRARY_VERSION.equals(got)) {
            throw new BatonException(ErrorCode.VERSION_MISMATCH, "functions library version " + got
                    + " loaded in Redis, this client needs " + Protocol.LIBRARY_VERSION + ": run 'baton init'", null);
        }
    }

    /**
     * Waits until the stream has an entry after {@code lastId} or the time is up.
     *
     * @param stream the stream key
     * @param lastId the id to block after
     * @param blockMs how long to wait
     */
    public void waitForEntries(String stream, String lastId, long blockMs) {
        with(j -> j.sendBlockingCommand(Command.XREAD, "COUNT", "1", "BLOCK", Long.toString(blockMs),
                "STREAMS", stream, lastId));
    }

    @Override
    public void close() {
        client.close();
    }

    static byte[] utf8(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    private static String rootMessage(Throwable e) {
        Throwable t = e;
        while (t.getCause() != null && t.getCause() != t) {
            t = t.getCause();
        }
        return t == e ? String.valueOf(e.getMessage()) : e.getMessage() + " (" + t.getMessage() + ")";
    }

    /** @param e an exception @return whether it is a connection problem worth a reconnect */
    public static boolean isConnectionError(Throwable e) {
        return e instanceof JedisConnectionException
                || (e instanceof BatonException b && b.code() == ErrorCode.UNAVAILABLE);
    }
}
