// Decoding of events-stream entries, worker names and the run-time histogram (no servers).
#include "event_decode.h"

#include <gtest/gtest.h>

#include "run_time_histogram.h"

namespace baton::collector {
namespace {

StreamFields Fields(std::string from, std::string to, std::string ids, std::string attempts,
                    std::string error = "", std::string worker = "w") {
  return {{"type", "mail"}, {"from", from},         {"to", to},      {"worker", worker},
          {"ids", ids},     {"attempts", attempts}, {"error", error}};
}

TEST(DecodeEventEntry, ABatchEntryBecomesOneRowPerTaskInOrder) {
  auto rows =
      DecodeEventEntry("shop", "1700000000123-7", Fields("queued", "active", "a b c", "1 2 1"));
  ASSERT_TRUE(rows.ok()) << rows.status().ToString();
  ASSERT_EQ(rows->size(), 3u);
  EXPECT_EQ((*rows)[1].task_id, "b");
  EXPECT_EQ((*rows)[1].attempt, 2);
  EXPECT_EQ((*rows)[1].idx, 1);
  EXPECT_EQ((*rows)[2].entry_ms, 1700000000123);
  EXPECT_EQ((*rows)[2].entry_seq, 7);
  EXPECT_EQ((*rows)[0].ns, "shop");
  EXPECT_EQ((*rows)[0].type, "mail");
  EXPECT_EQ((*rows)[0].worker, "w");
}

TEST(DecodeEventEntry, EveryMalformedEntryIsRefusedNamingTheField) {
  struct Case {
    std::string id;
    StreamFields fields;
    std::string field;
  };
  StreamFields missing = Fields("new", "queued", "a", "0");
  missing.erase(missing.begin() + 4);  // no ids
  const std::vector<Case> cases = {
      {"nope", Fields("new", "queued", "a", "0"), "id"},
      {"1-x", Fields("new", "queued", "a", "0"), "id"},
      {"1-0", missing, "ids"},
      {"1-0", Fields("new", "flying", "a", "0"), "to"},
      {"1-0", Fields("", "queued", "a", "0"), "from"},
      {"1-0", Fields("new", "queued", "a b", "0"), "attempts"},
      {"1-0", Fields("new", "queued", "a", "x"), "attempts"},
      {"1-0", Fields("new", "queued", "a", "-1"), "attempts"},
      {"1-0", Fields("new", "queued", "", ""), "ids"},
  };
  for (const auto& c : cases) {
    auto rows = DecodeEventEntry("ns", c.id, c.fields);
    ASSERT_FALSE(rows.ok()) << c.field;
    EXPECT_EQ(rows.status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(rows.status().message().rfind(c.field + ":", 0), 0u) << rows.status().message();
  }
}

TEST(ParseWorkerName, ReadsLanguageHostAndServiceFromTheRight) {
  auto who = ParseWorkerName("orders:api:v2:web-1:4242:3fa9c1:python");
  EXPECT_EQ(who.language, "python");
  EXPECT_EQ(who.host, "web-1");
  EXPECT_EQ(who.service, "orders:api:v2");
  EXPECT_EQ(ParseWorkerName("worker:h:1:abcdef:java").language, "java");
  // Names of another form: language unknown.
  EXPECT_EQ(ParseWorkerName("worker:h:1:abcdef").language, "unknown");
  EXPECT_EQ(ParseWorkerName("w:h:notapid:abcdef:go").language, "unknown");
  EXPECT_EQ(ParseWorkerName("w:h:1:abcdef:cobol").language, "unknown");
  EXPECT_EQ(ParseWorkerName("").language, "unknown");
  EXPECT_EQ(ParseWorkerName("reclaim").host, "");
}

TEST(RunTimeHistogram, BucketsAndQuantiles) {
  EXPECT_EQ(RunTimeBucket(0), 0u);
  EXPECT_EQ(RunTimeBucket(1), 0u);
  EXPECT_EQ(RunTimeBucket(2), 1u);
  EXPECT_EQ(RunTimeBucket(3), 2u);
  EXPECT_EQ(RunTimeBucket(300000), kRunTimeBoundsMs.size() - 1);
  EXPECT_EQ(RunTimeBucket(300001), kRunTimeBuckets - 1);
  RunTimeCounts counts{};
  EXPECT_EQ(EstimateQuantileMs(counts, 0.5), 0);
  // 100 runs spread evenly over (10, 25] ms: the median is interpolated to 17.5 ms.
  counts[RunTimeBucket(20)] = 100;
  EXPECT_DOUBLE_EQ(EstimateQuantileMs(counts, 0.5), 17.5);
  // One slow run in the open bucket sits at its lower bound.
  counts[kRunTimeBuckets - 1] = 1;
  EXPECT_DOUBLE_EQ(EstimateQuantileMs(counts, 0.999), 300000);
  EXPECT_LE(EstimateQuantileMs(counts, 0.99), 25);
}

}  // namespace
}  // namespace baton::collector
