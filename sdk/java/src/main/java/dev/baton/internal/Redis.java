package dev.baton.internal;

import dev.baton.BatonException;
import dev.baton.ErrorCode;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import org.apache.commons.pool2.impl.GenericObjectPoolConfig;
import redis.clients.jedis.BuilderFactory;
import redis.clients.jedis.ClusterCommandArguments;
import redis.clients.jedis.CommandArguments;
import redis.clients.jedis.CommandObject;
import redis.clients.jedis.Connection;
import redis.clients.jedis.ConnectionPool;
import redis.clients.jedis.DefaultJedisClientConfig;
import redis.clients.jedis.Protocol.Command;
import redis.clients.jedis.RedisClient;
import redis.clients.jedis.RedisClusterClient;
import redis.clients.jedis.UnifiedJedis;
import redis.clients.jedis.exceptions.JedisClusterOperationException;
import redis.clients.jedis.exceptions.JedisConnectionException;
import redis.clients.jedis.exceptions.JedisDataException;
import redis.clients.jedis.exceptions.JedisException;
import redis.clients.jedis.providers.ClusterConnectionProvider;

/**
 * The SDK's only door to Redis: a Jedis {@link RedisClient} (a connection pool) for
 * {@code redis://}, or a Jedis {@link RedisClusterClient} for {@code redis+cluster://} (Jedis
 * routes each call by its keys, follows MOVED/ASK, and never sends a call again once it may have
 * run: {@link NoResendClusterExecutor}). FCALL of the protocol functions with their KEYS in
 * contract order, and the mapping of every Redis or connection error to a {@link BatonException}
 * (connection trouble is {@code unavailable}, retryable).
 */
public final class Redis implements AutoCloseable {
    /** Jedis' socket timeout (its default): a WAIT must end before it. */
    public static final int SOCKET_TIMEOUT_MS = 2000;
    /** Sends of one cluster call that Jedis may make (redirections, failed connects, CLUSTERDOWN). */
    static final int CLUSTER_ATTEMPTS = 16;
    /** How long a cluster call may keep being redirected or retried (CLUSTERDOWN of a failover). */
    static final Duration CLUSTER_RETRY_TIME = Duration.ofSeconds(3);
    /** How often the cluster's slot map is read again besides redirections and failures. */
    static final Duration CLUSTER_REFRESH = Duration.ofSeconds(5);

    private final UnifiedJedis client;
    /** Set for a single Redis: {@link #client} itself. */
    private final RedisClient single;
    /** Set for a cluster: its nodes' pools and slot map. */
    private final ClusterConnectionProvider cluster;
    private final GenericObjectPoolConfig<Connection> poolConfig;
    private final String url;

    /**
     * @param url {@code redis://host:port[/db]} or {@code redis+cluster://host:port[,host:port...]}
     * @param maxConnections pool size (per node on a cluster)
     */
    public Redis(String url, int maxConnections) {
        poolConfig = new GenericObjectPoolConfig<>();
        poolConfig.setMaxTotal(maxConnections);
        poolConfig.setMaxIdle(maxConnections);
        poolConfig.setMaxWait(Duration.ofSeconds(10));
        poolConfig.setJmxEnabled(false);
        if (ClusterUrl.isCluster(url)) {
            ClusterUrl u = ClusterUrl.parse(url);
            this.url = u.redacted();
            var config = DefaultJedisClientConfig.builder().user(u.user()).password(u.password())
                    .socketTimeoutMillis(SOCKET_TIMEOUT_MS).connectionTimeoutMillis(SOCKET_TIMEOUT_MS).build();
            try {
                cluster = new ClusterConnectionProvider(u.seedSet(), config, poolConfig, CLUSTER_REFRESH);
            } catch (JedisException e) {
                throw new BatonException(ErrorCode.UNAVAILABLE, "Redis Cluster " + this.url
                        + " is unavailable (no seed gave the slot map): " + rootMessage(e), e);
            }
            single = null;
            client = RedisClusterClient.builder().nodes(u.seedSet()).clientConfig(config).poolConfig(poolConfig)
                    .connectionProvider(cluster)
                    .commandExecutor(new NoResendClusterExecutor(cluster, CLUSTER_ATTEMPTS, CLUSTER_RETRY_TIME))
                    .build();
        } else {
            this.url = url;
            cluster = null;
            try {
                single = RedisClient.builder().fromURI(URI.create(url)).poolConfig(poolConfig).build();
                client = single;
            } catch (IllegalArgumentException | JedisException e) {
                throw BatonException.invalid("redis", "not a Redis URL (" + url + "): " + e.getMessage());
            }
        }
    }

