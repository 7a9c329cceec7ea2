package dev.baton;

import static org.junit.jupiter.api.Assertions.fail;

import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Assumptions;

/**
 * Programs of the C++ build in $BATON_BUILD_DIR (default build/release of the repository).
 * Missing ones skip the test, unless BATON_REQUIRE_BINARIES=1: then the test fails.
 */
final class CppBinaries {
    private CppBinaries() {}

    static Path find(String rel) {
        String dir = System.getenv("BATON_BUILD_DIR");
        Path base = dir == null || dir.isEmpty() ? RedisServer.repo().resolve("build/release") : Path.of(dir);
        Path p = base.resolve(rel).toAbsolutePath();
        if (Files.isExecutable(p)) {
            return p;
        }
        if ("1".equals(System.getenv("BATON_REQUIRE_BINARIES"))) {
            fail(p + " not found and BATON_REQUIRE_BINARIES=1");
        }
        Assumptions.assumeTrue(false, p + " not built (set BATON_BUILD_DIR)");
        return p;
    }
}
