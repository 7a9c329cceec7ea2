#pragma once
// Everything a Worker runs for one (namespace, task type): a fetcher thread with its own Redis
// connection and a fixed pool of handler threads. The fetcher reads its stream itself (the fast
// read path of docs/protocol.md: XREADGROUP ... BLOCK, at most as many entries as there are idle
// handler threads, since a read entry is leased to this consumer), hands what it read to the
// handler threads at once, and reports it with baton_v2_start at the head of its next pipeline;
// the finished tasks' baton_v2_ack / baton_v2_fail calls and its next read follow in that same
// pipeline: one round trip carries them all. Types never share threads, so one type's backlog or
// slowness cannot delay another. Every call is built by broker/functions.h.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <random>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "baton/worker.h"
#include "broker/functions.h"
#include "broker/redis_connection.h"
#include "broker/task_codec.h"
#include "core/backoff.h"
#include "core/loop_log.h"
#include "worker/alarm.h"
#include "worker/attempt.h"

namespace baton::internal {

// WorkerStats, shared by every thread of a Worker (and kept alive by detached handler threads).
struct WorkerCounters {
  std::atomic<std::uint64_t> succeeded{0};
  std::atomic<std::uint64_t> failed{0};
  std::atomic<std::uint64_t> dead{0};
  std::atomic<std::uint64_t> malformed{0};
};

struct RunnerSettings {
  // The storage namespace whose keys the runner uses: the namespace, or one of its partitions
  // "ns:p" (broker/partitions.h).
  std::string ns;
  // The namespace handlers see in Task::ns ("" = ns).
  std::string task_ns;
  std::string type;
  Handler handler;
  int concurrency = 1;
  RetryPolicy retry;
  RedisEndpoint endpoint;
  std::string group;
  std::string consumer;
  int fetch_batch = 64;
  std::chrono::milliseconds block{5000};
  // The lease every dequeue and extend asks for (already resolved: never 0).
  std::int64_t lease_ms = 30000;
  // Rung when an attempt gets a deadline (execution_timeout), so the watchdog sleeps until the
  // earliest one instead of polling. May be null.
  std::shared_ptr<Alarm> deadline_alarm;
  // Called by the fetcher with the due time (Unix ms, server clock) of every retry baton_v2_fail
  // scheduled (the worker's maintenance promotes it then). May be empty.
  std::function<void(std::int64_t due_ms)> on_retry;
  // WorkerOptions::logger, as a LogFn (empty: nothing is logged).
  LogFn log;
};

class TypeRunner : public std::enable_shared_from_this<TypeRunner> {
 public:
  TypeRunner(RunnerSettings settings, std::shared_ptr<WorkerCounters> counters);
  ~TypeRunner();
  TypeRunner(const TypeRunner&) = delete;
  TypeRunner& operator=(const TypeRunner&) = delete;

  // Opens the fetcher's connection (kUnavailable when Redis is unreachable) and starts the fetcher
  // and the handler threads. The object must be owned by a shared_ptr.
  Status Start();

  // Shutdown, in this order (Worker::Stop):
  // 1. Stop fetching new tasks; finished ones are still acked.
  void BeginStop();
  // 2. True once no task is in flight (every handler returned and its ack/fail was sent).
  bool Drained();
  // 3. Sets the cancel flag of every running handler; the fetcher sends what has finished and
  //    exits. Handlers still running are left to the lease.
  void Abandon();
  // 4. True once the fetcher thread has exited; while it sits in XREAD BLOCK, the caller unblocks
  //    it with CLIENT UNBLOCK <fetcher_client_id()>, sent to the server of stream_key() (on a
  //    cluster, the primary that serves it).
  bool FetcherExited() const { return fetcher_exited_.load(); }
  bool FetcherBlocked() const { return in_xread_.load(); }
  long long fetcher_client_id() const { return client_id_.load(); }
  void JoinFetcher();
  // 5. Ends the handler threads: joins those that are idle (waiting at most `wait` for busy ones to
  //    return) and detaches the rest, which keep this object alive until their handler returns.
  void StopPool(std::chrono::milliseconds wait);

  // Lease keeping (the LeaseKeeper threads):
  // Cancels every attempt whose execution_timeout passed and stops heartbeating it (so that, if
  // its handler ignores the cancellation, its lease ends and the task is reclaimed).
  void CheckDeadlines(std::chrono::steady_clock::time_point now);
  // The earliest deadline of a running attempt not yet cancelled; time_point::max() when none.
  std::chrono::steady_clock::time_point NextDeadline();
  // The tasks to heartbeat (running, not past their deadline, lease not lost, not abandoned).
  void HeartbeatTasks(std::vector<fn::HeldTask>* tasks);
  // `sent` were extended and `held` is baton_v2_extend's answer (the SIDs still held): cancels the
  // attempts whose SID is missing (the lease was lost: another worker may be running the task).
  void OnExtendReply(const std::vector<fn::HeldTask>& sent, const Reply& held);

