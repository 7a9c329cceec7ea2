package dev.baton;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.RedisClient;
import redis.clients.jedis.RedisClusterClient;
import redis.clients.jedis.util.JedisClusterCRC16;

/**
 * A real 3-primary, 3-replica Redis Cluster with the Baton library loaded, started by
 * tests/harness/redis_cluster.py in its JSON-line mode (the Go and Node SDK tests use it the same
 * way). The harness stops every node and removes their directories when its stdin closes.
 */
final class RedisClusterHarness implements AutoCloseable {
    /** One node of the harness' JSON line. */
    record Node(int port, String role, long pid) {}

    final String url;
    final List<Node> nodes = new ArrayList<>();
    private final Process process;
    private final Path log;
    /** A plain Jedis cluster client for the tests' own inspections. */
    final RedisClusterClient raw;

    private RedisClusterHarness(Process process, Path log, JsonNode line) {
        this.process = process;
        this.log = log;
        this.url = line.get("url").asText();
        for (JsonNode n : line.get("nodes")) {
            nodes.add(new Node(n.get("port").asInt(), n.get("role").asText(), n.get("pid").asLong()));
        }
        Set<HostAndPort> seeds = new LinkedHashSet<>();
        for (Node n : nodes) {
            seeds.add(new HostAndPort("127.0.0.1", n.port()));
        }
        raw = RedisClusterClient.create(seeds);
    }

    static RedisClusterHarness start() throws IOException {
        Path script = RedisServer.repo().resolve("tests/harness/redis_cluster.py");
        Path log = Files.createTempFile("baton-java-cluster", ".log");
        Process p = new ProcessBuilder("/usr/bin/python3", script.toString(), "--primaries", "3", "--replicas", "1",
                "--load-library").redirectError(log.toFile()).start();
        BufferedReader out = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8));
        String line = out.readLine();
        if (line == null) {
            p.destroy();
            throw new IOException("redis_cluster.py printed nothing: " + Files.readString(log));
        }
        return new RedisClusterHarness(p, log, Json.mapper().readTree(line));
    }

    /** @return the primary that serves the namespace's slot now ("127.0.0.1:port"), from CLUSTER NODES */
    String primaryOf(String ns) {
        int slot = JedisClusterCRC16.getSlot(Fixtures.key(ns, "tasks"));
        for (Node n : nodes) {
            try (RedisClient c = RedisClient.create("127.0.0.1", n.port())) {
                String text = new String((byte[]) c.sendCommand(redis.clients.jedis.Protocol.Command.CLUSTER, "NODES"),
                        StandardCharsets.UTF_8);
                for (String row : text.split("\n")) {
                    String[] f = row.trim().split(" ");
                    if (f.length < 9 || !f[2].contains("master") || f[2].contains("fail")) {
                        continue;
                    }
                    for (int i = 8; i < f.length; i++) {
                        String[] range = f[i].split("-");
                        if (f[i].startsWith("[")) {
                            continue; // a slot being migrated
                        }
                        int lo = Integer.parseInt(range[0]);
                        int hi = range.length > 1 ? Integer.parseInt(range[1]) : lo;
                        if (slot >= lo && slot <= hi) {
                            return f[1].substring(0, f[1].indexOf('@'));
                        }
                    }
                }
            } catch (RuntimeException e) {
                // a dead node: ask the next one
            }
        }
        throw new AssertionError("no live primary serves slot " + slot);
    }

    /** @return one namespace per primary, named prefix + a number */
    List<String> spreadNamespaces(String prefix) {
        Set<String> seen = new LinkedHashSet<>();
        List<String> out = new ArrayList<>();
        for (int i = 0; out.size() < 3; i++) {
            if (i > 1000) {
                throw new AssertionError("namespaces found on only " + out.size() + " primaries");
            }
            String ns = prefix + i;
            if (seen.add(primaryOf(ns))) {
                out.add(ns);
            }
        }
        return out;
    }

    long pidOf(String addr) {
        for (Node n : nodes) {
            if (addr.endsWith(":" + n.port())) {
                return n.pid();
            }
        }
        throw new AssertionError("no node at " + addr + " in " + nodes);
    }

    boolean isDone(String ns, String id) {
        return raw.zscore(Fixtures.key(ns, "done"), id) != null;
    }

    @Override
    public void close() throws IOException {
        raw.close();
        process.getOutputStream().close(); // EOF: the harness stops the nodes
        try {
            if (!process.waitFor(30, TimeUnit.SECONDS)) {
                process.destroy();
            }
        } catch (InterruptedException e) {
            process.destroy();
            Thread.currentThread().interrupt();
        }
        Files.deleteIfExists(log);
    }
}