    /** @return whether this is a Redis Cluster */
    public boolean isCluster() {
        return cluster != null;
    }

    /**
     * Raises the pool size (never lowers it); on a cluster, of every node's pool.
     *
     * @param n the connections the caller may hold at once
     */
    public synchronized void ensureConnections(int n) {
        if (poolConfig.getMaxTotal() < n) {
            poolConfig.setMaxTotal(n); // pools made later (a new primary) take it from here
            poolConfig.setMaxIdle(n);
        }
        var pools = cluster != null ? cluster.getNodes().values() : List.of(single.getPool());
        for (var pool : pools) {
            if (pool.getMaxTotal() < n) {
                pool.setMaxTotal(n);
                pool.setMaxIdle(n);
            }
        }
    }

    /** @return the URL this gateway connects to (a cluster's without user and password) */
    public String url() {
        return url;
    }

    /**
     * Runs one operation, mapping errors.
     *
     * @param op the operation
     * @param <T> its result
     * @return the result
     */
    public <T> T with(Function<UnifiedJedis, T> op) {
        try {
            return op.apply(client);
        } catch (JedisDataException e) {
            throw BatonException.fromRedisError(e.getMessage(), e);
        } catch (JedisException e) {
            throw unavailable(e);
        }
    }

    private BatonException unavailable(JedisException e) {
        String what = cluster != null ? "Redis Cluster " + url : "Redis at " + url;
        String why = rootMessage(e);
        if (e instanceof JedisClusterOperationException) {
            for (Throwable s : e.getSuppressed()) { // the last failure of a call Jedis gave up on
                why += " (last: " + (s instanceof NoResendClusterExecutor.NotRunException n ? n.reply : rootMessage(s)) + ")";
            }
        }
        return new BatonException(ErrorCode.UNAVAILABLE, what + " is unavailable: " + why, e);
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
        return with(j -> j.executeCommand(new CommandObject<>(fcallArgs(f, keys, extraKeys, args), BuilderFactory.RAW_OBJECT)));
    }

    /** The reply of a call followed by WAIT: {@code acked} is null when the WAIT failed ({@code waitError}). */
    public record Durable(Object reply, Long acked, String waitError) {}

    /**
     * FCALL followed by {@code WAIT replicas timeoutMs} on the same connection of the same node.
     *
     * @param f the function
     * @param keys the key builder
     * @param extraKeys unique keys
     * @param args ARGV
     * @param replicas replicas to wait for
     * @param timeoutMs how long WAIT waits
     * @return the call's reply and what WAIT answered
     * @throws BatonException as {@link #fcall}, when the call itself failed
     */
    public Durable fcallDurable(Protocol.Function f, Keys keys, List<String> extraKeys, List<byte[]> args,
                                int replicas, long timeoutMs) {
        return with(j -> {
            WaitingCall call = new WaitingCall(fcallArgs(f, keys, extraKeys, args), replicas, timeoutMs);
            Object reply;
            if (cluster != null) {
                reply = j.executeCommand(call); // the executor sends the WAIT on the node that answered
            } else {
                try (Connection c = single.getPool().getResource()) {
                    reply = c.executeCommand(call);
                    call.waitOn(c);
                }
            }
            JedisException w = call.waitError();
            return new Durable(reply, call.acked(), w == null ? null : rootMessage(w));
        });
    }

    private CommandArguments fcallArgs(Protocol.Function f, Keys keys, List<String> extraKeys, List<byte[]> args) {
        List<byte[]> k = keys.forCall(f, extraKeys);
        CommandArguments a = arguments(f.readOnly() ? Command.FCALL_RO : Command.FCALL);
        a.add(utf8(f.name())).add(utf8(Integer.toString(k.size())));
        for (byte[] key : k) {
            a.key(key);
        }
        for (byte[] arg : args) {
            a.add(arg);
        }
        return a;
    }

