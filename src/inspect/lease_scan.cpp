#include "inspect/lease_scan.h"

#include <algorithm>

#include "inspect/task_record.h"

namespace baton::internal {

namespace {

constexpr std::size_t kChunk = 1000;
// The functions' range of a lease length (CONFIG_RANGES.lease_ms in functions/00-header.lua).
constexpr std::int64_t kMinLeaseMs = 1000;
constexpr std::int64_t kMaxLeaseMs = 86400000;

// A stored lease length when it is a decimal integer in the functions' range.
bool ValidLease(const Reply& r, std::int64_t* out) {
  const std::string text = r.AsString();
  if (text.empty() || text.size() > 15 ||
      !std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return false;
  }
  const std::int64_t n = std::stoll(text);
  if (n < kMinLeaseMs || n > kMaxLeaseMs) return false;
  *out = n;
  return true;
}

}  // namespace

std::int64_t LeaseLengths::For(const std::string& consumer) const {
  auto it = by_consumer.find(consumer);
  return it == by_consumer.end() ? default_ms : it->second;
}

LeaseLengths ParseLeaseLengths(const Reply& hgetall, const Reply& default_lease) {
  LeaseLengths out;
  if (!ValidLease(default_lease, &out.default_ms)) out.default_ms = protocol::kDefaultLeaseMs;
  for (std::size_t i = 0; i + 1 < hgetall.elements.size(); i += 2) {
    std::int64_t n = 0;
    if (ValidLease(hgetall.elements[i + 1], &n))
      out.by_consumer[hgetall.elements[i].AsString()] = n;
  }
  return out;
}

StatusOr<LeaseLengths> ReadLeaseLengths(InspectorCore& core, const Keys& keys,
                                        const std::string& type) {
  auto replies =
      core.Pipeline({{"HGETALL", keys.Leases(type)}, {"HGET", keys.Config(), "lease_ms"}});
  if (!replies.ok()) return replies.status();
  for (const Reply& r : *replies) {
    if (r.is_error()) return ReplyStatus(r);
  }
  return ParseLeaseLengths((*replies)[0], (*replies)[1]);
}

StatusOr<ExpiredLeases> ReadExpiredLeases(InspectorCore& core, const Keys& keys,
                                          const std::string& type, const StreamState& state,
                                          std::int64_t now_ms, std::size_t limit) {
  ExpiredLeases out;
  bool any_pending = false;
  for (const GroupInfo& g : state.groups) any_pending = any_pending || g.pending > 0;
  if (!any_pending) return out;
  auto lengths = ReadLeaseLengths(core, keys, type);
  if (!lengths.ok()) return lengths.status();
  out.lengths = *lengths;

  const std::string stream = keys.Stream(type);
  std::size_t budget = core.options().entry_scan_limit;
  std::vector<ExpiredLease> found;
  for (const GroupInfo& g : state.groups) {
    for (const ConsumerInfo& c : g.consumers) {
      if (c.pending <= 0) continue;
      const std::int64_t lease = lengths->For(c.name);
      std::string start = "-";
      while (true) {
        if (budget == 0) {
          out.exact = false;
          break;
        }
        const std::size_t count = std::min(kChunk, budget);
        auto reply = core.Call({"XPENDING", stream, g.name, "IDLE", std::to_string(lease), start,
                                "+", std::to_string(count), c.name});
        if (!reply.ok()) return reply.status();
        for (const Reply& p : reply->elements) {
          if (p.elements.size() < 4) continue;
          found.push_back({"", p.elements[0].AsString(), g.name, c.name,
                           lengths->EndMs(c.name, p.elements[2].AsInteger(), now_ms)});
        }
        budget -= reply->elements.size();
        if (reply->elements.size() < count) break;
        start = "(" + reply->elements.back().elements[0].AsString();
      }
    }
  }
  out.total = static_cast<std::int64_t>(found.size());
  std::sort(found.begin(), found.end(), [](const ExpiredLease& a, const ExpiredLease& b) {
    return a.deadline_ms != b.deadline_ms ? a.deadline_ms < b.deadline_ms : a.sid < b.sid;
  });
  if (found.size() > limit) found.resize(limit);
  // The task ids, from the entries themselves (an entry deleted by hand has none).
  for (std::size_t start = 0; start < found.size(); start += kChunk) {
    const std::size_t end = std::min(found.size(), start + kChunk);
    std::vector<Command> ranges;
    for (std::size_t i = start; i < end; ++i) {
      ranges.push_back({"XRANGE", stream, found[i].sid, found[i].sid});
    }
    auto entries = core.Pipeline(ranges);
    if (!entries.ok()) return entries.status();
    for (std::size_t i = start; i < end; ++i) {
      const Reply& r = (*entries)[i - start];
      if (r.is_array() && !r.elements.empty() && r.elements[0].elements.size() >= 2) {
        found[i].id = EntryTaskId(r.elements[0].elements[1]);
      }
    }
  }
  out.leases = std::move(found);
  return out;
}

}  // namespace baton::internal
