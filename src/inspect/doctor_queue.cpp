// Inspector::DoctorQueue: the health of one (namespace, task type), as findings in plain words:
// no consumer group, skipped backlog, workers down, stuck leases, nothing promoting due tasks, a
// backlog that grows, dead letters.
#include <algorithm>
#include <set>

#include "baton/inspector.h"
#include "broker/keys.h"
#include "inspect/event_scan.h"
#include "inspect/inspector_core.h"
#include "inspect/lease_scan.h"
#include "inspect/queue_snapshot.h"
#include "inspect/stream_id.h"
#include "inspect/task_record.h"
#include "inspect/time_text.h"

namespace baton {

using internal::FormatDuration;
using internal::Keys;
using internal::Reply;

namespace {

Verdict Make(DoctorCode code, Severity severity, std::string message, nlohmann::json facts) {
  Verdict v;
  v.code = code;
  v.severity = severity;
  v.message = std::move(message);
  v.facts = std::move(facts);
  return v;
}

std::string Joined(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out.empty() ? "(none)" : out;
}

// Entries at or before the group's last-delivered-id that are not pending in it: the group will
// never deliver them. Looks at the first `limit` such entries.
StatusOr<std::int64_t> CountSkipped(internal::InspectorCore& core, const std::string& stream,
                                    const GroupInfo& group, std::size_t limit) {
  auto replies = core.Pipeline(
      {{"XRANGE", stream, "-", group.last_delivered_id, "COUNT", std::to_string(limit)},
       {"XPENDING", stream, group.name, "-", group.last_delivered_id, std::to_string(limit)}});
  if (!replies.ok()) return replies.status();
  for (const Reply& r : *replies) {
    if (r.is_error()) return internal::ReplyStatus(r);
  }
  const auto& entries = (*replies)[0].elements;
  const auto& pending = (*replies)[1].elements;
  std::set<std::string> held;
  for (const Reply& p : pending) held.insert(p.elements[0].AsString());
  // When the PEL walk was cut short, only entries up to its last id can be judged.
  std::string bound =
      pending.size() < limit ? group.last_delivered_id : pending.back().elements[0].AsString();
  std::int64_t skipped = 0;
  for (const Reply& e : entries) {
    std::string id = e.elements[0].AsString();
    if (internal::CompareStreamIds(id, bound) <= 0 && !held.count(id)) ++skipped;
  }
  return skipped;
}

// pending_stuck: tasks whose lease ended and that no reaper took back yet.
StatusOr<Verdict> ExpiredLeaseFinding(internal::InspectorCore& core, const Keys& keys,
                                      const std::string& type, const internal::StreamState& state,
                                      std::int64_t now) {
  auto expired = internal::ReadExpiredLeases(core, keys, type, state, now, 1);
  if (!expired.ok()) return expired.status();
  nlohmann::json facts = {{"stuck", expired->total}, {"stuck_exact", expired->exact}};
  std::string oldest;
  if (!expired->leases.empty()) {
    const internal::ExpiredLease& first = expired->leases.front();
    facts["oldest_task"] = first.id;
    facts["oldest_stream_id"] = first.sid;
    facts["oldest_expired_ms_ago"] = now - first.deadline_ms;
    facts["oldest_consumer"] = first.consumer;
    facts["oldest_group"] = first.group;
    oldest = "; the oldest, " +
             (first.id.empty() ? "stream entry " + first.sid + " (deleted from the stream)"
                               : "task " + first.id) +
             ", expired " + FormatDuration(now - first.deadline_ms) + " ago on consumer " +
             first.consumer + " (group " + first.group + ")";
  }
  return Make(DoctorCode::kPendingStuck, Severity::kProblem,
              (expired->exact ? "" : "at least ") + std::to_string(expired->total) +
                  " running tasks have a lease that expired and was not taken back" + oldest +
                  ". Their workers stopped heartbeating (stuck, dead or cut off from Redis); the "
                  "lease reaper (batond, or a worker with maintenance on) takes them back as "
                  "failed attempts. If this stays, no reaper is running.",
              facts);
}

}  // namespace

StatusOr<QueueDiagnosis> Inspector::DoctorQueue(const std::string& ns, const std::string& type) {
  if (Status s = internal::CheckNamespaceArg(ns); !s.ok()) return s;
  if (Status s = internal::CheckTypeArg(type); !s.ok()) return s;
  const InspectorOptions& options = core_->options();
  Keys keys(ns);
  const std::string stream = keys.Stream(type);
  auto now = core_->ServerTimeMs();
  if (!now.ok()) return now.status();

  QueueDiagnosis d;
  auto known = core_->Pipeline({{"SISMEMBER", keys.Types(), type},
                                {"EXISTS", stream, keys.Scheduled(type), keys.Dead(type)},
                                {"SMEMBERS", keys.Types()}});
  if (!known.ok()) return known.status();
  if ((*known)[0].AsInteger() == 0 && (*known)[1].AsInteger() == 0) {
    std::vector<std::string> types;
    for (const Reply& t : (*known)[2].elements) types.push_back(t.AsString());
    std::sort(types.begin(), types.end());
    d.queue.ns = ns;
    d.queue.type = type;
    d.findings.push_back(
        Make(DoctorCode::kNotFound, Severity::kProblem,
             "no task type " + type + " in namespace " + ns +
                 ": nothing was ever enqueued with it here. Check the type name (task types of "
                 "namespace " +
                 ns + ": " + Joined(types) + ") and the namespace.",
             {{"types", types}}));
    return d;
  }

  auto rates = internal::MeasureRates(*core_, keys.Events(), *now, options.event_scan_limit);
  if (!rates.ok()) return rates.status();
  internal::StreamState state;
  auto queue = internal::ReadQueue(*core_, ns, type, *now, *rates, &state);
  if (!queue.ok()) return queue.status();
  d.queue = std::move(*queue);
  const QueueInfo& q = d.queue;
  auto& out = d.findings;

  if (q.stream_length > 0 && q.groups.empty()) {
    out.push_back(Make(DoctorCode::kNoGroup, Severity::kProblem,
                       std::to_string(q.stream_length) + " entries wait in " + stream +
                           " but it has no consumer group: no worker ever subscribed to (" + ns +
                           ", " + type +
                           "). Check the namespace and task type your workers "
                           "register.",
                       {{"stream_length", q.stream_length}}));
  }
  for (const GroupInfo& g : q.groups) {
    auto skipped = CountSkipped(*core_, stream, g, options.entry_scan_limit);
    if (!skipped.ok()) return skipped.status();
    if (*skipped > 0) {
      out.push_back(Make(
          DoctorCode::kGroupAfterBacklog, Severity::kProblem,
          "group " + g.name + " skipped " + std::to_string(*skipped) +
              " entries: they sit before its last-delivered-id (" + g.last_delivered_id +
              ") and are not pending, so it will never deliver them (the group was created at "
              "\"$\" after they were enqueued, or moved with XGROUP SETID). Fix: `redis-cli "
              "XGROUP SETID " +
              stream + " " + g.name + " 0` or `baton rescue start --ns " + ns + " --type " + type +
              " --group " + g.name + "`.",
          {{"group", g.name}, {"skipped", *skipped}, {"last_delivered_id", g.last_delivered_id}}));
    }
    if (g.ready > 0 && g.live_consumers == 0) {
      out.push_back(
          Make(DoctorCode::kNoLiveConsumer, Severity::kProblem,
               std::to_string(g.ready) + " entries wait for group " + g.name + " but none of its " +
                   std::to_string(g.consumers.size()) + " consumers was seen in the last " +
                   FormatDuration(options.live_consumer_window.count()) +
                   ": the workers are down. Start them.",
               {{"group", g.name}, {"ready", g.ready}, {"consumers", g.consumers.size()}}));
    }
  }

  if (q.expired_leases > 0) {
    auto stuck = ExpiredLeaseFinding(*core_, keys, type, state, *now);
    if (!stuck.ok()) return stuck.status();
    out.push_back(std::move(*stuck));
  }

  auto overdue = core_->Call({"ZCOUNT", keys.Scheduled(type), "-inf",
                              std::to_string(*now - options.overdue_grace.count())});
  if (!overdue.ok()) return overdue.status();
  if (overdue->AsInteger() > 0) {
    out.push_back(Make(DoctorCode::kOverdue, Severity::kProblem,
                       std::to_string(overdue->AsInteger()) +
                           " scheduled tasks are past their due time and still not in the "
                           "stream: nothing promotes due tasks of (" +
                           ns + ", " + type + "). Start batond (or a worker with maintenance on).",
                       {{"overdue", overdue->AsInteger()}}));
  }

  // The backlog findings need a backlog: entries really waiting in the stream.
  if (q.stream_length > 0 && q.ready > 0 && q.live_consumers > 0) {
    const QueueRates& r = q.rates;
    std::string age = q.oldest_age_ms ? FormatDuration(*q.oldest_age_ms) : "unknown";
    nlohmann::json facts = {{"ready", q.ready},
                            {"oldest_age_ms", q.oldest_age_ms.value_or(0)},
                            {"queued_last_minute", r.queued},
                            {"started_last_minute", r.started},
                            {"done_last_minute", r.done}};
    if (r.queued > r.started) {
      out.push_back(Make(DoctorCode::kBacklogGrowing, Severity::kWarning,
                         "the backlog grows: " + std::to_string(r.queued) + " tasks arrived and " +
                             std::to_string(r.started) + " started in the last minute; " +
                             std::to_string(q.ready) + " wait, the oldest entry is " + age +
                             " old. The workers do not keep up: add workers (mind what they call "
                             "downstream).",
                         facts));
    } else {
      out.push_back(Make(DoctorCode::kQueuedBacklog, Severity::kInfo,
                         std::to_string(q.ready) + " tasks wait, the oldest entry is " + age +
                             " old; workers started " + std::to_string(r.started) +
                             " in the last minute and keep up with arrivals (" +
                             std::to_string(r.queued) + "): it drains.",
                         facts));
    }
  }

  if (q.dead > 0) {
    auto latest = core_->Call({"ZRANGE", keys.Dead(type), "-1", "-1"});
    if (!latest.ok()) return latest.status();
    std::string id = latest->elements.empty() ? "" : latest->elements[0].AsString();
    std::string why;
    if (!id.empty()) {
      auto newest = internal::ReadErrorHistories(*core_, keys.Errors(), {id}, /*newest_only=*/true);
      if (!newest.ok()) return newest.status();
      if (!newest->front().empty()) {
        why = ", because of \"" + newest->front().back().error + "\"";
      }
    }
    out.push_back(Make(DoctorCode::kDead, Severity::kWarning,
                       std::to_string(q.dead) +
                           " tasks are in the dead-letter queue (the latest: " + id + why +
                           "). See `baton dlq list --ns " + ns + " --type " + type +
                           "`, fix the cause, then replay them.",
                       {{"dead", q.dead}, {"latest", id}}));
  }

  if (out.empty()) {
    bool idle = q.stream_length == 0 && q.delayed == 0 && q.retrying == 0 && q.in_flight == 0;
    if (idle) {
      out.push_back(Make(DoctorCode::kIdle, Severity::kOk,
                         "nothing queued, running, scheduled or dead; " +
                             std::to_string(q.live_consumers) + " live consumers.",
                         {{"live_consumers", q.live_consumers}}));
    } else {
      out.push_back(Make(
          DoctorCode::kHealthy, Severity::kOk,
          std::to_string(q.ready) + " ready, " + std::to_string(q.in_flight) + " running, " +
              std::to_string(q.delayed + q.retrying) + " scheduled; " +
              std::to_string(q.live_consumers) + " live consumers; " +
              std::to_string(q.rates.done) + " done in the last minute.",
          {{"ready", q.ready}, {"in_flight", q.in_flight}, {"live_consumers", q.live_consumers}}));
    }
  }
  std::stable_sort(out.begin(), out.end(), [](const Verdict& a, const Verdict& b) {
    return static_cast<int>(a.severity) > static_cast<int>(b.severity);
  });
  return d;
}

}  // namespace baton
