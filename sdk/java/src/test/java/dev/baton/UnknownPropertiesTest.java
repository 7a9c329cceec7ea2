package dev.baton;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.math.BigDecimal;
import java.util.List;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * Seed 5.3 for payloads bound to plain classes and records: a Java consumer that binds the
 * payload, changes it and re-enqueues it with {@code TaskRequest.from(task).payloadObject(value)}
 * passes on every property its class does not declare, nested ones included.
 */
class UnknownPropertiesTest extends Fixtures {
    /** A record that knows 3 of the payload's properties, and 1 of its nested object's. */
    record Order(long order, BigDecimal amount, Customer customer) {}

    record Customer(String name) {}

    /** A plain class with public fields, same knowledge. */
    static final class PlainOrder {
        public long order;
        public BigDecimal amount;
    }

    static final String PAYLOAD = "{\"order\":42,\"amount\":12.10,\"customer\":{\"name\":\"ada\",\"tier\":\"gold\"},"
            + "\"new_field\":{\"x\":[1,2.50,12345678901234567890123]},\"flag\":true}";

    /** Re-enqueues each task once (header hop=2) with its bound value changed; collects the re-enqueued ones. */
    @Test
    void recordsAndPlainClassesKeepUnknownPropertiesWhenReEnqueued() throws Exception {
        String ns = newNamespace();
        LinkedBlockingQueue<Task> second = new LinkedBlockingQueue<>();
        try (BatonClient c = client(); Worker w = worker().build()) {
            c.enqueue(TaskRequest.builder(ns, "record").payloadJson(PAYLOAD).build());
            c.enqueue(TaskRequest.builder(ns, "plain").payloadJson(PAYLOAD).build());
            w.handle(ns, "record", t -> {
                if (t.header("hop").isPresent()) {
                    second.add(t);
                    return;
                }
                Order o = t.payloadAs(Order.class);
                Order next = new Order(o.order(), o.amount().add(new BigDecimal("1.00")), new Customer("bob"));
                c.enqueue(TaskRequest.from(t).header("hop", "2").payloadObject(next).build());
            });
            w.handle(ns, "plain", t -> {
                if (t.header("hop").isPresent()) {
                    second.add(t);
                    return;
                }
                PlainOrder o = t.payloadAs(PlainOrder.class);
                o.amount = o.amount.add(new BigDecimal("1.00"));
                c.enqueue(TaskRequest.from(t).header("hop", "2").payloadObject(o).build());
            });
            w.start();
            for (int i = 0; i < 2; i++) {
                Task t = second.poll(30, TimeUnit.SECONDS);
                assertTrue(t != null, "re-enqueued task " + (i + 1) + " delivered");
                JsonNode p = t.payloadTree();
                assertEquals(42, p.get("order").asLong());
                assertEquals(new BigDecimal("13.10"), p.get("amount").decimalValue(), t.payloadText());
                assertTrue(p.get("flag").booleanValue(), t.payloadText());
                assertTrue(Json.valueEquals(Json.mapper().readTree("{\"x\":[1,2.50,12345678901234567890123]}"),
                        p.get("new_field")), t.payloadText());
                assertEquals("gold", p.get("customer").get("tier").asText(), "nested unknown kept: " + t.payloadText());
                // the record sets the customer's name; the plain class does not know the customer at all
                assertEquals(t.taskType().equals("record") ? "bob" : "ada", p.get("customer").get("name").asText());
            }
        }
    }

    @Test
    void mergeRules() throws Exception {
        ObjectNode original = (ObjectNode) Json.mapper().readTree(PAYLOAD);
        ObjectNode merged = Json.merge(original, new Order(7, null, new Customer("eve")));
        assertEquals(7, merged.get("order").asLong());
        assertTrue(merged.get("amount").isNull(), "a declared property written as null becomes null");
        assertEquals("eve", merged.get("customer").get("name").asText());
        assertEquals("gold", merged.get("customer").get("tier").asText());
        assertEquals(new BigDecimal("2.50"), merged.get("new_field").get("x").get(1).decimalValue());
        assertEquals(new BigDecimal("12.10"), original.get("amount").decimalValue(), "the original is not changed");
        // arrays are replaced whole
        ObjectNode arr = Json.merge(original, java.util.Map.of("new_field", java.util.Map.of("x", List.of(9))));
        assertEquals("[9]", arr.get("new_field").get("x").toString());
        BatonException e = assertThrows(BatonException.class, () -> Json.merge(original, List.of(1)));
        assertEquals("payload", e.field());
        // a builder not made from a task sends the value as it serializes, nothing merged
        TaskRequest plain = TaskRequest.builder("ns", "t").payloadObject(new Customer("x")).build();
        assertEquals("{\"name\":\"x\"}", new String(plain.payload(), java.nio.charset.StandardCharsets.UTF_8));
    }
}
