package dev.baton.internal;

import dev.baton.BatonException;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import redis.clients.jedis.HostAndPort;

/**
 * A parsed {@code redis+cluster://[user:password@]host:port[,host:port...]}: the seed nodes of a
 * Redis Cluster. Rules and wording follow the C++ core (src/broker/redis_endpoint.cpp) and the
 * Go and Node SDKs: a seed without a port takes 6379, no {@code /db} (a cluster has only db 0),
 * no {@code ?options}. Errors name {@code redis_url} and never echo the password.
 *
 * @param seeds the seed nodes, in the URL's order
 * @param user the user name, or null
 * @param password the password, or null
 */
public record ClusterUrl(List<HostAndPort> seeds, String user, String password) {
    /** The scheme of a cluster URL. */
    public static final String SCHEME = "redis+cluster://";
    private static final String FORM = "(redis+cluster://host:port[,host:port...])";

    /**
     * @param url a Redis URL
     * @return whether it is a cluster URL
     */
    public static boolean isCluster(String url) {
        return url != null && url.startsWith(SCHEME);
    }

    /**
     * Parses a cluster URL.
     *
     * @param url {@code redis+cluster://...}
     * @return the seeds and credentials
     * @throws BatonException {@code invalid_argument} naming {@code redis_url} and the rule
     */
    public static ClusterUrl parse(String url) {
        if (!isCluster(url)) {
            throw BatonException.invalid("redis_url", "a cluster URL starts with " + SCHEME + " " + FORM);
        }
        String rest = url.substring(SCHEME.length());
        if (rest.contains("/")) {
            throw BatonException.invalid("redis_url", "redis+cluster:// takes no /db (a cluster has only db 0)");
        }
        if (rest.contains("?")) {
            throw BatonException.invalid("redis_url", "redis+cluster:// takes no ?options " + FORM);
        }
        String user = null;
        String password = null;
        int at = rest.lastIndexOf('@');
        if (at >= 0) {
            String userinfo = rest.substring(0, at);
            rest = rest.substring(at + 1);
            int colon = userinfo.indexOf(':');
            String u = decode(colon < 0 ? userinfo : userinfo.substring(0, colon));
            user = u.isEmpty() ? null : u;
            if (colon >= 0) {
                password = decode(userinfo.substring(colon + 1));
            }
        }
        List<HostAndPort> seeds = new ArrayList<>();
        String[] parts = rest.split(",", -1);
        for (int i = 0; i < parts.length; i++) {
            Object seed = seed(parts[i]);
            if (seed instanceof String rule) {
                throw BatonException.invalid("redis_url", "seed " + (i + 1) + ": " + rule + " " + FORM);
            }
            seeds.add((HostAndPort) seed);
        }
        return new ClusterUrl(List.copyOf(seeds), user, password);
    }

    /** @return the seeds as a set (Jedis' form), in the URL's order */
    public Set<HostAndPort> seedSet() {
        return new LinkedHashSet<>(seeds);
    }

    /** @return the URL without user and password, for messages and logs */
    public String redacted() {
        StringBuilder b = new StringBuilder(SCHEME);
        for (int i = 0; i < seeds.size(); i++) {
            b.append(i == 0 ? "" : ",").append(seeds.get(i));
        }
        return b.toString();
    }

    @Override
    public String toString() {
        return redacted();
    }

    /** "host[:port]" or "[v6]:port": a HostAndPort, or the rule it breaks. */
    private static Object seed(String text) {
        String host;
        String port = "";
        if (text.startsWith("[")) {
            int close = text.indexOf(']');
            if (close < 0) {
                return "unterminated IPv6 address '['";
            }
            host = text.substring(1, close);
            String after = text.substring(close + 1);
            if (!after.isEmpty()) {
                if (after.charAt(0) != ':') {
                    return "expected ':port' after the IPv6 address";
                }
                port = after.substring(1);
            }
        } else {
            int colon = text.lastIndexOf(':');
            host = colon < 0 ? text : text.substring(0, colon);
            if (colon >= 0) {
                port = text.substring(colon + 1);
            }
        }
        if (host.isEmpty()) {
            return "missing host";
        }
        if (port.isEmpty()) {
            return new HostAndPort(host, 6379);
        }
        int n = port.matches("[0-9]{1,5}") ? Integer.parseInt(port) : -1;
        if (n < 1 || n > 65535) {
            return "port must be 1..65535 (got '" + port + "')";
        }
        return new HostAndPort(host, n);
    }

    private static String decode(String s) {
        try {
            // percent-decoding only: a '+' stays a '+' (URLDecoder would make it a space)
            return URLDecoder.decode(s.replace("+", "%2B"), StandardCharsets.UTF_8);
        } catch (IllegalArgumentException e) {
            throw BatonException.invalid("redis_url", "user and password must be percent-encoded (bad '%' escape)");
        }
    }
}
