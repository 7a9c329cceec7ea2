package dev.baton;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.HashSet;
import java.util.Set;
import org.junit.jupiter.api.Test;

class UuidV7Test {
    @Test
    void layoutFollowsRfc9562() {
        long before = System.currentTimeMillis();
        String id = UuidV7.generate();
        long after = System.currentTimeMillis();
        assertTrue(id.matches("^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$"), id);
        long ts = UuidV7.timestamp(id);
        assertTrue(ts >= before && ts <= after, "timestamp " + ts + " outside " + before + ".." + after);
    }

    @Test
    void embedsTheGivenTime() {
        assertEquals(0x0190f0a06a1eL, UuidV7.timestamp(UuidV7.generate(0x0190f0a06a1eL)));
        assertTrue(UuidV7.generate(0x0190f0a06a1eL).startsWith("0190f0a0-6a1e-7"));
    }

    @Test
    void idsAreUnique() {
        Set<String> seen = new HashSet<>();
        for (int i = 0; i < 10000; i++) {
            assertTrue(seen.add(UuidV7.generate(1722489600000L)));
        }
    }

    @Test
    void idsSortInCreationOrderByBatonsRule() {
        // many ids share a millisecond: rand_a is then a counter (src/core/uuid7.cpp), so the
        // texts still sort in creation order; it starts below 2048 on each new millisecond
        String prev = UuidV7.generate();
        int sameMs = 0;
        for (int i = 0; i < 20000; i++) {
            String id = UuidV7.generate();
            assertTrue(id.compareTo(prev) > 0, prev + " then " + id);
            if (UuidV7.timestamp(id) == UuidV7.timestamp(prev)) {
                sameMs++;
            } else {
                int randA = Integer.parseInt(id.substring(15, 18), 16);
                assertTrue(randA < 2048, id);
            }
            prev = id;
        }
        assertTrue(sameMs > 1000, "ids made within one millisecond: " + sameMs);
    }
}
