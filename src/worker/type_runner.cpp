#include "worker/type_runner.h"

#include <algorithm>
#include <iterator>

#include "broker/keys.h"

namespace baton::internal {

namespace {

constexpr std::size_t kAcksPerCall = 256;
// While tasks are in flight, the read blocks at most this long so that their acks are sent
// promptly: the fetcher is the only thread that talks to Redis for this type, and it cannot flush
// while its read blocks. An idle fetcher (nothing in flight) blocks for the full
// WorkerOptions::block.
constexpr std::chrono::milliseconds kBusyBlock{100};

// What a function's reply that is not the expected array says: an error reply with its code and
// hint (e.g. "run 'baton init'" for a missing functions library).
Status ReplyError(const Reply& reply) {
  if (reply.is_error()) return StatusFromErrorReply(reply);
  return Status::Internal("unexpected reply");
}

}  // namespace

TypeRunner::TypeRunner(RunnerSettings settings, std::shared_ptr<WorkerCounters> counters)
    : settings_(std::move(settings)),
      counters_(std::move(counters)),
      rng_(std::random_device{}()),
      slots_(new Slot[static_cast<std::size_t>(std::max(settings_.concurrency, 1))]) {
  stream_key_ = Keys(settings_.ns).Stream(settings_.type);
  if (settings_.log) {
    scoped_log_ = [log = settings_.log, ns = settings_.ns, type = settings_.type](
                      LogLevel level, std::string_view message, const std::vector<LogAttr>& attrs) {
      std::vector<LogAttr> all = {{"ns", ns}, {"type", type}};
      all.insert(all.end(), attrs.begin(), attrs.end());
      log(level, message, all);
    };
  }
}

void TypeRunner::LogProblem(std::string_view message, const std::string& error) const {
  if (scoped_log_) scoped_log_(LogLevel::kWarn, message, {{"error", error}});
}

TypeRunner::~TypeRunner() {
  // Normally the Worker joined or detached every thread; this covers a failed Start.
  if (fetcher_.joinable()) fetcher_.join();
  for (std::thread& t : handlers_) {
    if (t.joinable()) t.join();
  }
}

Status TypeRunner::Start() {
  StatusOr<std::unique_ptr<RedisConnection>> conn = RedisConnection::Open(settings_.endpoint);
  if (!conn.ok()) return conn.status();
  conn_ = std::move(*conn);
  StatusOr<Reply> id = conn_->CommandAt(stream_key_, {"CLIENT", "ID"});
  if (id.ok() && !id->is_error()) client_id_ = id->AsInteger();
  std::shared_ptr<TypeRunner> self = shared_from_this();
  for (int i = 0; i < settings_.concurrency; ++i) {
    handlers_.emplace_back([self, i] { self->HandlerLoop(i); });
  }
  fetcher_ = std::thread([self] { self->FetchLoop(); });
  return Status::Ok();
}

void TypeRunner::BeginStop() {
  std::lock_guard<std::mutex> lock(mu_);
  stopping_ = true;
  fetch_cv_.notify_all();
}

bool TypeRunner::Drained() {
  std::lock_guard<std::mutex> lock(mu_);
  return in_flight_ == 0 && completions_.empty();
}

void TypeRunner::Abandon() {
  std::lock_guard<std::mutex> lock(mu_);
  stopping_ = true;
  abandon_ = true;
  for (int i = 0; i < settings_.concurrency; ++i) {
    if (slots_[i].busy) {
      slots_[i].abandoned = true;
      slots_[i].cancel.store(true);
    }
  }
  fetch_cv_.notify_all();
}

void TypeRunner::JoinFetcher() {
  if (fetcher_.joinable()) fetcher_.join();
}

void TypeRunner::StopPool(std::chrono::milliseconds wait) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    pool_exit_ = true;
  }
  pool_cv_.notify_all();
  auto deadline = std::chrono::steady_clock::now() + wait;
  while (std::chrono::steady_clock::now() < deadline) {
    bool any_busy = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (int i = 0; i < settings_.concurrency; ++i) any_busy = any_busy || slots_[i].busy;
    }
    if (!any_busy) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  for (int i = 0; i < settings_.concurrency; ++i) {
    bool busy;
    {
      std::lock_guard<std::mutex> lock(mu_);
      busy = slots_[i].busy;
    }
    // A busy thread runs a handler that ignored cancellation: it holds a shared_ptr to this
    // runner, so detaching it is safe; it exits when the handler returns.
    if (!handlers_[i].joinable()) continue;
    if (busy) {
      handlers_[i].detach();
    } else {
      handlers_[i].join();
    }
  }
}

