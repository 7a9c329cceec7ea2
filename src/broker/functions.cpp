#include "broker/functions.h"

#include <charconv>

namespace baton::internal::fn {
namespace {

using protocol::KeyKind;

std::string KeyOf(const Keys& keys, std::string_view type, KeyKind kind) {
  switch (kind) {
    case KeyKind::kStream:
      return keys.Stream(type);
    case KeyKind::kScheduled:
      return keys.Scheduled(type);
    case KeyKind::kLeases:
      return keys.Leases(type);
    case KeyKind::kDead:
      return keys.Dead(type);
    case KeyKind::kRescue:
      return keys.Rescue(type);
    case KeyKind::kTasks:
      return keys.Tasks();
    case KeyKind::kBodies:
      return keys.Bodies();
    case KeyKind::kErrors:
      return keys.Errors();
    case KeyKind::kEvents:
      return keys.Events();
    case KeyKind::kTypes:
      return keys.Types();
    case KeyKind::kDone:
      return keys.Done();
    case KeyKind::kEnded:
      return keys.Ended();
    case KeyKind::kConfig:
      return keys.Config();
    case KeyKind::kUnique:
      return keys.Unique("");
    case KeyKind::kCronState:
      return std::string(Keys::kCronState);
  }
  return {};
}

// "FCALL name numkeys KEYS..." for the kinds of `spec`, with room for `extra` more values.
template <std::size_t N>
Command NewCall(std::string_view name, const std::array<KeyKind, N>& spec, std::string_view ns,
                std::string_view type, std::size_t extra_keys, std::size_t extra) {
  const Keys keys(ns);
  Command argv;
  argv.reserve(3 + N + extra_keys + extra);
  argv.emplace_back("FCALL");
  argv.emplace_back(name);
  argv.push_back(std::to_string(N + extra_keys));
  for (KeyKind kind : spec) argv.push_back(KeyOf(keys, type, kind));
  return argv;
}

std::string Text(std::int64_t v) { return std::to_string(v); }

std::string Text(double v) {
  char buf[32];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::fixed, 6);
  return ec == std::errc() ? std::string(buf, end) : std::string("0");
}

void AppendHeld(Command& argv, std::span<const HeldTask> tasks) {
  for (const HeldTask& t : tasks) {
    argv.push_back(t.id);
    argv.push_back(t.sid);
  }
}

}  // namespace

Command Version() { return {"FCALL_RO", std::string(protocol::kVersionFunction), "0"}; }

Command Configure(std::string_view ns,
                  std::span<const std::pair<std::string, std::string>> settings) {
  Command argv = NewCall(protocol::kConfigureFunction, protocol::kConfigureKeys, ns, "", 0,
                         2 * settings.size());
  for (const auto& [name, value] : settings) {
    argv.push_back(name);
    argv.push_back(value);
  }
  return argv;
}

Command Enqueue(std::string_view ns, std::string_view type, std::size_t n,
                std::span<const std::string> unique_keys, std::vector<std::string> per_task) {
  Command argv = NewCall(protocol::kEnqueueFunction, protocol::kEnqueueKeys, ns, type,
                         unique_keys.size(), 1 + per_task.size());
  const Keys keys(ns);
  for (const std::string& key : unique_keys) argv.push_back(keys.Unique(key));
  argv.push_back(std::to_string(n));
  for (std::string& value : per_task) argv.push_back(std::move(value));
  return argv;
}

Command Dequeue(std::string_view ns, std::string_view type, std::string_view group,
                std::string_view consumer, std::size_t count, std::int64_t lease_ms) {
  Command argv = NewCall(protocol::kDequeueFunction, protocol::kDequeueKeys, ns, type, 0, 4);
  argv.emplace_back(group);
  argv.emplace_back(consumer);
  argv.push_back(std::to_string(count));
  argv.push_back(Text(lease_ms));
  return argv;
}

Command ReadGroup(std::string_view ns, std::string_view type, std::string_view group,
                  std::string_view consumer, std::size_t count, std::int64_t block_ms) {
  Command argv = {"XREADGROUP",          "GROUP", std::string(group),
                  std::string(consumer), "COUNT", std::to_string(count)};
  if (block_ms > 0) {  // BLOCK 0 would wait forever
    argv.push_back("BLOCK");
    argv.push_back(Text(block_ms));
  }
  argv.push_back("STREAMS");
  argv.push_back(Keys(ns).Stream(type));
  argv.push_back(">");
  return argv;
}

Command CreateGroup(std::string_view ns, std::string_view type, std::string_view group) {
  return {"XGROUP", "CREATE", Keys(ns).Stream(type), std::string(group), "0", "MKSTREAM"};
}

