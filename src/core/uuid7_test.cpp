// NewTaskId: RFC 9562 UUIDv7 format, bits, ordering and uniqueness.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "baton/task.h"

namespace baton {
namespace {

std::uint64_t HexValue(std::string_view hex) {
  std::uint64_t value = 0;
  for (char c : hex)
    value = value * 16 + static_cast<std::uint64_t>(c <= '9' ? c - '0' : c - 'a' + 10);
  return value;
}

TEST(Uuid7, CanonicalLowercaseForm) {
  const std::string id = NewTaskId();
  ASSERT_EQ(id.size(), 36u);
  for (std::size_t i = 0; i < id.size(); ++i) {
    if (i == 8 || i == 13 || i == 18 || i == 23) {
      EXPECT_EQ(id[i], '-') << id;
    } else {
      EXPECT_TRUE((id[i] >= '0' && id[i] <= '9') || (id[i] >= 'a' && id[i] <= 'f')) << id;
    }
  }
  EXPECT_TRUE(IsValidTaskId(id));
}

TEST(Uuid7, VersionVariantAndTimestamp) {
  const auto before = std::chrono::duration_cast<std::chrono::milliseconds>(
                          std::chrono::system_clock::now().time_since_epoch())
                          .count();
  const std::string id = NewTaskId();
  const auto after = std::chrono::duration_cast<std::chrono::milliseconds>(
                         std::chrono::system_clock::now().time_since_epoch())
                         .count();
  EXPECT_EQ(id[14], '7') << id;  // version nibble
  const std::uint64_t variant_nibble = HexValue(id.substr(19, 1));
  EXPECT_EQ(variant_nibble >> 2, 0b10u) << id;
  const auto ms = static_cast<std::int64_t>(HexValue(id.substr(0, 8) + id.substr(9, 4)));
  // The counter may push the timestamp a little past the clock; never behind it.
  EXPECT_GE(ms, before);
  EXPECT_LE(ms, after + 1000);
}

TEST(Uuid7, MonotonicWithinAProcess) {
  std::vector<std::string> ids;
  ids.reserve(10000);
  for (int i = 0; i < 10000; ++i) ids.push_back(NewTaskId());
  for (std::size_t i = 1; i < ids.size(); ++i) {
    ASSERT_LT(ids[i - 1], ids[i]) << "at " << i;
  }
}

TEST(Uuid7, UniqueAcrossThreads) {
  constexpr int kThreads = 8;
  constexpr int kPerThread = 5000;
  std::vector<std::vector<std::string>> per_thread(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&per_thread, t] {
      for (int i = 0; i < kPerThread; ++i) per_thread[t].push_back(NewTaskId());
    });
  }
  for (auto& thread : threads) thread.join();
  std::set<std::string> all;
  for (const auto& ids : per_thread) {
    for (std::size_t i = 1; i < ids.size(); ++i) EXPECT_LT(ids[i - 1], ids[i]);
    all.insert(ids.begin(), ids.end());
  }
  EXPECT_EQ(all.size(), static_cast<std::size_t>(kThreads * kPerThread));
}

}  // namespace
}  // namespace baton