void TypeRunner::CheckDeadlines(std::chrono::steady_clock::time_point now) {
  std::lock_guard<std::mutex> lock(mu_);
  for (int i = 0; i < settings_.concurrency; ++i) {
    Slot& s = slots_[i];
    if (s.busy && !s.timed_out && s.deadline <= now) {
      // Past the deadline: cancel, and stop extending the lease so that, if the handler ignores
      // the cancellation, the lease ends and the task is reclaimed for another worker.
      s.timed_out = true;
      s.heartbeating = false;
      s.cancel.store(true);
    }
  }
}

std::chrono::steady_clock::time_point TypeRunner::NextDeadline() {
  auto next = std::chrono::steady_clock::time_point::max();
  std::lock_guard<std::mutex> lock(mu_);
  for (int i = 0; i < settings_.concurrency; ++i) {
    const Slot& s = slots_[i];
    if (s.busy && !s.timed_out) next = std::min(next, s.deadline);
  }
  return next;
}

void TypeRunner::HeartbeatTasks(std::vector<fn::HeldTask>* tasks) {
  std::lock_guard<std::mutex> lock(mu_);
  for (int i = 0; i < settings_.concurrency; ++i) {
    const Slot& s = slots_[i];
    if (s.busy && s.heartbeating && !s.abandoned) tasks->push_back({s.id, s.sid});
  }
}

void TypeRunner::OnExtendReply(const std::vector<fn::HeldTask>& sent, const Reply& held) {
  if (held.is_error() || !held.is_array()) {
    // Says nothing about the leases (e.g. the library is being reloaded): try again next beat.
    LogProblem("heartbeat (baton_v2_extend) failed", ReplyError(held).ToString());
    return;
  }
  std::vector<std::string> still;
  still.reserve(held.elements.size());
  for (const Reply& e : held.elements) still.push_back(e.AsString());
  std::sort(still.begin(), still.end());
  std::lock_guard<std::mutex> lock(mu_);
  for (const fn::HeldTask& task : sent) {
    if (std::binary_search(still.begin(), still.end(), task.sid)) continue;
    for (int i = 0; i < settings_.concurrency; ++i) {
      Slot& s = slots_[i];
      if (s.busy && s.heartbeating && s.sid == task.sid) {
        s.heartbeating = false;
        s.cancel.store(true);
      }
    }
  }
}

void TypeRunner::HandlerLoop(int index) {
  Slot& slot = slots_[index];
  while (true) {
    PendingEntry entry;
    {
      std::unique_lock<std::mutex> lock(mu_);
      while (ready_.empty() && !pool_exit_) {
        ++idle_handlers_;
        pool_cv_.wait(lock);
        --idle_handlers_;
        if (wakes_in_flight_ > 0) --wakes_in_flight_;
      }
      if (pool_exit_) return;  // an entry still in ready_ is left to the lease
      entry = std::move(ready_.front());
      ready_.pop_front();
      WakeOneHandler();
      // Completions that came while entries waited did not wake the fetcher (below): the thread
      // that takes the last waiting entry does, or their acks would wait for its attempt.
      if (ready_.empty() && !completions_.empty()) fetch_cv_.notify_one();
      slot.busy = true;
      slot.sid = entry.sid;
      slot.id = entry.id;
      slot.deadline = std::chrono::steady_clock::time_point::max();
      slot.heartbeating = true;
      slot.timed_out = false;
      slot.abandoned = abandon_;
      slot.cancel.store(abandon_);
    }
    Completion completion = RunEntry(slot, entry);
    bool batch_done;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!slot.abandoned && !completion.sid.empty()) {
        completions_.push_back(std::move(completion));
      }
      slot.busy = false;
      slot.heartbeating = false;
      --in_flight_;
      // While entries still wait, this thread takes the next one at once and the fetcher is left
      // asleep: their acks then go in one call instead of one round trip per completion.
      batch_done = ready_.empty();
    }
    if (batch_done) fetch_cv_.notify_one();
  }
}

