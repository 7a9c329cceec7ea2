package dev.baton;

import com.fasterxml.jackson.databind.JsonNode;
import java.math.BigDecimal;
import java.nio.charset.StandardCharsets;
import java.util.Iterator;
import java.util.Map;
import java.util.regex.Pattern;

/** The rules of contract/task.schema.json, each failing with a field-naming {@link BatonException}. */
final class Rules {
    static final String ID_PATTERN = "^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$";
    static final String NAME_PATTERN = "^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$";
    static final int PAYLOAD_MAX_BYTES = 524288;
    static final long MAX_RETRY_MAX = 25;
    static final long DELAY_MAX = 31536000;
    static final long CREATED_AT_MIN = 946684800L;
    static final long CREATED_AT_MAX = 4102444800L;
    static final long TIMEOUT_MAX = 86400;
    static final int TRACESTATE_MAX = 512;
    private static final Pattern ID = Pattern.compile(ID_PATTERN);
    private static final Pattern NAME = Pattern.compile(NAME_PATTERN);

    private Rules() {}

    static String taskId(String field, String value) {
        if (value == null || !ID.matcher(value).matches()) {
            throw BatonException.invalid(field, "must be a string matching " + ID_PATTERN);
        }
        return value;
    }

    static String name(String field, String value) {
        if (value == null || !NAME.matcher(value).matches()) {
            throw BatonException.invalid(field, "must be a string matching " + NAME_PATTERN);
        }
        return value;
    }

    static long range(String field, long value, long lo, long hi) {
        if (value < lo || value > hi) {
            throw BatonException.invalid(field, "must be an integer " + lo + ".." + hi + " (got " + value + ")");
        }
        return value;
    }

    static long createdAt(long value) {
        if (value < CREATED_AT_MIN || value > CREATED_AT_MAX) {
            String hint = value > CREATED_AT_MAX && value / 1000 <= CREATED_AT_MAX ? ": milliseconds?" : "";
            throw BatonException.invalid("created_at", "must be Unix seconds " + CREATED_AT_MIN + ".."
                    + CREATED_AT_MAX + " (got " + value + hint + ")");
        }
        return value;
    }

    /** An integer-valued JSON number (3.0 counts, as in JSON Schema) within lo..hi. */
    static long integer(String field, JsonNode n, long lo, long hi) {
        String rule = "must be an integer " + lo + ".." + hi;
        if (n == null || !n.isNumber()) {
            throw BatonException.invalid(field, rule + " (got " + Json.typeName(n) + ")");
        }
        BigDecimal d = n.decimalValue();
        if (d.signum() != 0 && d.stripTrailingZeros().scale() > 0) {
            throw BatonException.invalid(field, rule + " (got " + n + ")");
        }
        if (d.compareTo(BigDecimal.valueOf(lo)) < 0 || d.compareTo(BigDecimal.valueOf(hi)) > 0) {
            if ("created_at".equals(field)) {
                return createdAt(d.min(BigDecimal.valueOf(Long.MAX_VALUE)).longValue());
            }
            throw BatonException.invalid(field, rule + " (got " + n + ")");
        }
        return d.longValueExact();
    }

    /** A payload: a JSON object text, at most 524288 bytes, starting with { and ending with }. */
    static JsonNode payload(byte[] text) {
        if (text.length > PAYLOAD_MAX_BYTES) {
            throw BatonException.invalid("payload", "must be at most " + PAYLOAD_MAX_BYTES
                    + " bytes (got " + text.length + ")");
        }
        JsonNode n;
        try {
            n = Json.mapper().readTree(text);
        } catch (java.io.IOException e) {
            throw BatonException.invalid("payload", "not valid JSON: " + firstLine(e));
        }
        if (n == null || !n.isObject()) {
            throw BatonException.invalid("payload", "must be a JSON object (got " + Json.typeName(n) + ")");
        }
        if (text[0] != '{' || text[text.length - 1] != '}') {
            throw BatonException.invalid("payload", "must start with { and end with } (no surrounding spaces)");
        }
        return n;
    }

    static void trace(JsonNode n) {
        if (!n.isObject()) {
            throw BatonException.invalid("trace", "must be a JSON object (got " + Json.typeName(n) + ")");
        }
        for (Iterator<Map.Entry<String, JsonNode>> it = n.properties().iterator(); it.hasNext(); ) {
            Map.Entry<String, JsonNode> e = it.next();
            switch (e.getKey()) {
                case "traceparent" -> string("trace.traceparent", e.getValue(), 256);
                case "tracestate" -> string("trace.tracestate", e.getValue(), TRACESTATE_MAX);
                default -> throw BatonException.invalid("trace", "must have only traceparent and tracestate (got "
                        + e.getKey() + ")");
            }
        }
    }

    static void headers(JsonNode n) {
        if (!n.isObject()) {
            throw BatonException.invalid("headers", "must be a JSON object (got " + Json.typeName(n) + ")");
        }
        if (n.size() > 64) {
            throw BatonException.invalid("headers", "must have at most 64 fields (got " + n.size() + ")");
        }
        for (Iterator<Map.Entry<String, JsonNode>> it = n.properties().iterator(); it.hasNext(); ) {
            Map.Entry<String, JsonNode> e = it.next();
            string("headers." + e.getKey(), e.getValue(), 1024);
        }
    }

    private static void string(String field, JsonNode v, int maxChars) {
        String rule = "must be a string of at most " + maxChars + " characters";
        if (!v.isTextual()) {
            throw BatonException.invalid(field, rule + " (got " + Json.typeName(v) + ")");
        }
        int chars = v.textValue().codePointCount(0, v.textValue().length());
        if (chars > maxChars) {
            throw BatonException.invalid(field, rule + " (got " + chars + ")");
        }
    }

    static String firstLine(Exception e) {
        String m = String.valueOf(e.getMessage());
        int nl = m.indexOf('\n');
        return nl < 0 ? m : m.substring(0, nl);
    }

    static byte[] utf8(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }
}