  const RunnerSettings& settings() const { return settings_; }
  const std::string& stream_key() const { return stream_key_; }
  // The namespace of the tasks this runner decodes (RunnerSettings::task_ns).
  const std::string& task_ns() const {
    return settings_.task_ns.empty() ? settings_.ns : settings_.task_ns;
  }

 private:
  // One handler thread's current attempt. Guarded by mu_, except `cancel`.
  struct Slot {
    bool busy = false;
    std::string id;
    std::string sid;
    std::chrono::steady_clock::time_point deadline;
    bool heartbeating = false;
    bool timed_out = false;
    bool abandoned = false;  // cancelled by Abandon(): its outcome is not sent, the lease decides
    std::atomic<bool> cancel{false};
  };
  // One entry read (index `index` of an XREADGROUP entries array) waiting for a handler.
  struct PendingEntry {
    std::shared_ptr<const Reply> entries;
    std::size_t index = 0;
    std::string sid;
    std::string id;
  };
  // A finished attempt waiting for its baton_v2_ack (failure == kNone) or baton_v2_fail.
  struct Completion {
    std::string id;
    std::string sid;
    FailureKind failure = FailureKind::kNone;
    std::string message;
    std::string stack;
  };

  void FetchLoop();
  void HandlerLoop(int index);
  // Reconnects with backoff when the connection is broken; false when the fetcher should give up
  // (abandoned) or try again later.
  bool EnsureConnected();
  void WaitBackoff();
  void AppendCompletions(const std::vector<Completion>& batch);
  // Counts the outcomes; the completions whose call Redis refused for a reason that may pass
  // (not a BATON_* error: e.g. the library is being reloaded, OOM, READONLY) are queued again,
  // and `refused` says why (left alone when none was). Returns how many were.
  std::size_t HandleCompletionReplies(std::vector<Completion>& batch,
                                      std::span<const Reply> replies, Status* refused);
  // Queues the entries of an XREADGROUP reply (moved from) for the handler threads and notes them
  // all for baton_v2_start. An entry whose task field does not split is not run: baton_v2_start
  // dead-letters it.
  void HandleRead(Reply& reply);
  // baton_v2_start's answer: the SIDs that must not run are taken out of the queue, cancelled
  // (their outcome is not sent: the functions already dealt with them) or forgotten.
  void DropRefused(const Reply& refused);
  // Wakes one idle handler thread when entries wait and no wake-up is already on its way. The
  // woken thread calls it again after taking its entry, so the wake-ups chain while entries last.
  // Called with mu_ held.
  void WakeOneHandler();
  // Handler thread: decodes one entry and runs its attempt (an undecodable entry is a malformed
  // failure).
  Completion RunEntry(Slot& slot, PendingEntry& entry);

  const RunnerSettings settings_;
  std::shared_ptr<WorkerCounters> counters_;
  std::string stream_key_;
  std::vector<fn::HeldTask> acks_;  // reused to build ack calls
  // Fetcher thread only: entries read but not yet reported with baton_v2_start (kept across a
  // lost connection: they stay pending in the group).
  std::vector<fn::ReadEntry> unstarted_;

  // Fetcher-thread state.
  std::unique_ptr<RedisConnection> conn_;
  Backoff backoff_;
  // Fetcher thread only: a lost Redis connection, a read Redis refuses, and a baton_v2_start it
  // refuses (e.g. the functions library is gone) are each logged when they start and when they
  // end, not once per retry.
  OutageLog redis_outage_{"worker redis connection"};
  OutageLog read_outage_{"worker read"};
  OutageLog calls_outage_{"worker calls"};  // baton_v2_start, _ack, _fail
  // While baton_v2_start fails, nothing more is read: what was read is reported first.
  bool start_failing_ = false;
  // settings_.log with the ns and type fields added (built once: used on every flush).
  LogFn scoped_log_;
  const LogFn& Scoped() const { return scoped_log_; }
  // One problem of this type's fetcher (warn): `error` says what Redis or the decoder answered.
  void LogProblem(std::string_view message, const std::string& error) const;
  std::mt19937_64 rng_;  // jitter of baton_v2_fail
  std::thread fetcher_;
  std::atomic<bool> fetcher_exited_{false};
  std::atomic<bool> in_xread_{false};
  std::atomic<long long> client_id_{-1};

  std::mutex mu_;
  std::condition_variable fetch_cv_;  // fetcher: a slot freed, a completion, stop
  std::condition_variable pool_cv_;   // handler threads: a task arrived, exit
  std::deque<PendingEntry> ready_;
  // Handler threads waiting for an entry, and wake-ups sent but not yet taken: at most one is
  // outstanding (WakeOneHandler), so a batch of quick tasks is run by the threads already awake
  // instead of costing one thread switch per entry.
  int idle_handlers_ = 0;
  int wakes_in_flight_ = 0;
  std::vector<Completion> completions_;
  int in_flight_ = 0;  // tasks handed to the pool (queued in ready_ or running)
  bool stopping_ = false;
  bool abandon_ = false;
  bool pool_exit_ = false;
  std::unique_ptr<Slot[]> slots_;
  std::vector<std::thread> handlers_;
};

}  // namespace baton::internal
