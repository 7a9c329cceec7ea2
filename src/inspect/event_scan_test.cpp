// The events entry lists (ids and attempts, space-separated and parallel): finding one task's
// position, and the word at a position.
#include "inspect/event_scan.h"

#include <gtest/gtest.h>

namespace baton::internal {
namespace {

TEST(EventScanTest, IdPositionMatchesWholeIdsOnly) {
  EXPECT_EQ(IdPosition("a b c", "a"), 0u);
  EXPECT_EQ(IdPosition("a b c", "b"), 1u);
  EXPECT_EQ(IdPosition("a b c", "c"), 2u);
  EXPECT_EQ(IdPosition("order-42 order-4", "order-4"), 1u);
  EXPECT_FALSE(IdPosition("order-42 order-43", "order-4").has_value());
  EXPECT_FALSE(IdPosition("xorder-4", "order-4").has_value());
  EXPECT_FALSE(IdPosition("", "a").has_value());
  EXPECT_FALSE(IdPosition("a b", "").has_value());
}

TEST(EventScanTest, WordAtAndWordCount) {
  EXPECT_EQ(WordAt("0 1 2", 0), "0");
  EXPECT_EQ(WordAt("0 1 2", 2), "2");
  EXPECT_EQ(WordAt("0 1 2", 3), "");
  EXPECT_EQ(WordAt("7", 0), "7");
  EXPECT_EQ(WordAt("", 0), "");
  EXPECT_EQ(WordCount(""), 0u);
  EXPECT_EQ(WordCount("a"), 1u);
  EXPECT_EQ(WordCount("a b c"), 3u);
}

}  // namespace
}  // namespace baton::internal
