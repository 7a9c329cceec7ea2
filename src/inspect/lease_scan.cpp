#include "inspect/lease_scan.h"

#include <algorithm>

#include "inspect/task_record.h"

namespace baton::internal {

namespace {
constexpr std::size_t kChunk = 1000;
}  // namespace

StatusOr<ExpiredLeases> ReadExpiredLeases(InspectorCore& core, const Keys& keys,
                                          const std::string& type, std::int64_t now_ms,
                                          std::size_t limit) {
  const std::string leases = keys.Leases(type);
  const std::string before_now = "(" + std::to_string(now_ms);
  auto replies = core.Pipeline({{"ZCOUNT", leases, "-inf", before_now},
                                {"ZRANGE", leases, "-inf", before_now, "BYSCORE", "LIMIT", "0",
                                 std::to_string(limit), "WITHSCORES"}});
  if (!replies.ok()) return replies.status();
  for (const Reply& r : *replies) {
    if (r.is_error()) return ReplyStatus(r);
  }
  ExpiredLeases out;
  out.total = (*replies)[0].AsInteger();
  const auto& flat = (*replies)[1].elements;
  for (std::size_t i = 0; i + 1 < flat.size(); i += 2) {
    out.leases.push_back({flat[i].AsString(), "", ScoreMs(flat[i + 1])});
  }
  for (std::size_t start = 0; start < out.leases.size(); start += kChunk) {
    std::size_t end = std::min(out.leases.size(), start + kChunk);
    Command hmget = {"HMGET", keys.Tasks()};
    for (std::size_t i = start; i < end; ++i) hmget.push_back(out.leases[i].id);
    auto records = core.Call(hmget);
    if (!records.ok()) return records.status();
    for (std::size_t i = start; i < end && i - start < records->elements.size(); ++i) {
      const Reply& r = records->elements[i - start];
      if (r.is_nil()) continue;
      auto record = ParseTaskRecord(r.str);
      if (record && record->state == "queued") {
        out.leases[i].sid = record->sid;
        out.sids.insert(record->sid);
      }
    }
  }
  return out;
}

}  // namespace baton::internal
