package dev.baton;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Map;
import org.junit.jupiter.api.Test;

/** A bad redis+cluster:// URL is refused before any connection, by client and worker alike. */
class ClusterUrlTest {
    static final String FORM = " (redis+cluster://host:port[,host:port...])";

    @Test
    void badUrlsNameTheFieldAndTheRuleButNeverThePassword() {
        Map<String, String> cases = Map.of(
                "redis+cluster://h:1,h:2/0", "redis_url: redis+cluster:// takes no /db (a cluster has only db 0)",
                "redis+cluster://h:1,,h:2", "redis_url: seed 2: missing host" + FORM,
                "redis+cluster://", "redis_url: seed 1: missing host" + FORM,
                "redis+cluster://u:hunter2@h:1,h:x", "redis_url: seed 2: port must be 1..65535 (got 'x')" + FORM,
                "redis+cluster://h:1,h:99999", "redis_url: seed 2: port must be 1..65535 (got '99999')" + FORM,
                "redis+cluster://h:0", "redis_url: seed 1: port must be 1..65535 (got '0')" + FORM,
                "redis+cluster://[::1:7000", "redis_url: seed 1: unterminated IPv6 address '['" + FORM,
                "redis+cluster://h:1?max_redirects=9", "redis_url: redis+cluster:// takes no ?options" + FORM,
                "redis+cluster://u:p%zz@h:1", "redis_url: user and password must be percent-encoded (bad '%' escape)",
                "redis+cluster://app:hunter2@h:1,h:2/1?x=y&z", "redis_url: redis+cluster:// takes no /db (a cluster has only db 0)");
        cases.forEach((url, want) -> {
            BatonException c = assertThrows(BatonException.class, () -> BatonClient.connect(url), url);
            assertEquals(want, c.getMessage(), url);
            assertEquals(ErrorCode.INVALID_ARGUMENT, c.code());
            assertEquals("redis_url", c.field());
            BatonException w = assertThrows(BatonException.class, () -> Worker.builder(url).build(), url);
            assertEquals(want, w.getMessage(), url);
            assertFalse(c.getMessage().contains("hunter2") || w.getMessage().contains("hunter2"), url);
        });
    }

    @Test
    void noSeedAnsweringIsUnavailableWithoutThePassword() {
        BatonException e = assertThrows(BatonException.class,
                () -> BatonClient.connect("redis+cluster://app:hunter2@127.0.0.1:1,127.0.0.1:2"));
        assertEquals(ErrorCode.UNAVAILABLE, e.code());
        assertTrue(e.getMessage().startsWith("Redis Cluster redis+cluster://127.0.0.1:1,127.0.0.1:2 is unavailable"),
                e.getMessage());
        assertFalse(e.getMessage().contains("hunter2"), e.getMessage());
    }
}
