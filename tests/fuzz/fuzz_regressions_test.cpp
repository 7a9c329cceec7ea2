// Replays saved fuzz inputs through the fuzzers' own entry points (fuzz_targets.h), in the regular
// build and under ASan+UBSan (scripts/build.sh asan): the hand-written seeds (seeds/<target>/),
// every crash a fuzzer found (regressions/<target>/, one file per crash, named after what it
// found), and for task documents every contract fixture (contract/fixtures/). An entry point
// aborts on a broken property, so a failing input stops this test with the property and the
// file name (printed before each run).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "fuzz_targets.h"

namespace baton::fuzz {
namespace {

namespace fs = std::filesystem;
using EntryPoint = int (*)(const std::uint8_t*, std::size_t);

std::string ReadFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void Replay(EntryPoint entry, const std::string& input, const std::string& what) {
  std::fprintf(stderr, "replaying %s\n", what.c_str());
  entry(reinterpret_cast<const std::uint8_t*>(input.data()), input.size());
}

// Replays every file of seeds/<target>/ and regressions/<target>/; returns how many.
int ReplaySaved(EntryPoint entry, const std::string& target) {
  int count = 0;
  for (const char* kind : {"seeds", "regressions"}) {
    const fs::path dir = fs::path(BATON_FUZZ_DIR) / kind / target;
    if (!fs::is_directory(dir)) continue;
    std::vector<fs::path> files;
    for (const auto& entry : fs::directory_iterator(dir)) {
      if (entry.is_regular_file()) files.push_back(entry.path());
    }
    std::sort(files.begin(), files.end());
    for (const fs::path& file : files) {
      Replay(entry, ReadFile(file), file.string());
      ++count;
    }
  }
  return count;
}

TEST(FuzzRegressions, TaskDocumentSavedInputs) {
  EXPECT_GT(ReplaySaved(FuzzTaskDocument, "task_document"), 0);
}

TEST(FuzzRegressions, TaskDocumentContractFixtures) {
  int count = 0;
  for (const auto& entry : fs::directory_iterator(fs::path(BATON_CONTRACT_DIR) / "fixtures")) {
    // Task documents are valid_*.json and invalid_*.json (partitions.json holds other vectors).
    const std::string name = entry.path().filename().string();
    if (entry.path().extension() != ".json" ||
        !(name.starts_with("valid_") || name.starts_with("invalid_"))) {
      continue;
    }
    const auto fixture = nlohmann::json::parse(ReadFile(entry.path()));
    if (fixture.contains("payload_repeat")) continue;  // megabyte documents: the unit test's job
    const std::string document = fixture.contains("document_text")
                                     ? fixture["document_text"].get<std::string>()
                                     : fixture["document"].dump();
    Replay(FuzzTaskDocument, document, entry.path().string());
    ++count;
  }
  EXPECT_GT(count, 50);
}

TEST(FuzzRegressions, StreamEntry) { EXPECT_GT(ReplaySaved(FuzzStreamEntry, "stream_entry"), 0); }
TEST(FuzzRegressions, CronExpression) {
  EXPECT_GT(ReplaySaved(FuzzCronExpression, "cron_expression"), 0);
}
TEST(FuzzRegressions, CronJob) { EXPECT_GT(ReplaySaved(FuzzCronJob, "cron_job"), 0); }
TEST(FuzzRegressions, TimeArg) { EXPECT_GT(ReplaySaved(FuzzTimeArg, "time_arg"), 0); }
TEST(FuzzRegressions, RedisUrl) { EXPECT_GT(ReplaySaved(FuzzRedisUrl, "redis_url"), 0); }
TEST(FuzzRegressions, RespReply) { EXPECT_GT(ReplaySaved(FuzzRespReply, "resp_reply"), 0); }
TEST(FuzzRegressions, EventDecode) { EXPECT_GT(ReplaySaved(FuzzEventDecode, "event_decode"), 0); }

}  // namespace
}  // namespace baton::fuzz
