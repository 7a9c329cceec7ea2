package baton_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/baton-dev/baton/sdk/go/internal/redistest"
)

// cppBinary finds a program of the C++ build (rel: "cli/baton", "daemon/batond") in
// $BATON_BUILD_DIR (default: build/release of the repository). Without it the test is skipped,
// unless BATON_REQUIRE_BINARIES=1 (the repository's test script sets it): then it fails.
func cppBinary(t *testing.T, rel string) string {
	t.Helper()
	dir := os.Getenv("BATON_BUILD_DIR")
	if dir == "" {
		dir = filepath.Join(redistest.RepoRoot(), "build", "release")
	}
	path := filepath.Join(dir, rel)
	if info, err := os.Stat(path); err == nil && !info.IsDir() {
		abs, _ := filepath.Abs(path)
		return abs
	}
	if os.Getenv("BATON_REQUIRE_BINARIES") == "1" {
		t.Fatalf("%s not found (BATON_BUILD_DIR=%q) and BATON_REQUIRE_BINARIES=1", path, dir)
	}
	t.Skipf("%s not built (set BATON_BUILD_DIR)", path)
	return ""
}
