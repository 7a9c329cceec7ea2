// The partition rule against the shared vectors of contract/fixtures/partitions.json (every SDK
// checks the same file), and the names a key may carry between its braces.
#include "broker/partitions.h"

#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

namespace baton::internal {
namespace {

// contract/fixtures/partitions.json (null when it cannot be read).
nlohmann::json SharedVectors() {
  std::ifstream file(std::string(BATON_CONTRACT_DIR) + "/fixtures/partitions.json");
  return file ? nlohmann::json::parse(file) : nlohmann::json();
}

TEST(PartitionsTest, HashAndPartitionMatchTheSharedVectors) {
  const nlohmann::json doc = SharedVectors();
  ASSERT_FALSE(doc.is_null()) << "contract/fixtures/partitions.json";
  ASSERT_GE(doc.at("cases").size(), 5u);
  for (const nlohmann::json& c : doc.at("cases")) {
    const std::string id = c.at("task_id");
    EXPECT_EQ(Fnv1a32(id), c.at("fnv1a32").get<std::uint32_t>()) << id;
    for (const auto& [count, partition] : c.at("partition").items()) {
      EXPECT_EQ(PartitionOf(id, std::stoi(count)), partition.get<int>()) << id << " mod " << count;
    }
  }
}

TEST(PartitionsTest, StorageNamespaces) {
  EXPECT_EQ(PartitionNamespace("shop", 0), "shop");
  EXPECT_EQ(PartitionNamespace("shop", 7), "shop:7");
  EXPECT_EQ(BaseNamespace("shop:7"), "shop");
  EXPECT_EQ(BaseNamespace("shop"), "shop");
  EXPECT_EQ(PartitionNumber("shop:7"), 7);
  EXPECT_EQ(PartitionNumber("shop"), 0);
  for (const char* ok : {"shop", "shop:1", "a.b-c_d:1023", "x:10"}) {
    EXPECT_TRUE(IsValidStorageNamespace(ok)) << ok;
  }
  for (const char* bad : {"shop:0", "shop:01", "shop:1024", "shop:", ":1", "shop:1:2", "shop:x",
                          "sh}op:1", "shop:-1", "shop:+1", "", "_shop:1"}) {
    EXPECT_FALSE(IsValidStorageNamespace(bad)) << bad;
  }
}

// The stored text of a count, read the same way in every SDK (the "counts" of the fixture file).
TEST(PartitionsTest, StoredCountsMatchTheSharedVectors) {
  const nlohmann::json doc = SharedVectors();
  ASSERT_FALSE(doc.is_null()) << "contract/fixtures/partitions.json";
  ASSERT_GE(doc.at("counts").size(), 10u);
  for (const nlohmann::json& c : doc.at("counts")) {
    Reply stored;  // nil: absent
    if (!c.at("stored").is_null()) {
      stored.type = Reply::Type::kString;
      stored.str = c.at("stored").get<std::string>();
    }
    EXPECT_EQ(ParsePartitionCount(stored), c.at("count").get<int>()) << c.at("stored").dump();
  }
}

}  // namespace
}  // namespace baton::internal
