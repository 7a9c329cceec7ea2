package dev.baton;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestFactory;

/** Every case of contract/fixtures (README there): accepted or refused as it says, naming the field. */
class ContractFixturesTest {
    static final Path DIR = RedisServer.repo().resolve("contract/fixtures");

    @TestFactory
    List<DynamicTest> fixtures() throws IOException {
        List<Path> files;
        try (Stream<Path> s = Files.list(DIR)) {
            files = s.filter(p -> p.getFileName().toString().matches("(valid|invalid)_.*\\.json")).sorted()
                    .collect(Collectors.toList());
        }
        assertTrue(files.size() >= 60, "fixtures found: " + files.size());
        return files.stream().map(f -> DynamicTest.dynamicTest(f.getFileName().toString(), () -> check(f)))
                .collect(Collectors.toList());
    }

    private static void check(Path file) throws IOException {
        byte[] raw = Files.readAllBytes(file);
        JsonNode fixture = Json.mapper().readTree(raw);
        byte[] text = documentText(raw, fixture);
        if (fixture.get("valid").asBoolean()) {
            TaskDocument d = TaskDocument.parse(text);
            assertEquals(fixture.path("document").path("task_id").asText(), d.taskId());
        } else {
            BatonException e = assertThrows(BatonException.class, () -> TaskDocument.parse(text));
            String field = fixture.path("error").path("field").asText();
            assertEquals(ErrorCode.INVALID_ARGUMENT, e.code());
            assertEquals(fixture.path("error").path("code").asText(), e.code().code());
            assertEquals(field, e.field(), e.getMessage());
            assertTrue(e.getMessage().startsWith(field + ": "), e.getMessage());
        }
    }

    /** document_text, the re-serialized document of payload_repeat, or the document's exact bytes. */
    static byte[] documentText(byte[] raw, JsonNode fixture) throws IOException {
        if (fixture.has("document_text")) {
            return fixture.get("document_text").textValue().getBytes(StandardCharsets.UTF_8);
        }
        if (fixture.has("payload_repeat")) {
            JsonNode rep = fixture.get("payload_repeat");
            ObjectNode doc = (ObjectNode) fixture.get("document").deepCopy();
            ((ObjectNode) doc.get("payload")).put(rep.get("key").asText(),
                    rep.get("char").asText().repeat(rep.get("count").asInt()));
            return Json.mapper().writeValueAsBytes(doc);
        }
        try (JsonParser p = Json.mapper().getFactory().createParser(raw)) {
            p.nextToken();
            while (p.nextToken() == JsonToken.FIELD_NAME) {
                String name = p.currentName();
                JsonToken t = p.nextToken();
                int start = (int) p.currentTokenLocation().getByteOffset();
                if (t.isStructStart()) {
                    p.skipChildren();
                }
                if (name.equals("document")) {
                    return Arrays.copyOfRange(raw, start, (int) p.currentLocation().getByteOffset());
                }
            }
        }
        throw new IOException("no document in fixture");
    }

    @Test
    void payloadKeepsItsExactBytes() {
        String doc = "{\"task_id\":\"a1\",\"namespace\":\"n\",\"task_type\":\"t\",\"payload\": {\"p\": 1.10, "
                + "\"big\": 123456789012345678901234567890} ,\"max_retry\":3,\"delay_seconds\":0,"
                + "\"created_at\":1722489600,\"x_new\":{\"k\":[1,2]}}";
        TaskDocument d = TaskDocument.parse(doc.getBytes(StandardCharsets.UTF_8));
        assertEquals("{\"p\": 1.10, \"big\": 123456789012345678901234567890}",
                new String(d.payload(), StandardCharsets.UTF_8));
        assertEquals("{\"x_new\":{\"k\":[1,2]}}", d.extra().toString());
    }

    @Test
    void millisecondsAreNamed() {
        BatonException e = assertThrows(BatonException.class, () -> TaskDocument.parse(("{\"task_id\":\"a\","
                + "\"namespace\":\"n\",\"task_type\":\"t\",\"payload\":{},\"max_retry\":3,\"delay_seconds\":0,"
                + "\"created_at\":1722489600000}").getBytes(StandardCharsets.UTF_8)));
        assertEquals("created_at: must be Unix seconds 946684800..4102444800 (got 1722489600000: milliseconds?)",
                e.getMessage());
    }
}
