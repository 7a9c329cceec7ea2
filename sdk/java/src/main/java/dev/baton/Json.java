package dev.baton;

import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.cfg.JsonNodeFeature;
import com.fasterxml.jackson.databind.json.JsonMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.math.BigDecimal;
import java.util.Comparator;

/**
 * The SDK's Jackson setup: numbers stay exact (integers beyond {@code long} as {@link
 * java.math.BigInteger}, every decimal as {@link BigDecimal} with its scale), trailing
 * tokens are errors, and binding to a class ignores properties it does not declare (use
 * {@link ExtensibleObject}, {@link #merge(ObjectNode, Object)} or {@link
 * TaskRequest.Builder#payloadObject(Object)} on a builder from {@link TaskRequest#from(Task)} to
 * keep them).
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
     * Lays a value bound from a payload back over that payload, so that the properties its class
     * does not declare survive (seed 5.3) for plain classes and records too. The result is {@code
     * original} with every property {@code value} writes set to the written value; where both
     * sides hold an object, the rule applies inside it, so nested unknown properties survive as
     * well. Arrays and scalars are replaced whole. A declared property the value writes as null
     * becomes null; a property the value does not write (absent from its class, or left out by
     * {@code @JsonInclude(NON_NULL)} and the like) keeps the original's value.
     *
     * <pre>{@code
     * Order o = task.payloadAs(Order.class);           // a record that knows 2 of 5 properties
     * ObjectNode next = Json.merge(task.payloadTree(), o.withAmount(amount));  // the other 3 kept
     * }</pre>
     *
     * @param original the payload the value was bound from (not changed)
     * @param value the bound value (a POJO, a record, a Map, a JsonNode), serialized with {@link
     *     #mapper()}
     * @return a new tree
     * @throws BatonException {@code invalid_argument} ({@code payload}) when the value does not
     *     serialize to a JSON object
     */
    public static ObjectNode merge(ObjectNode original, Object value) {
        JsonNode over;
        try {
            over = MAPPER.valueToTree(value);
        } catch (IllegalArgumentException e) {
            throw BatonException.invalid("payload", "cannot be serialized: " + Rules.firstLine(e));
        }
        if (!(over instanceof ObjectNode o)) {
            throw BatonException.invalid("payload", "must be a JSON object (got " + typeName(over) + ")");
        }
        ObjectNode out = original.deepCopy();
        mergeInto(out, o);
        return out;
    }

    private static void mergeInto(ObjectNode target, ObjectNode over) {
        over.properties().forEach(e -> {
            JsonNode old = target.get(e.getKey());
            if (old instanceof ObjectNode oldObject && e.getValue() instanceof ObjectNode newObject) {
                mergeInto(oldObject, newObject);
            } else {
                target.set(e.getKey(), e.getValue());
            }
        });
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
