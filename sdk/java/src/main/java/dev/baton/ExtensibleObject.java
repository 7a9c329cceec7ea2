package dev.baton;

import com.fasterxml.jackson.annotation.JsonAnyGetter;
import com.fasterxml.jackson.annotation.JsonAnySetter;
import com.fasterxml.jackson.databind.JsonNode;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * A base class for payload classes that must not lose fields they do not declare (seed 5.3):
 * Jackson puts every unknown property here on reading and writes it back on writing, so a Java
 * consumer that re-enqueues a payload passes on what a newer producer added.
 */
public abstract class ExtensibleObject {
    private final Map<String, JsonNode> unknown = new LinkedHashMap<>();

    /**
     * @return the properties the class does not declare, in document order
     */
    @JsonAnyGetter
    public Map<String, JsonNode> unknownFields() {
        return unknown;
    }

    /**
     * Called by Jackson for each undeclared property.
     *
     * @param name the property
     * @param value its value, exact
     */
    @JsonAnySetter
    public void unknownField(String name, JsonNode value) {
        unknown.put(name, value);
    }
}
