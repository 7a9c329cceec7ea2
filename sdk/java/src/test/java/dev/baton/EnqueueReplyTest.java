package dev.baton;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The reading of {@code baton_v2_enqueue}'s flat reply ({@code status, detail} per task), no Redis. */
class EnqueueReplyTest {
    private static final List<String> IDS = List.of("a", "b", "c", "d");

    @Test
    void flatReplyGivesOneResultPerTaskInCallOrder() {
        List<Object> reply = List.of(b("queued"), b("1722489600000-0"), b("scheduled"), 1722489660000L,
                b("duplicate"), b("active"), b("unique_conflict"), b("holder-1"));
        List<EnqueueResult> r = BatonClient.enqueueResults(IDS, reply);
        assertEquals(List.of(new EnqueueResult("a", EnqueueStatus.QUEUED, "1722489600000-0"),
                new EnqueueResult("b", EnqueueStatus.SCHEDULED, "1722489660000"),
                new EnqueueResult("c", EnqueueStatus.DUPLICATE, "active"),
                new EnqueueResult("d", EnqueueStatus.UNIQUE_CONFLICT, "holder-1")), r);
    }

    @Test
    void flatReplyOfTheWrongLengthIsInternal() {
        List<Object> two = List.of(b("queued"), b("1722489600000-0"), b("duplicate"), b("active"));
        List<String> ids = IDS.subList(0, 2);
        assertMalformed(ids, two.subList(0, 3), "expected 4 values");   // odd
        assertMalformed(ids, two.subList(0, 2), "expected 4 values");   // one task short
        assertMalformed(ids, List.of(), "expected 4 values");
        List<Object> six = new ArrayList<>(two);
        six.addAll(List.of(b("queued"), b("1722489600000-1")));
        assertMalformed(ids, six, "got 6");                             // one task too many
        // the former shape, N nested pairs, is not 2N values
        assertMalformed(ids, List.of(two.subList(0, 2), two.subList(2, 4)), "got 2");
        assertMalformed(List.of("a"), List.of(two.subList(0, 2)), "expected 2 values");
    }

    @Test
    void unknownStatusOrWrongShapeIsInternal() {
        assertMalformed(List.of("a"), List.of(b("enqueued"), b("x")), "unexpected enqueue status enqueued");
        assertMalformed(List.of("a"), List.of(List.of(b("queued")), b("x")), "task 1");
        assertMalformed(List.of("a"), Arrays.asList(b("queued"), null), "task 1");
        assertMalformed(List.of("a"), 1L, "expected an array");
        assertMalformed(List.of("a"), null, "expected an array");
    }

    private static void assertMalformed(List<String> ids, Object reply, String detail) {
        BatonException e = assertThrows(BatonException.class, () -> BatonClient.enqueueResults(ids, reply));
        assertEquals(ErrorCode.INTERNAL, e.code());
        assertTrue(e.getMessage().startsWith("unexpected reply from baton_v2_enqueue: "), e.getMessage());
        assertTrue(e.getMessage().contains(detail), e.getMessage());
    }

    private static byte[] b(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }
}