Command Start(std::string_view ns, std::string_view type, std::string_view group,
              std::string_view consumer, std::int64_t lease_ms,
              std::span<const ReadEntry> entries) {
  Command argv =
      NewCall(protocol::kStartFunction, protocol::kStartKeys, ns, type, 0, 4 + 3 * entries.size());
  argv.emplace_back(group);
  argv.emplace_back(consumer);
  argv.push_back(Text(lease_ms));
  argv.push_back(std::to_string(entries.size()));
  for (const ReadEntry& e : entries) {
    argv.push_back(e.sid);
    argv.push_back(e.id);
    argv.push_back(e.attempt);
  }
  return argv;
}

Command Ack(std::string_view ns, std::string_view type, std::string_view group,
            std::string_view consumer, std::span<const HeldTask> tasks) {
  Command argv =
      NewCall(protocol::kAckFunction, protocol::kAckKeys, ns, type, 0, 3 + 2 * tasks.size());
  argv.emplace_back(group);
  argv.emplace_back(consumer);
  argv.push_back(std::to_string(tasks.size()));
  AppendHeld(argv, tasks);
  return argv;
}

Command Fail(std::string_view ns, std::string_view type, const FailArgs& a) {
  Command argv = NewCall(protocol::kFailFunction, protocol::kFailKeys, ns, type, 0, 10);
  argv.emplace_back(a.group);
  argv.emplace_back(a.consumer);
  argv.emplace_back(a.id);
  argv.emplace_back(a.sid);
  argv.emplace_back(a.kind);
  argv.emplace_back(a.message);
  argv.emplace_back(a.stack);
  argv.push_back(Text(a.base_ms));
  argv.push_back(Text(a.max_ms));
  argv.push_back(Text(a.jitter < 0.999999 ? a.jitter : 0.999999));  // 6 decimals: stay < 1
  return argv;
}

Command Reclaim(std::string_view ns, std::string_view type, std::size_t count, std::int64_t base_ms,
                std::int64_t max_ms, std::uint64_t jitter_seed, std::string_view reaper) {
  Command argv = NewCall(protocol::kReclaimFunction, protocol::kReclaimKeys, ns, type, 0, 5);
  argv.push_back(std::to_string(count));
  argv.push_back(Text(base_ms));
  argv.push_back(Text(max_ms));
  argv.push_back(std::to_string(jitter_seed % 2147483647ULL));
  argv.emplace_back(reaper);
  return argv;
}

Command Extend(std::string_view ns, std::string_view type, std::string_view group,
               std::string_view consumer, std::int64_t lease_ms, std::span<const HeldTask> tasks) {
  Command argv =
      NewCall(protocol::kExtendFunction, protocol::kExtendKeys, ns, type, 0, 3 + 2 * tasks.size());
  argv.emplace_back(group);
  argv.emplace_back(consumer);
  argv.push_back(Text(lease_ms));
  AppendHeld(argv, tasks);
  return argv;
}

Command Promote(std::string_view ns, std::string_view type, std::size_t limit) {
  Command argv = NewCall(protocol::kPromoteFunction, protocol::kPromoteKeys, ns, type, 0, 1);
  argv.push_back(std::to_string(limit));
  return argv;
}

Command Cancel(std::string_view ns, std::string_view type, std::string_view id) {
  Command argv = NewCall(protocol::kCancelFunction, protocol::kCancelKeys, ns, type, 0, 1);
  argv.emplace_back(id);
  return argv;
}

Command DlqReplay(std::string_view ns, std::string_view type, std::string_view id,
                  std::string_view payload) {
  Command argv = NewCall(protocol::kDlqReplayFunction, protocol::kDlqReplayKeys, ns, type, 0, 2);
  argv.emplace_back(id);
  argv.emplace_back(payload);
  return argv;
}

Command DlqDelete(std::string_view ns, std::string_view type, std::string_view id) {
  Command argv = NewCall(protocol::kDlqDeleteFunction, protocol::kDlqDeleteKeys, ns, type, 0, 1);
  argv.emplace_back(id);
  return argv;
}

Command RescueStart(std::string_view ns, std::string_view type, std::string_view group,
                    std::string_view rescue_group) {
  Command argv =
      NewCall(protocol::kRescueStartFunction, protocol::kRescueStartKeys, ns, type, 0, 2);
  argv.emplace_back(group);
  argv.emplace_back(rescue_group);
  return argv;
}

Command RescueFinish(std::string_view ns, std::string_view type, bool force, std::size_t limit) {
  Command argv =
      NewCall(protocol::kRescueFinishFunction, protocol::kRescueFinishKeys, ns, type, 0, 2);
  argv.emplace_back(force ? "1" : "0");
  argv.push_back(std::to_string(limit));
  return argv;
}

Command CronMark(std::string_view job, std::int64_t tick_s) {
  Command argv = NewCall(protocol::kCronMarkFunction, protocol::kCronMarkKeys, "", "", 0, 2);
  argv.emplace_back(job);
  argv.push_back(Text(tick_s));
  return argv;
}

}  // namespace baton::internal::fn
