// Inspector: connection, namespaces, queues, pending entries and task lookup. The dead-letter
// queue, the doctor and the rescue live in their own files.
#include "baton/inspector.h"

#include <algorithm>

#include "broker/keys.h"
#include "broker/partitions.h"
#include "core/task_rules.h"
#include "inspect/event_scan.h"
#include "inspect/inspector_core.h"
#include "inspect/lease_scan.h"
#include "inspect/queue_snapshot.h"
#include "inspect/stream_state.h"
#include "inspect/task_lookup.h"
#include "inspect/task_record.h"

namespace baton {

using internal::Command;
using internal::Keys;
using internal::Reply;

namespace {

constexpr std::size_t kLongestIdleShown = 10;
constexpr std::size_t kPelChunk = 1000;

// The task ids of pending entries (from their stream entries; "" when an entry is gone).
Status FillTaskIds(internal::InspectorCore& core, const std::string& stream,
                   std::vector<PendingEntry>& entries) {
  std::vector<Command> ranges;
  for (const auto& e : entries) ranges.push_back({"XRANGE", stream, e.stream_id, e.stream_id});
  auto bodies = core.Pipeline(ranges);
  if (!bodies.ok()) return bodies.status();
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const Reply& r = (*bodies)[i];
    if (r.is_array() && !r.elements.empty() && r.elements[0].elements.size() >= 2) {
      entries[i].task_id = internal::EntryTaskId(r.elements[0].elements[1]);
    }
  }
  return Status::Ok();
}

StatusOr<std::vector<std::string>> SortedMembers(internal::InspectorCore& core,
                                                 const std::string& key) {
  auto reply = core.Call({"SMEMBERS", key});
  if (!reply.ok()) return reply.status();
  std::vector<std::string> members;
  for (const Reply& m : reply->elements) members.push_back(m.AsString());
  std::sort(members.begin(), members.end());
  return members;
}

}  // namespace

Inspector::Inspector(std::unique_ptr<internal::InspectorCore> core) : core_(std::move(core)) {}
Inspector::~Inspector() = default;

StatusOr<std::unique_ptr<Inspector>> Inspector::Connect(const InspectorOptions& options) {
  auto core = internal::InspectorCore::Open(options);
  if (!core.ok()) return core.status();
  return std::unique_ptr<Inspector>(new Inspector(std::move(*core)));
}

StatusOr<std::vector<std::string>> Inspector::ListNamespaces() {
  return internal::KnownNamespaces(*core_);
}

StatusOr<std::vector<std::string>> Inspector::ListPartitions(const std::string& ns) {
  if (Status s = internal::task_rules::CheckName("namespace", ns); !s.ok()) return s;
  auto count = internal::PartitionCount(*core_, ns);
  if (!count.ok()) return count.status();
  std::vector<std::string> partitions;
  for (int p = 0; p < *count; ++p) {
    partitions.push_back(internal::PartitionNamespace(ns, p));
  }
  return partitions;
}

StatusOr<std::vector<QueueInfo>> Inspector::ListQueues(const std::string& ns) {
  if (Status s = internal::CheckNamespaceArg(ns); !s.ok()) return s;
  Keys keys(ns);
  auto types = SortedMembers(*core_, keys.Types());
  if (!types.ok()) return types.status();
  auto now = core_->ServerTimeMs();
  if (!now.ok()) return now.status();
  auto rates =
      internal::MeasureRates(*core_, keys.Events(), *now, core_->options().event_scan_limit);
  if (!rates.ok()) return rates.status();
  std::vector<QueueInfo> queues;
  for (const std::string& type : *types) {
    auto q = internal::ReadQueue(*core_, ns, type, *now, *rates);
    if (!q.ok()) return q.status();
    queues.push_back(std::move(*q));
  }
  return queues;
}

StatusOr<QueueInfo> Inspector::GetQueue(const std::string& ns, const std::string& type) {
  if (Status s = internal::CheckNamespaceArg(ns); !s.ok()) return s;
  if (Status s = internal::CheckTypeArg(type); !s.ok()) return s;
  Keys keys(ns);
  auto exists = core_->Call({"EXISTS", keys.Stream(type), keys.Scheduled(type), keys.Dead(type)});
  if (!exists.ok()) return exists.status();
  auto known = core_->Call({"SISMEMBER", keys.Types(), type});
  if (!known.ok()) return known.status();
  if (exists->AsInteger() == 0 && known->AsInteger() == 0) {
    return Status::NotFound("no task type " + type + " in namespace " + ns +
                            " (no stream, no scheduled or dead tasks): check --ns and --type");
  }
  auto now = core_->ServerTimeMs();
  if (!now.ok()) return now.status();
  auto rates =
      internal::MeasureRates(*core_, keys.Events(), *now, core_->options().event_scan_limit);
  if (!rates.ok()) return rates.status();
  return internal::ReadQueue(*core_, ns, type, *now, *rates);
}

