#include "inspect/queue_snapshot.h"

#include <algorithm>
#include <cmath>

#include "broker/keys.h"
#include "inspect/lease_scan.h"
#include "inspect/stream_id.h"
#include "inspect/task_record.h"

namespace baton::internal {

namespace {
constexpr std::size_t kChunk = 1000;
}  // namespace

StatusOr<ScheduledSplit> SplitScheduled(InspectorCore& core, const std::string& ns,
                                        const std::string& type, std::size_t scan_limit) {
  Keys keys(ns);
  ScheduledSplit split;
  auto total_reply = core.Call({"ZCARD", keys.Scheduled(type)});
  if (!total_reply.ok()) return total_reply.status();
  const std::int64_t total = total_reply->AsInteger();
  const std::int64_t scan = std::min<std::int64_t>(total, static_cast<std::int64_t>(scan_limit));
  std::int64_t scanned = 0;
  while (scanned < scan) {
    std::int64_t stop = std::min<std::int64_t>(scanned + kChunk, scan) - 1;
    auto ids =
        core.Call({"ZRANGE", keys.Scheduled(type), std::to_string(scanned), std::to_string(stop)});
    if (!ids.ok()) return ids.status();
    if (ids->elements.empty()) break;
    Command hmget = {"HMGET", keys.Tasks()};
    for (const Reply& id : ids->elements) hmget.push_back(id.AsString());
    auto records = core.Call(hmget);
    if (!records.ok()) return records.status();
    for (const Reply& r : records->elements) {
      auto record = r.is_nil() ? std::nullopt : ParseTaskRecord(r.str);
      if (record && record->state == "retry") {
        ++split.retrying;
      } else {
        ++split.delayed;  // "scheduled" (or a member whose record vanished meanwhile)
      }
    }
    scanned += static_cast<std::int64_t>(ids->elements.size());
  }
  if (scanned < total) {
    split.exact = false;
    double retry_share = scanned > 0 ? static_cast<double>(split.retrying) / scanned : 0.0;
    split.retrying = std::llround(retry_share * static_cast<double>(total));
    split.delayed = total - split.retrying;
  }
  return split;
}

StatusOr<QueueInfo> ReadQueue(InspectorCore& core, const std::string& ns, const std::string& type,
                              std::int64_t now_ms, const RateSample& rates,
                              StreamState* stream_out) {
  Keys keys(ns);
  const InspectorOptions& options = core.options();
  auto stream = ReadStreamState(core, keys.Stream(type), /*count_ready=*/true);
  if (!stream.ok()) return stream.status();
  auto dead = core.Call({"ZCARD", keys.Dead(type)});
  if (!dead.ok()) return dead.status();
  auto expired = ReadExpiredLeases(core, keys, type, *stream, now_ms, 0);
  if (!expired.ok()) return expired.status();
  auto split = SplitScheduled(core, ns, type, options.scheduled_scan_limit);
  if (!split.ok()) return split.status();

  QueueInfo q;
  q.ns = ns;
  q.type = type;
  q.stream_length = stream->length;
  q.ready = stream->groups.empty() ? stream->length : 0;
  for (const GroupInfo& g : stream->groups) {
    if (g.ready >= q.ready) {
      q.ready = g.ready;
      q.ready_exact = g.ready_exact;
    }
    q.in_flight += g.pending;
    q.consumers += static_cast<int>(g.consumers.size());
    q.live_consumers += g.live_consumers;
  }
  q.groups = stream->groups;
  q.delayed = split->delayed;
  q.retrying = split->retrying;
  q.scheduled_split_exact = split->exact;
  q.dead = dead->AsInteger();
  q.leased = q.in_flight;  // every delivered entry is leased to its consumer
  q.expired_leases = expired->total;
  if (!stream->first_entry_id.empty()) {
    q.oldest_age_ms = std::max<std::int64_t>(0, now_ms - StreamIdMs(stream->first_entry_id));
  }
  q.rates = rates.For(type);
  if (stream_out != nullptr) *stream_out = std::move(*stream);
  return q;
}

}  // namespace baton::internal