TypeRunner::Completion TypeRunner::RunEntry(Slot& slot, PendingEntry& entry) {
  StatusOr<DeliveredTask> decoded =
      DecodeStreamEntry(task_ns(), settings_.type, entry.sid,
                        entry.entries->elements[entry.index].elements[1], nullptr, nullptr);
  entry.entries.reset();  // the last handler to decode frees the batch
  if (!decoded.ok()) {
    // Not a valid task (e.g. the payload is not a JSON object): dead-letter it as malformed,
    // never crash and never drop it.
    counters_->malformed.fetch_add(1);
    return Completion{std::move(entry.id), std::move(entry.sid), FailureKind::kMalformed,
                      decoded.status().message(), ""};
  }
  DeliveredTask& delivered = *decoded;
  auto deadline = std::chrono::steady_clock::time_point::max();
  if (delivered.task.execution_timeout) {
    deadline =
        std::chrono::steady_clock::now() + std::chrono::seconds(*delivered.task.execution_timeout);
    {
      std::lock_guard<std::mutex> lock(mu_);
      slot.deadline = deadline;
    }
    if (settings_.deadline_alarm) settings_.deadline_alarm->Ring();
  }
  TaskContext context(&delivered.task, delivered.attempt, delivered.stream_id, &slot.cancel,
                      deadline);
  AttemptOutcome outcome = RunAttempt(settings_.handler, context);
  bool late = std::chrono::steady_clock::now() > deadline;
  if (!late) {
    std::lock_guard<std::mutex> lock(mu_);
    late = slot.timed_out;
  }
  if (late) {
    // Past the deadline the attempt fails as a timeout whatever the handler returned: the lease
    // was no longer extended, so another worker may already own the task (the fail is then
    // 'stale' and changes nothing).
    outcome = TimeoutOutcome(delivered.task.execution_timeout.value_or(0));
  }
  return Completion{std::move(delivered.task.task_id), std::move(delivered.stream_id),
                    outcome.failure, std::move(outcome.message), std::move(outcome.stack)};
}

void TypeRunner::WaitBackoff() {
  std::chrono::milliseconds delay = backoff_.Next();
  std::unique_lock<std::mutex> lock(mu_);
  fetch_cv_.wait_for(lock, delay, [this] { return abandon_; });
}

bool TypeRunner::EnsureConnected() {
  if (!conn_->broken()) return true;
  WaitBackoff();
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (abandon_) return false;
  }
  Status st = conn_->Reconnect();
  if (!st.ok()) {
    redis_outage_.Failed(Scoped(), st, backoff_.Peek());
    return false;
  }
  StatusOr<Reply> id = conn_->CommandAt(stream_key_, {"CLIENT", "ID"});
  if (id.ok() && !id->is_error()) client_id_ = id->AsInteger();
  return !conn_->broken();
}