StatusOr<PendingReport> Inspector::Pending(const std::string& ns, const std::string& type) {
  if (Status s = internal::CheckNamespaceArg(ns); !s.ok()) return s;
  if (Status s = internal::CheckTypeArg(type); !s.ok()) return s;
  Keys keys(ns);
  const std::string stream = keys.Stream(type);
  const InspectorOptions& options = core_->options();
  auto state = internal::ReadStreamState(*core_, stream, /*count_ready=*/false);
  if (!state.ok()) return state.status();
  auto now = core_->ServerTimeMs();
  if (!now.ok()) return now.status();
  auto expired = internal::ReadExpiredLeases(*core_, keys, type, *state, *now, 0);
  if (!expired.ok()) return expired.status();
  const internal::LeaseLengths& lengths = expired->lengths;  // read when something is pending

  PendingReport report;
  report.ns = ns;
  report.type = type;
  report.now_ms = *now;
  report.expired_leases = expired->total;
  for (const GroupInfo& g : state->groups) {
    PendingGroup group;
    group.group = g.name;
    group.count = g.pending;
    std::map<std::string, PendingConsumer> consumers;
    for (const ConsumerInfo& c : g.consumers) {
      if (c.pending > 0) consumers[c.name] = {c.name, 0, 0, c.idle_ms, 0};
    }
    // Walk the PEL (extended XPENDING gives each entry's idle time and delivery count).
    std::vector<PendingEntry> entries;
    std::string start = "-";
    std::size_t read = 0;
    while (read < options.entry_scan_limit) {
      std::size_t count = std::min(kPelChunk, options.entry_scan_limit - read);
      auto reply = core_->Call({"XPENDING", stream, g.name, start, "+", std::to_string(count)});
      if (!reply.ok()) return reply.status();
      for (const Reply& p : reply->elements) {
        if (p.elements.size() < 4) continue;
        PendingEntry e{p.elements[0].AsString(),  "",
                       p.elements[1].AsString(),  p.elements[2].AsInteger(),
                       p.elements[3].AsInteger(), std::nullopt};
        // Every pending entry is leased to its consumer (see lease_scan.h).
        e.lease_deadline_ms = lengths.EndMs(e.consumer, e.idle_ms, *now);
        PendingConsumer& pc = consumers[e.consumer];
        pc.name = e.consumer;
        ++pc.count;
        pc.max_idle_ms = std::max(pc.max_idle_ms, e.idle_ms);
        if (*e.lease_deadline_ms <= *now) ++pc.expired;
        entries.push_back(std::move(e));
      }
      read += reply->elements.size();
      if (reply->elements.size() < count) break;
      start = "(" + reply->elements.back().elements[0].AsString();
    }
    group.complete = static_cast<std::int64_t>(read) >= g.pending;
    if (!group.complete) {
      // Counts per consumer from XINFO CONSUMERS are exact even when the walk was cut short.
      for (const ConsumerInfo& c : g.consumers) {
        if (c.pending > 0) consumers[c.name].count = c.pending;
      }
    }
    std::sort(entries.begin(), entries.end(),
              [](const PendingEntry& a, const PendingEntry& b) { return a.idle_ms > b.idle_ms; });
    if (entries.size() > kLongestIdleShown) entries.resize(kLongestIdleShown);
    if (Status s = FillTaskIds(*core_, stream, entries); !s.ok()) return s;
    group.longest_idle = std::move(entries);
    for (auto& [name, c] : consumers) group.consumers.push_back(std::move(c));
    report.groups.push_back(std::move(group));
  }
  return report;
}

StatusOr<TaskInfo> Inspector::GetTask(const std::string& ns, const std::string& id) {
  auto lookup = internal::LookupTask(*core_, ns, id, /*with_events=*/true);
  if (!lookup.ok()) return lookup.status();
  return std::move(lookup->info);
}

}  // namespace baton
