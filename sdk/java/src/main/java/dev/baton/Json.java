package dev.baton;

import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.cfg.JsonNodeFeature;
import com.fasterxml.jackson.databind.json.JsonMapper;
import java.math.BigDecimal;
import java.util.Comparator;

/**
 * The SDK's Jackson setup: numbers stay exact (integers beyond {@code long} as {@link
 * java.math.BigInteger}, every decimal as {@link BigDecimal} with its scale), trailing
 * tokens are errors, and binding to a class ignores properties it does not declare (use
 * {@link ExtensibleObject} to keep them).
 */
public final class Json {
    private static final ObjectMapper MAPPER = JsonMapper.builder()
            .configure(JsonNodeFeature.STRIP_TRAILING_BIGDECIMAL_ZEROES, false)
            .enable(DeserializationFeature.USE_BIG_DECIMAL_FOR_FLOATS)
            .enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS)
            .disable(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES)
            .build();

    /** Numbers by value (1.10 equals 1.1), everything else by {@link JsonNode#equals}. */
    private static final Comparator<JsonNode> BY_VALUE = (a, b) -> {
        if (a.isNumber() && b.isNumber()) {
            return a.decimalValue().compareTo(b.decimalValue());
        }
        return a.equals(b) ? 0 : 1;
    };

    private Json() {}

    /**
     * @return the shared, configured mapper (thread-safe; do not reconfigure it)
     */
    public static ObjectMapper mapper() {
        return MAPPER;
    }

    /**
     * Compares two JSON trees with numbers by exact value, never through {@code double}.
     *
     * @param a one tree
     * @param b the other
     * @return whether they are equal
     */
    public static boolean valueEquals(JsonNode a, JsonNode b) {
        return a.equals(BY_VALUE, b);
    }

    /**
     * @return the node type's name as the contract's messages say it (object, array, ...)
     */
    static String typeName(JsonNode n) {
        if (n == null || n.isNull()) {
            return "null";
        }
        if (n.isObject()) {
            return "object";
        }
        if (n.isArray()) {
            return "array";
        }
        if (n.isTextual()) {
            return "string";
        }
        if (n.isBoolean()) {
            return "boolean";
        }
        return "number";
    }
}
