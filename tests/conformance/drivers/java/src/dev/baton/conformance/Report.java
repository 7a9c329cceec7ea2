package dev.baton.conformance;

import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.FileOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;

/** The report file: one JSON line per write, flushed at once. */
final class Report implements AutoCloseable {
    private final FileOutputStream out;

    Report(String path) throws IOException {
        out = new FileOutputStream(path, true);
    }

    synchronized void append(ObjectNode line) throws IOException {
        out.write((line.toString() + "\n").getBytes(StandardCharsets.UTF_8));
        out.flush();
    }

    @Override
    public synchronized void close() throws IOException {
        out.close();
    }
}
