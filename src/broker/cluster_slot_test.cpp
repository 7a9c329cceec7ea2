#include "broker/cluster_slot.h"

#include <gtest/gtest.h>

namespace baton::internal {
namespace {

TEST(KeySlot, MatchesTheClusterSpecification) {
  // The spec's CRC16 check value: CRC16("123456789") = 0x31C3.
  EXPECT_EQ(KeySlot("123456789"), 0x31C3 % kClusterSlots);
  // Values CLUSTER KEYSLOT gives on Redis 7.
  EXPECT_EQ(KeySlot("foo"), 12182);
  EXPECT_EQ(KeySlot("bar"), 5061);
  EXPECT_EQ(KeySlot(""), 0);
}

TEST(KeySlot, HashesOnlyTheFirstNonEmptyTag) {
  EXPECT_EQ(KeySlot("{user1000}.following"), KeySlot("user1000"));
  EXPECT_EQ(KeySlot("{user1000}.followers"), KeySlot("{user1000}.following"));
  EXPECT_EQ(KeySlot("baton:v2:{shop}:stream:send_email"), KeySlot("shop"));
  EXPECT_EQ(KeySlot("baton:v2:{shop}:tasks"), KeySlot("baton:v2:{shop}:done"));
  // An empty tag is no tag: the whole key is hashed.
  EXPECT_EQ(KeySlot("foo{}{bar}"), KeySlot(std::string("foo{}{bar}")));
  EXPECT_NE(KeySlot("foo{}{bar}"), KeySlot("bar"));
  // The tag ends at the first '}' after the first '{'.
  EXPECT_EQ(KeySlot("foo{{bar}}zap"), KeySlot("{bar"));
  EXPECT_EQ(KeySlot("foo{bar}{zap}"), KeySlot("bar"));
  // No closing brace: the whole key.
  EXPECT_EQ(KeySlot("foo{bar"), KeySlot(std::string("foo{bar")));
}

TEST(CommandKey, NamesTheKeyThatRoutesEachCommand) {
  using Argv = std::vector<std::string>;
  EXPECT_EQ(CommandKey(Argv{"HGET", "k", "f"}), "k");
  EXPECT_EQ(CommandKey(Argv{"fcall", "baton_v2_enqueue", "3", "a", "b", "c", "x"}), "a");
  EXPECT_EQ(CommandKey(Argv{"FCALL_RO", "baton_v2_version", "0"}), std::nullopt);
  EXPECT_EQ(CommandKey(Argv{"FCALL", "f", "x1", "a"}), std::nullopt);
  EXPECT_EQ(CommandKey(Argv{"XREADGROUP", "GROUP", "g", "c", "COUNT", "5", "BLOCK", "100",
                            "STREAMS", "s1", ">"}),
            "s1");
  EXPECT_EQ(CommandKey(Argv{"XREAD", "COUNT", "1", "streams", "s", "0"}), "s");
  EXPECT_EQ(CommandKey(Argv{"XGROUP", "CREATE", "s", "g", "0"}), "s");
  EXPECT_EQ(CommandKey(Argv{"XINFO", "GROUPS", "s"}), "s");
  for (const char* keyless : {"PING", "TIME", "MULTI", "EXEC", "WAIT", "CLIENT", "SCAN", "INFO",
                              "PUBLISH", "FUNCTION", "CONFIG"}) {
    EXPECT_EQ(CommandKey(Argv{keyless, "a", "b"}), std::nullopt) << keyless;
  }
  EXPECT_EQ(CommandKey(Argv{"PING"}), std::nullopt);
}

}  // namespace
}  // namespace baton::internal
