package dev.baton;

import java.io.IOException;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import redis.clients.jedis.RedisClient;

/**
 * A real redis-server for the tests (never a mock): a free 127.0.0.1 port, its own temporary
 * directory, no persistence, and the Baton functions library loaded the way {@code baton init}
 * does it (functions/*.lua concatenated in file-name order, FUNCTION LOAD REPLACE).
 */
final class RedisServer implements AutoCloseable {
    final int port;
    private final Path dir;
    private Process process;

    private RedisServer(int port, Path dir) {
        this.port = port;
        this.dir = dir;
    }

    static Path repo() {
        return Path.of(System.getProperty("baton.repo", "../..")).toAbsolutePath().normalize();
    }

    static String binary() {
        String env = System.getenv("REDIS_SERVER");
        if (env != null && !env.isEmpty()) {
            return env;
        }
        for (String d : System.getenv().getOrDefault("PATH", "/usr/bin").split(":")) {
            if (Files.isExecutable(Path.of(d, "redis-server"))) {
                return Path.of(d, "redis-server").toString();
            }
        }
        return "/usr/bin/redis-server";
    }

    /** Starts a server with the library loaded. */
    static RedisServer start() throws Exception {
        Exception last = null;
        for (int i = 0; i < 5; i++) { // the port may be taken between the probe and the bind
            RedisServer s = new RedisServer(freePort(), Files.createTempDirectory("baton-java-redis"));
            try {
                s.launch();
                s.loadFunctions();
                return s;
            } catch (Exception e) {
                last = e;
                s.close();
            }
        }
        throw last;
    }

    private static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
            return s.getLocalPort();
        }
    }

    private void launch() throws Exception {
        process = new ProcessBuilder(binary(), "--port", Integer.toString(port), "--bind", "127.0.0.1",
                "--save", "", "--appendonly", "no", "--dir", dir.toString())
                .redirectErrorStream(true).redirectOutput(dir.resolve("redis.log").toFile()).start();
        long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        while (System.nanoTime() < end) {
            if (!process.isAlive()) {
                throw new IOException("redis-server exited: " + Files.readString(dir.resolve("redis.log")));
            }
            try (RedisClient j = RedisClient.create("127.0.0.1", port)) {
                if ("PONG".equals(j.ping())) {
                    return;
                }
            } catch (Exception e) {
                Thread.sleep(50);
            }
        }
        throw new IOException("redis-server did not answer on port " + port);
    }

    /** FUNCTION LOAD REPLACE of functions/*.lua in file-name order. */
    void loadFunctions() throws IOException {
        List<Path> files;
        try (Stream<Path> s = Files.list(repo().resolve("functions"))) {
            files = s.filter(p -> p.toString().endsWith(".lua")).sorted().collect(Collectors.toList());
        }
        StringBuilder src = new StringBuilder();
        for (Path f : files) {
            src.append(Files.readString(f, StandardCharsets.UTF_8));
        }
        cli().functionLoadReplace(src.toString());
    }

    /** Stops the server (kill) and starts it again on the same port, empty. */
    void restart() throws Exception {
        stopProcess();
        synchronized (this) {
            if (cli != null) {
                cli.close(); // its pooled connections are dead
                cli = null;
            }
        }
        for (int i = 0; ; i++) {
            try {
                launch();
                break;
            } catch (IOException e) {
                if (i > 50) {
                    throw e;
                }
                Thread.sleep(100); // the port may linger for a moment
            }
        }
        loadFunctions();
    }

    void stopProcess() {
        if (process != null) {
            process.destroyForcibly();
            try {
                process.waitFor(10, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }

    /** Freezes the server (SIGSTOP): connections stay open, calls hang, the data is kept. */
    void pause() throws Exception {
        signal("-STOP");
    }

    /** Lets a paused server go on (SIGCONT). */
    void resume() throws Exception {
        signal("-CONT");
    }

    private void signal(String sig) throws Exception {
        Process p = new ProcessBuilder("kill", sig, Long.toString(process.pid())).inheritIO().start();
        if (p.waitFor() != 0) {
            throw new IOException("kill " + sig + " " + process.pid() + " failed");
        }
    }

    String url() {
        return "redis://127.0.0.1:" + port;
    }

    private RedisClient cli;

    /** A client for the tests' own inspections (shared; reconnects after a restart). */
    synchronized RedisClient cli() {
        if (cli == null) {
            cli = RedisClient.create("127.0.0.1", port);
        }
        return cli;
    }

    @Override
    public void close() throws IOException {
        if (cli != null) {
            cli.close();
        }
        stopProcess();
        try (Stream<Path> s = Files.walk(dir)) {
            s.sorted(java.util.Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        }
    }
}