void TypeRunner::FetchLoop() {
  std::vector<Completion> batch;
  while (true) {
    if (!EnsureConnected()) {
      std::lock_guard<std::mutex> lock(mu_);
      // Redis is unreachable: when stopping, what is left is left to the lease.
      if (abandon_ || (stopping_ && in_flight_ == 0)) break;
      continue;
    }
    int count = 0;
    bool idle = false;
    bool final_round = false;  // abandoned: what has finished is sent once, the rest left to leases
    {
      std::unique_lock<std::mutex> lock(mu_);
      fetch_cv_.wait(lock, [this] {
        return !completions_.empty() || !unstarted_.empty() || abandon_ ||
               (stopping_ ? in_flight_ == 0 : in_flight_ < settings_.concurrency);
      });
      if (completions_.empty() && unstarted_.empty() && stopping_) break;  // drained, or abandoned
      final_round = abandon_;
      batch.swap(completions_);
      if (!stopping_ && !start_failing_) {
        count = std::min(settings_.concurrency - in_flight_, settings_.fetch_batch);
      }
      idle = in_flight_ == 0;
    }
    // baton_v2_start goes first: before any ack or fail of what it reports.
    const bool starting = !unstarted_.empty();
    if (starting) {
      conn_->Append(fn::Start(settings_.ns, settings_.type, settings_.group, settings_.consumer,
                              settings_.lease_ms, unstarted_));
    }
    AppendCompletions(batch);
    // The read blocks only when nothing else was sent: the replies of a start, ack or fail are
    // wanted now (counters, retries, refused entries), not when the block ends.
    std::chrono::milliseconds block{0};
    if (count > 0) {
      if (!starting && batch.empty()) {
        block = std::max(idle ? settings_.block : std::min(settings_.block, kBusyBlock),
                         std::chrono::milliseconds(1));
      }
      conn_->Append(fn::ReadGroup(settings_.ns, settings_.type, settings_.group, settings_.consumer,
                                  static_cast<std::size_t>(count), block.count()));
      in_xread_ = block.count() > 0;
    }
    StatusOr<std::vector<Reply>> replies = conn_->Flush(block);
    in_xread_ = false;
    if (!replies.ok()) {
      redis_outage_.Failed(Scoped(), replies.status(), backoff_.Peek());
      // Sent again after the reconnect: an ack or fail that did run returns gone / stale.
      std::lock_guard<std::mutex> lock(mu_);
      completions_.insert(completions_.begin(), std::make_move_iterator(batch.begin()),
                          std::make_move_iterator(batch.end()));
      batch.clear();
      continue;
    }
    redis_outage_.Succeeded(Scoped());
    std::span<const Reply> rest(*replies);
    Status refused = Status::Ok();
    if (starting) {
      const Reply& started = rest.front();
      rest = rest.subspan(1);
      if (started.is_error() || !started.is_array()) {
        // Sent again (after a backoff) before anything more is read. The entries already handed
        // out run meanwhile; their acks wait with them when Redis refuses those too.
        refused = ReplyError(started);
        start_failing_ = true;
      } else {
        start_failing_ = false;
        DropRefused(started);
        unstarted_.clear();
      }
    }
    const std::size_t again = HandleCompletionReplies(batch, rest, &refused);
    if (!refused.ok()) {
      calls_outage_.Failed(Scoped(), refused, backoff_.Peek());
    } else if (starting || !batch.empty()) {
      calls_outage_.Succeeded(Scoped());
    }
    batch.clear();
    // Backs off (without reading more) while calls are refused, or after a read Redis refused;
    // what a read in this round trip delivered is always taken, whatever else happened.
    bool back_off = start_failing_ || again > 0;
    if (count > 0) {
      Reply& read = replies->back();
      if (read.is_error() && read.str.starts_with("NOGROUP")) {
        // The group is made at id 0, so that it sees the whole backlog (as baton_v2_dequeue
        // does); the next round reads again.
        StatusOr<Reply> created =
            conn_->Command(fn::CreateGroup(settings_.ns, settings_.type, settings_.group));
        if (created.ok() && created->is_error() && !created->str.starts_with("BUSYGROUP")) {
          read_outage_.Failed(Scoped(), ReplyError(*created), backoff_.Peek());
          back_off = true;
        }
      } else if (read.is_error()) {
        // E.g. WRONGTYPE, OOM: wait (with a growing backoff), do not spin.
        read_outage_.Failed(Scoped(), ReplyError(read), backoff_.Peek());
        back_off = true;
      } else {
        read_outage_.Succeeded(Scoped());
        HandleRead(read);
      }
    }
    if (final_round) break;
    if (back_off) {
      WaitBackoff();
    } else {
      backoff_.Reset();
    }
  }
  fetcher_exited_ = true;
}

