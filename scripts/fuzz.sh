#!/usr/bin/env bash
# Builds the libFuzzer targets of tests/fuzz/ (clang, ASan + UBSan) into build/fuzz and runs each
# for a bounded time on a working corpus in build/fuzz/corpus/<target>, seeded from
# tests/fuzz/seeds/, tests/fuzz/regressions/ and (task documents) contract/fixtures/.
#   scripts/fuzz.sh                    15 s per target (what CI runs)
#   scripts/fuzz.sh 600                10 minutes per target; FUZZ_SECONDS=600 does the same
#   scripts/fuzz.sh 60 cron_job ...    only the named targets
# Exits 1 when a target crashed, leaked, hit UB, timed out or broke a property; the input is
# saved under build/fuzz/crashes/<target>/ and its path printed. Save it as a regression case
# (tests/fuzz/README.md): cp <crash> tests/fuzz/regressions/<target>/<what-it-found>.
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=${1:-${FUZZ_SECONDS:-15}}
if [ $# -gt 0 ]; then shift; fi
case "$seconds" in
  '' | *[!0-9]*) echo "usage: $0 [seconds-per-target] [target...]" >&2; exit 2 ;;
esac
all_targets=(task_document stream_entry cron_expression cron_job time_arg redis_url resp_reply
  event_decode)
if [ $# -gt 0 ]; then targets=("$@"); else targets=("${all_targets[@]}"); fi

build=build/fuzz
if [ ! -f "$build/CMakeCache.txt" ]; then
  CC=clang CXX=clang++ cmake -S tests/fuzz -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
fi
build_targets=()
for target in "${targets[@]}"; do build_targets+=("${target}_fuzzer"); done
# Other builds share the machine: one build at a time, two jobs at most.
flock /tmp/baton-build.lock cmake --build "$build" -j2 --target "${build_targets[@]}"

# The contract's task documents (the "document" of each fixture, or its raw "document_text"),
# and each payload fixture inside a minimal document. Size-limit cases (payload_repeat) are left
# out: their megabyte documents would only slow the fuzzer down.
seed_task_documents() {
  /usr/bin/python3 - "$1" <<'PY'
import json, pathlib, sys
out = pathlib.Path(sys.argv[1])
fixtures = pathlib.Path("contract/fixtures")
# Task documents only: valid_*/invalid_* (partitions.json beside them holds other vectors).
for path in sorted([*fixtures.glob("valid_*.json"), *fixtures.glob("invalid_*.json")]):
    case = json.loads(path.read_text())
    if "payload_repeat" in case:
        continue
    text = case["document_text"] if "document_text" in case else json.dumps(case["document"])
    (out / ("fixture_" + path.stem)).write_text(text)
for path in sorted((fixtures / "payloads").glob("*.json")):
    document = ('{"task_id":"t-1","namespace":"shop","task_type":"mail","payload":%s,'
                '"max_retry":3,"delay_seconds":0,"created_at":1722489600}')
    (out / ("payload_" + path.stem)).write_text(document % path.read_text().strip())
PY
}

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1}
failed=()
summary=()
for target in "${targets[@]}"; do
  corpus="$build/corpus/$target"
  crashes="$build/crashes/$target"
  log="$build/logs/$target.log"
  mkdir -p "$corpus" "$crashes" "$(dirname "$log")"
  for dir in "tests/fuzz/seeds/$target" "tests/fuzz/regressions/$target"; do
    if [ -d "$dir" ]; then cp -n "$dir"/* "$corpus"/ 2>/dev/null || true; fi
  done
  if [ "$target" = task_document ]; then seed_task_documents "$corpus"; fi

  echo "== $target: ${seconds}s (corpus $corpus, log $log)"
  status=0
  "$build/${target}_fuzzer" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
    -max_len=8192 -print_final_stats=1 -artifact_prefix="$crashes/" "$corpus" >"$log" 2>&1 ||
    status=$?
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -n 1)
  coverage=$(grep -oE 'cov: [0-9]+ ft: [0-9]+' "$log" | tail -n 1 || true)
  line="$target: ${execs:-?} runs, ${rate:-?} exec/s, ${coverage:-no coverage line}"
  if [ "$status" -ne 0 ]; then
    crash=$(sed -n 's/.*Test unit written to \(.*\)$/\1/p' "$log" | tail -n 1)
    grep -E 'ERROR: |fuzz property failed|runtime error|SUMMARY' "$log" | head -n 5 >&2 || true
    echo "FAILED $line; input: ${crash:-see $log}" >&2
    failed+=("$target")
    line="$line FAILED (input: ${crash:-see $log})"
  fi
  summary+=("$line")
done

echo "== fuzz summary (${seconds}s per target)"
printf '  %s\n' "${summary[@]}"
if [ ${#failed[@]} -gt 0 ]; then
  echo "failed targets: ${failed[*]}" >&2
  exit 1
fi
