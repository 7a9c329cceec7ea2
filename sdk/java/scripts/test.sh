#!/usr/bin/env bash
# The Java SDK's whole test suite, runnable on a clean machine with a JDK 17+, Maven 3.8+,
# python3 and Debian's redis-server (dependencies come from Maven Central, exact versions pinned
# in pom.xml, cached in ~/.m2):
#   1. the generated protocol tables are fresh (scripts/gen_protocol.py --check against contract/),
#   2. mvn verify: compile with -Xlint:all -Werror, JUnit 5 tests against real redis-servers on
#      free loopback ports, and ClusterTest on a 3-primary, 3-replica Redis Cluster started by
#      tests/harness/redis_cluster.py (/usr/bin/python3 with redis-py; about 25 s)
#      (interop with the C++ binaries of BATON_BUILD_DIR, default
#      build/release; BATON_REQUIRE_BINARIES=1 makes missing binaries a failure), javadoc
#      (doclint, warnings are errors), sources and javadoc jars,
#   3. the virtual-threads test again on Java 21+ (Temurin 25 when installed, else skipped),
#   4. the conformance driver (tests/conformance/drivers/java) compiles against the SDK.
# Usage: sdk/java/scripts/test.sh [extra mvn flags, e.g. -Dtest=TimeoutTest]
set -euo pipefail
cd "$(dirname "$0")/.."
started=$(date +%s)
MVN=(mvn -B -q -Dstyle.color=never)
JAVA21_HOME="${BATON_JAVA21_HOME:-/usr/lib/jvm/temurin-25-jdk-amd64}"

count() { # sums the surefire reports: "tests failures errors skipped"
  python3 - "$@" <<'PY'
import glob, sys, xml.etree.ElementTree as ET
t = f = s = 0
for p in glob.glob("target/surefire-reports/TEST-*.xml"):
    r = ET.parse(p).getroot()
    t += int(r.get("tests")); f += int(r.get("failures")) + int(r.get("errors")); s += int(r.get("skipped"))
print(t, f, s)
PY
}

echo "== generated code is fresh"
python3 scripts/gen_protocol.py --check
echo "== mvn verify (javac -Werror, JUnit against real redis-servers, javadoc, jars)"
rm -rf target/surefire-reports
status=0
"${MVN[@]}" verify "$@" || status=$?
read -r total failed skipped < <(count)
echo "sdk/java: $((total - failed - skipped)) passed, $failed failed, $skipped skipped (mvn verify)"
[ "$status" -eq 0 ] || exit "$status"

echo "== virtual threads on Java 21+"
if [ -x "$JAVA21_HOME/bin/java" ]; then
  "${MVN[@]}" surefire:test -Dtest=VirtualThreadsTest -Djvm="$JAVA21_HOME/bin/java" -Dsurefire.failIfNoSpecifiedTests=false
  grep -q 'tests="2"' target/surefire-reports/TEST-dev.baton.VirtualThreadsTest.xml
  grep -h "VirtualThreadsTest: Java" target/surefire-reports/dev.baton.VirtualThreadsTest-output.txt 2>/dev/null || true
else
  echo "SKIP: no Java 21+ at $JAVA21_HOME (set BATON_JAVA21_HOME): virtual threads not tested"
fi

echo "== conformance driver compiles against the SDK"
"${MVN[@]}" dependency:build-classpath -Dmdep.includeScope=runtime -Dmdep.outputFile=target/deps.classpath
rm -rf target/driver-classes
javac --release 17 -Xlint:all -Werror -d target/driver-classes -cp "target/classes:$(cat target/deps.classpath)" \
  $(find ../../tests/conformance/drivers/java/src -name '*.java')

echo "sdk/java: all checks passed in $(( $(date +%s) - started )) s"