    /** Command arguments whose keys route the call (on a cluster: by their slot). */
    private CommandArguments arguments(Command c) {
        return cluster != null ? new ClusterCommandArguments(c) : new CommandArguments(c);
    }

    /**
     * Checks that the loaded functions library is the version this SDK needs (on every connect
     * and reconnect, docs/protocol.md); on a cluster on every primary, naming the one that lacks
     * it. A cluster's slot map is read again first (a reconnect may follow a failover).
     *
     * @param strict on a cluster, whether a primary that cannot be reached fails the check
     *     (at connect) or is skipped (a reconnect: calls routed to it fail on their own)
     * @throws BatonException {@code version_mismatch} when it is not, {@code unavailable} when
     *     Redis cannot be reached
     */
    public void checkVersion(boolean strict) {
        if (cluster == null) {
            checkVersion(null, client::executeCommand);
            return;
        }
        if (!strict) {
            try {
                cluster.renewSlotCache();
            } catch (JedisException ignored) {
                // the check below reports what cannot be reached
            }
        }
        Map<String, ConnectionPool> primaries = cluster.getPrimaryNodes();
        if (primaries.isEmpty()) {
            throw new BatonException(ErrorCode.UNAVAILABLE, "Redis Cluster " + url + " is unavailable: no primary known", null);
        }
        int reached = 0;
        BatonException unreachable = null;
        for (Map.Entry<String, ConnectionPool> e : primaries.entrySet()) {
            try (Connection c = e.getValue().getResource()) {
                checkVersion(e.getKey(), c::executeCommand);
                reached++;
            } catch (JedisException ce) {
                unreachable = new BatonException(ErrorCode.UNAVAILABLE, "Redis Cluster " + url + ": the primary "
                        + e.getKey() + " is unavailable: " + rootMessage(ce), ce);
            } catch (BatonException be) {
                if (be.code() != ErrorCode.UNAVAILABLE) {
                    throw be;
                }
                unreachable = new BatonException(ErrorCode.UNAVAILABLE, "Redis Cluster " + url + ": the primary "
                        + e.getKey() + " is unavailable: " + be.getMessage(), be);
            }
        }
        if (unreachable != null && (strict || reached == 0)) {
            throw unreachable;
        }
    }

    /** Checks on the default connection. */
    public void checkVersion() {
        checkVersion(true);
    }

    /** FCALL_RO baton_v2_version 0 through run; node names the primary in the messages (null: a single Redis). */
    private void checkVersion(String node, Function<CommandObject<Object>, Object> run) {
        String where = node == null ? "in Redis" : "on the primary " + node;
        CommandArguments a = new CommandArguments(Command.FCALL_RO).add(utf8(Protocol.VERSION.name())).add(utf8("0"));
        Object v;
        try {
            v = with(j -> run.apply(new CommandObject<>(a, BuilderFactory.RAW_OBJECT)));
        } catch (BatonException e) {
            if (e.code() == ErrorCode.VERSION_MISMATCH) {
                throw new BatonException(ErrorCode.VERSION_MISMATCH, "functions library version none loaded " + where
                        + ", this client needs " + Protocol.LIBRARY_VERSION + ": run 'baton init'", e);
            }
            throw e;
        }
        String got = Replies.string(v);
        if (!Protocol.LIBRARY_VERSION.equals(got)) {
            throw new BatonException(ErrorCode.VERSION_MISMATCH, "functions library version " + got
                    + " loaded " + where + ", this client needs " + Protocol.LIBRARY_VERSION + ": run 'baton init'", null);
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
        CommandArguments a = arguments(Command.XREAD).add("COUNT").add(1).add("BLOCK").add(blockMs).add("STREAMS")
                .key(stream).add(lastId).blocking();
        with(j -> j.executeCommand(new CommandObject<>(a, BuilderFactory.RAW_OBJECT)));
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
