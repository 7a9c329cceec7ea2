// Inspector::Doctor: why a task has not run, in plain words. It walks the troubleshooting
// checklist "task submitted but never ran" in order: is there such a task (here)? did it finish?
// is it waiting in the delayed set (delay_seconds left at N)? retrying or dead? does the stream
// have a consumer group? did the group start after the task and skip it? is it held by a worker,
// and is its lease (its delivery or last heartbeat + its consumer's lease length) still running?
// are the workers alive? is it simply behind a backlog?
#include <algorithm>
#include <charconv>

#include "baton/inspector.h"
#include "broker/keys.h"
#include "inspect/event_scan.h"
#include "inspect/inspector_core.h"
#include "inspect/stream_id.h"
#include "inspect/stream_state.h"
#include "inspect/task_lookup.h"
#include "inspect/time_text.h"

namespace baton {

using internal::Command;
using internal::FormatDuration;
using internal::FormatTime;
using internal::Keys;
using internal::Reply;

namespace {

constexpr std::size_t kNamespacesSearched = 200;

Verdict Make(DoctorCode code, Severity severity, std::string message, nlohmann::json facts) {
  Verdict v;
  v.code = code;
  v.severity = severity;
  v.message = std::move(message);
  v.facts = std::move(facts);
  return v;
}

std::string When(std::int64_t at_ms, std::int64_t now_ms) {
  std::string text = FormatTime(at_ms);
  if (at_ms >= now_ms) return text + " (in " + FormatDuration(at_ms - now_ms) + ")";
  return text + " (" + FormatDuration(now_ms - at_ms) + " ago)";
}

int ToInt(const std::string& text, int fallback) {
  int n = fallback;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
  return ec == std::errc() && end == text.data() + text.size() ? n : fallback;
}

std::string Plural(std::int64_t n, const std::string& word, const std::string& plural = "") {
  return std::to_string(n) + " " + (n == 1 ? word : plural.empty() ? word + "s" : plural);
}

std::string LastError(const TaskInfo& info) {
  if (info.errors.empty()) return "(no error recorded)";
  const TaskError& e = info.errors.back();
  return "\"" + e.error + "\" (kind " + e.kind + ")";
}

// Namespaces other than `ns` where task `id` is live or recently finished.
StatusOr<std::vector<std::string>> FindElsewhere(internal::InspectorCore& core,
                                                 const std::string& ns, const std::string& id) {
  auto namespaces = internal::KnownNamespaces(core);
  if (!namespaces.ok()) return namespaces.status();
  std::vector<std::string> others;
  for (const std::string& other : *namespaces) {
    if (other != ns && others.size() < kNamespacesSearched) others.push_back(other);
  }
  std::vector<Command> commands;
  for (const auto& other : others) {
    Keys keys(other);
    commands.push_back({"HEXISTS", keys.Tasks(), id});
    commands.push_back({"ZSCORE", keys.Done(), id});
  }
  auto replies = core.Pipeline(commands);
  if (!replies.ok()) return replies.status();
  std::vector<std::string> found;
  for (std::size_t i = 0; i < others.size(); ++i) {
    if ((*replies)[2 * i].AsInteger() > 0 || (*replies)[2 * i + 1].type == Reply::Type::kString) {
      found.push_back(others[i]);
    }
  }
  return found;
}

StatusOr<Verdict> NotFound(internal::InspectorCore& core, const std::string& ns,
                           const std::string& id) {
  auto elsewhere = FindElsewhere(core, ns, id);
  if (!elsewhere.ok()) return elsewhere.status();
  std::string message = "no task " + id + " in namespace " + ns +
                        ": no live record and no final state. Either it was never enqueued here "
                        "(wrong namespace? wrong Redis?), or it finished longer ago than the "
                        "namespace's done_retention_s (24 h by default; `baton config get " +
                        ns + "`) and its final state was dropped.";
  nlohmann::json facts = {{"namespace", ns}, {"found_in_namespaces", *elsewhere}};
  if (!elsewhere->empty()) {
    message += " A task with this id exists in namespace " + elsewhere->front() +
               ": did you mean --ns " + elsewhere->front() + "?";
  }
  return Make(DoctorCode::kNotFound, Severity::kProblem, message, facts);
}

Verdict Finished(const TaskInfo& info) {
  std::int64_t at = info.finished_ms.value_or(0);
  nlohmann::json facts = {{"finished_ms", at}, {"attempts", info.attempts}};
  if (info.state == TaskState::kCancelled) {
    return Make(DoctorCode::kCancelled, Severity::kInfo,
                "was cancelled at " + When(at, info.now_ms) + " before it ran.", facts);
  }
  if (info.state == TaskState::kDeleted) {
    return Make(DoctorCode::kDeleted, Severity::kInfo,
                "was deleted from the dead-letter queue at " + When(at, info.now_ms) + " after " +
                    Plural(info.attempts, "attempt") + ".",
                facts);
  }
  if (info.state == TaskState::kDropped) {
    return Make(DoctorCode::kDropped, Severity::kWarning,
                "died after " + Plural(info.attempts, "attempt") +
                    " and was dropped from the dead-letter queue at " + When(at, info.now_ms) +
                    " by its caps (dlq_max per type, dlq_retention_s): it cannot be replayed. "
                    "Enqueue it again if it still matters; raise the caps with `baton config set " +
                    info.ns + " dlq_max N`.",
                facts);
  }
  facts["worker"] = info.finished_by;
  std::string how;
  if (info.attempts > 0) {
    how = " after " + Plural(info.attempts, "attempt") +
          (info.finished_by.empty() ? "" : " on worker " + info.finished_by);
  } else {
    how = " (its attempts and worker are no longer in the events stream)";
  }
  return Make(DoctorCode::kDone, Severity::kOk,
              "finished (done) at " + When(at, info.now_ms) + how + ".", facts);
}

Verdict Waiting(const TaskInfo& info, std::int64_t grace_ms) {
  const std::int64_t due = info.due_ms.value_or(0);
  const std::int64_t now = info.now_ms;
  const bool retry = info.state == TaskState::kRetry;
  nlohmann::json facts = {{"due_ms", due}, {"in_ms", due - now}, {"attempts", info.attempts}};
  if (due + grace_ms < now) {
    return Make(DoctorCode::kOverdue, Severity::kProblem,
                std::string(retry ? "its retry" : "it") + " was due at " + When(due, now) +
                    " but it is still in the scheduled set: nothing promotes due tasks of (" +
                    info.ns + ", " + info.type +
                    "). Start batond (or a worker with maintenance on).",
                facts);
  }
  if (retry) {
    int max_retry = info.body ? ToInt(info.body->max_retry, -1) : -1;
    facts["max_retry"] = max_retry;
    facts["last_error"] = info.errors.empty() ? "" : info.errors.back().error;
    std::string budget =
        max_retry >= 0 ? " (it may run 1 + max_retry = " + std::to_string(1 + max_retry) + " times)"
                       : "";
    return Make(DoctorCode::kRetrying, Severity::kWarning,
                "failed " + Plural(info.attempts, "time") + budget + "; next attempt at " +
                    When(due, now) + ". Last error: " + LastError(info) + ".",
                facts);
  }
  int delay = info.body ? ToInt(info.body->delay_seconds, 0) : 0;
  facts["delay_seconds"] = delay;
  std::string why = delay > 0 ? " It was enqueued with delay_seconds=" + std::to_string(delay) +
                                    ": did you mean 0?"
                              : " It was enqueued to run at that time (run_at / --at).";
  return Make(DoctorCode::kScheduled, Severity::kInfo,
              "waits in the delayed set: due at " + When(due, now) + "." + why, facts);
}

Verdict Dead(const TaskInfo& info) {
  std::int64_t since = info.dead_since_ms.value_or(0);
  nlohmann::json facts = {{"dead_since_ms", since},
                          {"attempts", info.attempts},
                          {"last_error", info.errors.empty() ? "" : info.errors.back().error},
                          {"kind", info.errors.empty() ? "" : info.errors.back().kind}};
  return Make(DoctorCode::kDead, Severity::kProblem,
              "ran " + Plural(info.attempts, "time") + " and is in the dead-letter queue since " +
                  When(since, info.now_ms) + " because of " + LastError(info) +
                  ". Fix the cause, then run `baton dlq replay " + info.id + " --ns " + info.ns +
                  "` (add --payload to change the payload).",
              facts);
}

// The task is delivered: who holds its entry (XPENDING) and when that lease ends.
// nullopt when no group holds the entry.
std::optional<Verdict> Held(const internal::TaskLookup& lookup) {
  const TaskInfo& info = lookup.info;
  if (info.leases.empty()) return std::nullopt;
  const std::int64_t now = info.now_ms;
  // The lease that ends first is the one a reaper acts on.
  const TaskLease& holder = *std::min_element(info.leases.begin(), info.leases.end(),
                                              [](const TaskLease& a, const TaskLease& b) {
                                                return a.lease_deadline_ms < b.lease_deadline_ms;
                                              });
  const std::int64_t deadline = holder.lease_deadline_ms;
  nlohmann::json facts = {{"stream_id", info.stream_id},     {"group", holder.group},
                          {"consumer", holder.consumer},     {"idle_ms", holder.idle_ms},
                          {"deliveries", holder.deliveries}, {"lease_deadline_ms", deadline},
                          {"lease_left_ms", deadline - now}};
  if (const GroupInfo* g = lookup.stream.FindGroup(holder.group)) {
    for (const auto& c : g->consumers) {
      if (c.name == holder.consumer) facts["consumer_idle_ms"] = c.idle_ms;
    }
  }
  const std::string who = "consumer " + holder.consumer + " (group " + holder.group + ")";
  if (deadline <= now) {
    return Make(DoctorCode::kPendingStuck, Severity::kProblem,
                "held by " + who + ", delivered or renewed " + FormatDuration(holder.idle_ms) +
                    " ago, but its lease expired " + FormatDuration(now - deadline) +
                    " ago: that worker stopped heartbeating (stuck, dead, or cut off from "
                    "Redis). The lease reaper (batond, or a worker with maintenance on) takes it "
                    "back as a failed attempt; if it stays, no reaper is running.",
                facts);
  }
  return Make(DoctorCode::kActive, Severity::kOk,
              "running on " + who + " (delivery #" + std::to_string(holder.deliveries) +
                  ", delivered or renewed " + FormatDuration(holder.idle_ms) +
                  " ago); its lease ends in " + FormatDuration(deadline - now) +
                  " unless the worker's heartbeat renews it.",
              facts);
}

StatusOr<Verdict> Queued(internal::InspectorCore& core, const internal::TaskLookup& lookup) {
  const TaskInfo& info = lookup.info;
  const InspectorOptions& options = core.options();
  const std::int64_t now = info.now_ms;
  const std::string& sid = info.stream_id;
  const std::int64_t queued_for = now - internal::StreamIdMs(sid);
  Keys keys(info.ns);
  const std::string stream = keys.Stream(info.type);
  nlohmann::json facts = {{"stream_id", sid}, {"queued_ms", queued_for}};

  if (lookup.entry_missing) {
    return Make(DoctorCode::kLostEntry, Severity::kProblem,
                "its record says it is queued at stream entry " + sid + " of " + stream +
                    ", but the stream has no such entry (deleted by hand, or trimmed with "
                    "XTRIM/MAXLEN?). Nothing will run it: cancel it (`baton task cancel " +
                    info.id + " --ns " + info.ns + "`) and enqueue it again.",
                facts);
  }
  const auto& groups = lookup.stream.groups;
  if (groups.empty()) {
    auto types = core.Call({"SMEMBERS", keys.Types()});
    if (!types.ok()) return types.status();
    std::vector<std::string> names;
    for (const Reply& t : types->elements) names.push_back(t.AsString());
    std::sort(names.begin(), names.end());
    std::string list;
    for (const auto& n : names) list += (list.empty() ? "" : ", ") + n;
    facts["types"] = names;
    return Make(DoctorCode::kNoGroup, Severity::kProblem,
                "waits in " + stream + " (entry " + sid + ", queued " + FormatDuration(queued_for) +
                    " ago) but the stream has no consumer group: no worker ever subscribed to (" +
                    info.ns + ", " + info.type +
                    "). Check the namespace and task type your workers register (task types of "
                    "namespace " +
                    info.ns + ": " + list + ").",
                facts);
  }

  if (std::optional<Verdict> held = Held(lookup)) return *held;

  // Not held by anyone: which groups have yet to deliver it?
  std::vector<const GroupInfo*> waiting;
  for (const auto& g : groups) {
    if (internal::CompareStreamIds(g.last_delivered_id, sid) < 0) waiting.push_back(&g);
  }
  if (waiting.empty()) {
    const GroupInfo& g = groups.front();
    facts.update({{"group", g.name}, {"last_delivered_id", g.last_delivered_id}});
    return Make(DoctorCode::kGroupAfterBacklog, Severity::kProblem,
                "group " + g.name + "'s last-delivered-id (" + g.last_delivered_id +
                    ") is past this task's entry " + sid +
                    ", and the task is not pending: the group was created at \"$\" (latest) "
                    "after the task was enqueued, or moved with XGROUP SETID, and skipped the "
                    "backlog. Fix: `redis-cli XGROUP SETID " +
                    stream + " " + g.name +
                    " 0` (every entry still in the stream is delivered again) or `baton rescue "
                    "start --ns " +
                    info.ns + " --type " + info.type + " --group " + g.name + "`.",
                facts);
  }
  const GroupInfo* live = nullptr;
  for (const GroupInfo* g : waiting) {
    if (g->live_consumers > 0) {
      live = g;
      break;
    }
  }
  if (live == nullptr) {
    const GroupInfo& g = *waiting.front();
    std::string seen = "it has no consumers at all";
    if (!g.consumers.empty()) {
      const ConsumerInfo& c = *std::min_element(
          g.consumers.begin(), g.consumers.end(),
          [](const ConsumerInfo& a, const ConsumerInfo& b) { return a.idle_ms < b.idle_ms; });
      seen = "the most recent, " + c.name + ", was seen " + FormatDuration(c.idle_ms) + " ago";
      facts["last_seen_consumer"] = c.name;
      facts["last_seen_idle_ms"] = c.idle_ms;
    }
    facts.update({{"group", g.name},
                  {"consumers", g.consumers.size()},
                  {"live_window_ms", options.live_consumer_window.count()}});
    return Make(DoctorCode::kNoLiveConsumer, Severity::kProblem,
                "queued " + FormatDuration(queued_for) + " ago (entry " + sid + "); group " +
                    g.name + " exists but no consumer was seen in the last " +
                    FormatDuration(options.live_consumer_window.count()) + " (" + seen +
                    "): the workers of (" + info.ns + ", " + info.type + ") are down. Start them.",
                facts);
  }

  auto ahead = internal::CountEntries(core, stream, "(" + live->last_delivered_id, "(" + sid,
                                      options.entry_scan_limit);
  if (!ahead.ok()) return ahead.status();
  auto rates = internal::MeasureRates(core, keys.Events(), now, options.event_scan_limit);
  if (!rates.ok()) return rates.status();
  QueueRates r = rates->For(info.type);
  facts.update({{"group", live->name},
                {"ahead", ahead->count},
                {"ahead_exact", ahead->exact},
                {"in_flight", live->pending},
                {"live_consumers", live->live_consumers},
                {"done_last_minute", r.done}});
  const std::string consumers =
      "group " + live->name + " has " + Plural(live->live_consumers, "live consumer");
  if (ahead->count == 0) {
    // Nothing to drain: not a backlog. Either every consumer slot is busy (the task goes to the
    // first one freed) or the consumers hold nothing and have simply not fetched it yet.
    if (live->pending > 0) {
      return Make(DoctorCode::kQueuedBacklog, Severity::kInfo,
                  "queued " + FormatDuration(queued_for) + " ago and next in line (nothing ahead " +
                      "of it); " + consumers + ", busy with " + Plural(live->pending, "task") +
                      " in flight: it goes to the first one that takes more work.",
                  facts);
    }
    // A live consumer that had polled since the task arrived would hold it: the live ones last
    // polled before it came and are due to poll again (a worker blocks in its fetch, or polls
    // when a handler slot frees).
    return Make(DoctorCode::kQueuedBacklog, Severity::kInfo,
                "queued " + FormatDuration(queued_for) +
                    " ago with nothing ahead of it and nothing in flight; " + consumers +
                    (live->live_consumers == 1
                         ? " that has not fetched it yet: it looks alive but idle and should "
                           "take it at its next fetch."
                         : " that have not fetched it yet: they look alive but idle and one "
                           "should take it at its next fetch.") +
                    " If this lasts, check the workers' logs.",
                facts);
  }
  std::string count = (ahead->exact ? "" : "at least ") + Plural(ahead->count, "entry", "entries");
  std::string eta;
  if (r.done > 0) {
    eta = " At the last minute's pace (" + std::to_string(r.done) +
          " done/min) its turn comes in "
          "about " +
          FormatDuration(ahead->count * 60000 / r.done) + ".";
  }
  return Make(DoctorCode::kQueuedBacklog, Severity::kInfo,
              "queued " + FormatDuration(queued_for) + " ago behind " + count + "; " + consumers +
                  ": a backlog, not a fault." + eta + " Add workers to drain it faster.",
              facts);
}

}  // namespace

StatusOr<Verdict> Inspector::Doctor(const std::string& ns, const std::string& id) {
  auto lookup = internal::LookupTask(*core_, ns, id, /*with_events=*/false);
  if (!lookup.ok()) {
    if (lookup.status().code() != StatusCode::kNotFound) return lookup.status();
    return NotFound(*core_, ns, id);
  }
  const TaskInfo& info = lookup->info;
  StatusOr<Verdict> verdict = Status::Internal("unreachable");
  switch (info.state) {
    case TaskState::kDone:
    case TaskState::kCancelled:
    case TaskState::kDeleted:
    case TaskState::kDropped:
      verdict = Finished(info);
      break;
    case TaskState::kScheduled:
    case TaskState::kRetry:
      verdict = Waiting(info, core_->options().overdue_grace.count());
      break;
    case TaskState::kDead:
      verdict = Dead(info);
      break;
    case TaskState::kQueued:
    case TaskState::kActive:
      verdict = Queued(*core_, *lookup);
      break;
  }
  if (verdict.ok()) {
    verdict->facts["task_id"] = info.id;
    verdict->facts["namespace"] = info.ns;
    verdict->facts["type"] = info.type;
    verdict->facts["state"] = TaskStateName(info.state);
  }
  return verdict;
}

}  // namespace baton
