package dev.baton.conformance;

import java.util.HashMap;
import java.util.Map;

/**
 * The Java SDK's conformance driver (tests/conformance/DRIVERS.md), on the SDK's public API only:
 * <pre>
 *   driver produce --redis URL --ns NS --cases FILE
 *   driver consume --redis URL --ns NS --report FILE --corpus DIR --seconds N
 * </pre>
 */
public final class Driver {
    private Driver() {}

    public static void main(String[] args) throws Exception {
        if (args.length < 1) {
            System.err.println("usage: driver produce|consume --redis URL --ns NS ...");
            System.exit(2);
        }
        Map<String, String> opts = new HashMap<>();
        for (int i = 1; i + 1 < args.length; i += 2) {
            if (!args[i].startsWith("--")) {
                System.err.println("unexpected argument " + args[i]);
                System.exit(2);
            }
            opts.put(args[i].substring(2), args[i + 1]);
        }
        String redis = opts.getOrDefault("redis", "redis://127.0.0.1:6379");
        String ns = opts.getOrDefault("ns", "");
        int code;
        switch (args[0]) {
            case "produce" -> code = Produce.run(redis, ns, opts.get("cases"));
            case "consume" -> code = Consume.run(redis, ns, opts.get("report"), opts.get("corpus"),
                    Integer.parseInt(opts.getOrDefault("seconds", "60")));
            default -> {
                System.err.println("unknown command " + args[0] + " (produce or consume)");
                code = 2;
            }
        }
        System.exit(code);
    }
}
