#pragma once
// The one home of every Redis Function call of protocol v2 (docs/protocol.md): each function of
// the library gets one builder here, which returns the whole FCALL command (function name, KEYS in
// the order contract/protocol.json lists them, ARGV). No other file builds FCALL argument lists;
// the replies are read by the caller, which knows what it needs of them.
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "broker/keys.h"
#include "broker/protocol_gen.h"

namespace baton::internal::fn {

using Command = std::vector<std::string>;

// One task a worker holds: its id and the stream entry it runs (ack, extend).
struct HeldTask {
  std::string id;
  std::string sid;
};

// FCALL_RO baton_v2_version 0.
Command Version();

// baton_v2_configure: sets the given settings ("" = back to the default) and returns all of them.
// No pairs: read only.
Command Configure(std::string_view ns,
                  std::span<const std::pair<std::string, std::string>> settings = {});

// baton_v2_enqueue of tasks of one (ns, type). `per_task` holds the 10 ARGV values of each task
// (EncodeEnqueueArgs); `unique_keys` the non-empty unique keys, in task order.
Command Enqueue(std::string_view ns, std::string_view type, std::size_t n,
                std::span<const std::string> unique_keys, std::vector<std::string> per_task);

// baton_v2_dequeue: up to `count` tasks for `consumer`, leased for lease_ms (0: the namespace's
// lease_ms setting).
Command Dequeue(std::string_view ns, std::string_view type, std::string_view group,
                std::string_view consumer, std::size_t count, std::int64_t lease_ms);

// One entry a worker read itself (the fast read path): its SID, and the id and ATTEMPT of its
// task field ("" when the field does not split).
struct ReadEntry {
  std::string sid;
  std::string id;
  std::string attempt;
};

// XREADGROUP GROUP group consumer COUNT count [BLOCK block_ms] STREAMS stream > : the fast read
// path's own read (not a function; NOGROUP when the group is missing, see CreateGroup). No BLOCK
// when block_ms is 0.
Command ReadGroup(std::string_view ns, std::string_view type, std::string_view group,
                  std::string_view consumer, std::size_t count, std::int64_t block_ms);
// XGROUP CREATE stream group 0 MKSTREAM (BUSYGROUP when it exists: harmless).
Command CreateGroup(std::string_view ns, std::string_view type, std::string_view group);

// baton_v2_start: what a consumer read with ReadGroup, sent before any of it is acked or failed.
Command Start(std::string_view ns, std::string_view type, std::string_view group,
              std::string_view consumer, std::int64_t lease_ms, std::span<const ReadEntry> entries);

// baton_v2_ack of the tasks a consumer finished.
Command Ack(std::string_view ns, std::string_view type, std::string_view group,
            std::string_view consumer, std::span<const HeldTask> tasks);

// baton_v2_fail of one attempt.
struct FailArgs {
  std::string_view group;
  std::string_view consumer;
  std::string_view id;
  std::string_view sid;
  std::string_view kind;  // error | timeout | non_retryable | malformed
  std::string_view message;
  std::string_view stack;
  std::int64_t base_ms = 0;
  std::int64_t max_ms = 0;
  double jitter = 0;  // [0, 1)
};
Command Fail(std::string_view ns, std::string_view type, const FailArgs& args);

// baton_v2_reclaim: takes back up to `count` tasks whose lease deadline passed.
Command Reclaim(std::string_view ns, std::string_view type, std::size_t count, std::int64_t base_ms,
                std::int64_t max_ms, std::uint64_t jitter_seed, std::string_view reaper);

// baton_v2_extend: heartbeat of the tasks a consumer runs (lease_ms 0: namespace setting).
Command Extend(std::string_view ns, std::string_view type, std::string_view group,
               std::string_view consumer, std::int64_t lease_ms, std::span<const HeldTask> tasks);

// baton_v2_promote of at most `limit` due tasks.
Command Promote(std::string_view ns, std::string_view type, std::size_t limit);

Command Cancel(std::string_view ns, std::string_view type, std::string_view id);
// payload "" keeps the old one.
Command DlqReplay(std::string_view ns, std::string_view type, std::string_view id,
                  std::string_view payload);
Command DlqDelete(std::string_view ns, std::string_view type, std::string_view id);

Command RescueStart(std::string_view ns, std::string_view type, std::string_view group,
                    std::string_view rescue_group);
Command RescueFinish(std::string_view ns, std::string_view type, bool force, std::size_t limit);

// baton_v2_cron_mark: moves a cron job's last handled tick forward (never back).
Command CronMark(std::string_view job, std::int64_t tick_s);

}  // namespace baton::internal::fn