void TypeRunner::AppendCompletions(const std::vector<Completion>& batch) {
  // Acks first, up to kAcksPerCall per call, then one baton_v2_fail per failure.
  acks_.clear();
  for (const Completion& c : batch) {
    if (c.failure != FailureKind::kNone) continue;
    acks_.push_back({c.id, c.sid});
    if (acks_.size() == kAcksPerCall) {
      conn_->Append(
          fn::Ack(settings_.ns, settings_.type, settings_.group, settings_.consumer, acks_));
      acks_.clear();
    }
  }
  if (!acks_.empty()) {
    conn_->Append(
        fn::Ack(settings_.ns, settings_.type, settings_.group, settings_.consumer, acks_));
  }
  std::uniform_real_distribution<double> jitter(0.0, 1.0);
  for (const Completion& c : batch) {
    if (c.failure == FailureKind::kNone) continue;
    fn::FailArgs args;
    args.group = settings_.group;
    args.consumer = settings_.consumer;
    args.id = c.id;
    args.sid = c.sid;
    args.kind = FailureKindName(c.failure);
    args.message = c.message;
    args.stack = c.stack;
    args.base_ms = settings_.retry.base.count();
    args.max_ms = settings_.retry.max.count();
    args.jitter = jitter(rng_);
    conn_->Append(fn::Fail(settings_.ns, settings_.type, args));
  }
}

std::size_t TypeRunner::HandleCompletionReplies(std::vector<Completion>& batch,
                                                std::span<const Reply> replies, Status* refused) {
  // A BATON_* error is the call's own fault and would fail again (logged each time); any other
  // refusal may pass (the caller logs the outage once).
  auto may_pass = [&](const Reply& reply) {
    if (reply.str.starts_with("BATON_")) return false;
    if (refused->ok()) *refused = ReplyError(reply);
    return true;
  };
  std::vector<Completion> again;
  std::vector<std::size_t> acked;  // indexes in batch of the successes, in call order
  for (std::size_t i = 0; i < batch.size(); ++i) {
    if (batch[i].failure == FailureKind::kNone) acked.push_back(i);
  }
  std::size_t r = 0;
  for (std::size_t first = 0; first < acked.size() && r < replies.size();
       first += kAcksPerCall, ++r) {
    const Reply& reply = replies[r];
    if (reply.is_error()) {
      if (may_pass(reply)) {
        for (std::size_t j = first; j < std::min(first + kAcksPerCall, acked.size()); ++j) {
          again.push_back(std::move(batch[acked[j]]));
        }
      } else {
        LogProblem("ack (baton_v2_ack) failed", ReplyError(reply).ToString());
      }
      continue;
    }
    for (const Reply& status : reply.elements) {
      const std::string s = status.AsString();
      if (s == "done" || s == "stale_done") counters_->succeeded.fetch_add(1);
    }
  }
  for (Completion& c : batch) {
    if (c.failure == FailureKind::kNone) continue;
    if (r >= replies.size()) break;
    const Reply& reply = replies[r++];
    if (reply.is_error()) {
      if (may_pass(reply)) {
        again.push_back(std::move(c));
      } else {
        LogProblem("failure not recorded (baton_v2_fail)",
                   c.id + ": " + ReplyError(reply).ToString());
      }
      continue;
    }
    // {'retry', due_ms, attempt}, {'dead', at_ms, attempt} or {'stale', '', 0}.
    const std::string verdict = reply.elements.empty() ? "" : reply.elements[0].AsString();
    if (verdict == "retry" || verdict == "dead") counters_->failed.fetch_add(1);
    if (verdict == "dead") counters_->dead.fetch_add(1);
    if (verdict == "retry" && reply.elements.size() > 1 && settings_.on_retry) {
      settings_.on_retry(reply.elements[1].AsInteger());
    }
  }
  if (again.empty()) return 0;
  std::lock_guard<std::mutex> lock(mu_);
  completions_.insert(completions_.begin(), std::make_move_iterator(again.begin()),
                      std::make_move_iterator(again.end()));
  return again.size();
}

