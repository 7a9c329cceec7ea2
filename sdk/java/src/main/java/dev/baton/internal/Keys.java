package dev.baton.internal;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/**
 * Key names of one (namespace, task type), built from the patterns of contract/protocol.json in
 * the KEYS order each function declares.
 *
 * @param namespace the namespace
 * @param type the task type (may be null for untyped keys only)
 */
public record Keys(String namespace, String type) {

    /**
     * @param kind a key kind
     * @return its key name
     */
    public String key(Protocol.KeyKind kind) {
        String k = kind.pattern.replace("{NS}", "{" + namespace + "}");
        return kind.typed ? k.replace("TYPE", type) : k;
    }

    /**
     * @param uniqueKey a unique key chosen by the producer
     * @return the key holding it
     */
    public String unique(String uniqueKey) {
        return Protocol.KeyKind.UNIQUE.pattern.replace("{NS}", "{" + namespace + "}").replace("KEY", uniqueKey);
    }

    /**
     * @param f a function
     * @param extra keys appended after the declared ones (enqueue's unique keys)
     * @return KEYS of a call, in order
     */
    public List<byte[]> forCall(Protocol.Function f, List<String> extra) {
        List<byte[]> out = new ArrayList<>(f.keys().size() + extra.size());
        for (Protocol.KeyKind k : f.keys()) {
            out.add(key(k).getBytes(StandardCharsets.UTF_8));
        }
        for (String u : extra) {
            out.add(unique(u).getBytes(StandardCharsets.UTF_8));
        }
        return out;
    }
}