void TypeRunner::HandleRead(Reply& reply) {
  // Nil when the block timed out; else [[stream, [[SID, [field, value, ...]], ...]]].
  if (!reply.is_array() || reply.elements.empty() || !reply.elements[0].is_array() ||
      reply.elements[0].elements.size() < 2) {
    return;
  }
  auto entries = std::make_shared<const Reply>(std::move(reply.elements[0].elements[1]));
  std::vector<PendingEntry> runnable;
  runnable.reserve(entries->elements.size());
  for (std::size_t i = 0; i < entries->elements.size(); ++i) {
    const Reply& entry = entries->elements[i];
    if (!entry.is_array() || entry.elements.size() < 2) continue;
    fn::ReadEntry read{entry.elements[0].str, "", ""};
    const Reply& fields = entry.elements[1];
    for (std::size_t f = 0; f + 1 < fields.elements.size(); f += 2) {
      if (fields.elements[f].str != "task") continue;
      if (std::optional<EntryTask> task = ParseEntryTask(fields.elements[f + 1].str)) {
        read.id = std::string(task->id);
        read.attempt = std::string(task->attempt);
      }
      break;
    }
    if (read.id.empty()) {
      counters_->malformed.fetch_add(1);  // not run: baton_v2_start dead-letters it
    } else {
      runnable.push_back(PendingEntry{entries, i, read.sid, read.id});
    }
    unstarted_.push_back(std::move(read));
  }
  if (runnable.empty()) return;
  std::lock_guard<std::mutex> lock(mu_);
  for (PendingEntry& e : runnable) ready_.push_back(std::move(e));
  in_flight_ += static_cast<int>(runnable.size());
  WakeOneHandler();
}

void TypeRunner::WakeOneHandler() {
  // A thread that finishes its attempt takes the next entry without waiting, so with quick tasks
  // a few threads run the whole batch; a slow task is still joined by another thread one wake-up
  // later, as each woken thread wakes the next.
  if (!ready_.empty() && idle_handlers_ > 0 && wakes_in_flight_ == 0) {
    ++wakes_in_flight_;
    pool_cv_.notify_one();
  }
}

void TypeRunner::DropRefused(const Reply& refused) {
  if (refused.elements.empty()) return;
  std::lock_guard<std::mutex> lock(mu_);
  for (const Reply& r : refused.elements) {
    const std::string& sid = r.str;
    auto queued = std::find_if(ready_.begin(), ready_.end(),
                               [&](const PendingEntry& e) { return e.sid == sid; });
    if (queued != ready_.end()) {
      // Not run, but counted as a handler would have counted it, so that the malformed count
      // does not depend on whether a thread took the entry before this reply came (refusals are
      // rare: decoding one here costs nothing that matters).
      if (!DecodeStreamEntry(task_ns(), settings_.type, queued->sid,
                             queued->entries->elements[queued->index].elements[1], nullptr, nullptr)
               .ok()) {
        counters_->malformed.fetch_add(1);
      }
      ready_.erase(queued);
      --in_flight_;
      continue;
    }
    for (int i = 0; i < settings_.concurrency; ++i) {
      Slot& s = slots_[i];
      if (s.busy && s.sid == sid) {
        s.abandoned = true;
        s.heartbeating = false;
        s.cancel.store(true);
      }
    }
    std::erase_if(completions_, [&](const Completion& c) { return c.sid == sid; });
  }
}

}  // namespace baton::internal
