// baton::Worker: wires one TypeRunner per registered (namespace, type) and partition of the
// namespace, the LeaseKeeper (heartbeats and execution_timeout watchdog) and, with maintenance on,
// the Maintenance loop (promote and reclaim) for them. See docs/protocol.md "Worker loop" and
// docs/cluster.md "Partitions".
#include "baton/worker.h"

#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <condition_variable>
#include <cstdio>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <thread>
#include <utility>
#include <vector>

#include "broker/function_library.h"
#include "broker/functions.h"
#include "broker/keys.h"
#include "broker/namespace_settings.h"
#include "broker/partitions.h"
#include "broker/redis_connection.h"
#include "core/loop_log.h"
#include "worker/alarm.h"
#include "worker/lease_keeper.h"
#include "worker/maintenance.h"
#include "worker/type_runner.h"

namespace baton {

namespace {

using internal::RedisConnection;
using internal::RedisEndpoint;

// Set by the SIGINT/SIGTERM handler that Run() installs when handle_signals.
std::atomic<int> g_signal_received{0};
static_assert(std::atomic<int>::is_always_lock_free, "used from a signal handler");

extern "C" void OnStopSignal(int sig) { g_signal_received.store(sig); }

// Blocks SIGINT and SIGTERM in the calling thread while alive, so that the threads it starts
// inherit a mask without them: a stop signal is then never delivered to a worker thread (where it
// would interrupt blocking calls), only to the application's threads (or Run()'s).
class StopSignalsBlocked {
 public:
  StopSignalsBlocked() {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &set, &old_);
  }
  ~StopSignalsBlocked() { pthread_sigmask(SIG_SETMASK, &old_, nullptr); }

 private:
  sigset_t old_;
};

std::string MakeConsumerName(const std::string& service) {
  char host[256] = {0};
  if (gethostname(host, sizeof host - 1) != 0) std::snprintf(host, sizeof host, "unknown");
  std::random_device rd;
  char suffix[8];
  std::snprintf(suffix, sizeof suffix, "%06x", rd() & 0xffffffu);
  return service + ":" + host + ":" + std::to_string(getpid()) + ":" + suffix + ":cpp";
}

struct Registration {
  std::string ns;
  std::string type;
  Handler handler;
  TypeOptions options;
};

// The (Redis URL, namespace) pairs this process already added to baton:v2:namespaces: the SADD is
// a convenience for the CLI (batond finds namespaces with work without it), made once per process.
std::mutex g_registered_mu;
std::set<std::pair<std::string, std::string>>& RegisteredNamespaces() {
  static auto* registered = new std::set<std::pair<std::string, std::string>>();
  return *registered;
}

// Adds the namespaces this process has not registered yet to baton:v2:namespaces.
Status RegisterNamespaces(RedisConnection& conn, const std::string& url,
                          const std::vector<Registration>& registrations) {
  std::lock_guard<std::mutex> lock(g_registered_mu);
  std::vector<std::pair<std::string, std::string>> added;
  for (const Registration& r : registrations) {
    std::pair<std::string, std::string> key{url, r.ns};
    if (RegisteredNamespaces().count(key) != 0 ||
        std::find(added.begin(), added.end(), key) != added.end()) {
      continue;
    }
    conn.Append({"SADD", std::string(internal::Keys::kNamespaces), r.ns});
    added.push_back(std::move(key));
  }
  StatusOr<std::vector<internal::Reply>> replies = conn.Flush();
  if (!replies.ok()) return replies.status();
  for (const internal::Reply& reply : *replies) {
    if (reply.is_error()) return internal::StatusFromErrorReply(reply);
  }
  RegisteredNamespaces().insert(added.begin(), added.end());
  return Status::Ok();
}

// One registration served in one partition of its namespace.
struct ServedPartition {
  std::size_t registration;
  std::string storage_ns;  // the partition's storage namespace (broker/partitions.h)
};

// The lease_ms setting of every storage namespace served for a registration with lease_ms 0
// (read once per partition).
StatusOr<std::map<std::string, std::int64_t>> NamespaceLeases(
    RedisConnection& conn, const std::vector<Registration>& registrations,
    const std::vector<ServedPartition>& served) {
  std::vector<std::string> namespaces;
  for (const ServedPartition& p : served) {
    if (registrations[p.registration].options.lease_ms == 0 &&
        std::find(namespaces.begin(), namespaces.end(), p.storage_ns) == namespaces.end()) {
      namespaces.push_back(p.storage_ns);
    }
  }
  std::map<std::string, std::int64_t> leases;
  for (const std::string& ns : namespaces) conn.Append(internal::fn::Configure(ns));
  StatusOr<std::vector<internal::Reply>> replies = conn.Flush();
  if (!replies.ok()) return replies.status();
  for (std::size_t i = 0; i < namespaces.size() && i < replies->size(); ++i) {
    StatusOr<NamespaceSettings> settings = internal::ParseNamespaceSettings((*replies)[i]);
    if (!settings.ok()) return settings.status().WithContext("lease_ms of " + namespaces[i]);
    leases[namespaces[i]] = settings->lease_ms;
  }
  return leases;
}

// The runners started together (at Start, or when a namespace gained partitions), with the lease
// keeper and maintenance loop that serve them.
struct RunnerGroup {
  std::vector<std::shared_ptr<internal::TypeRunner>> runners;
  std::unique_ptr<internal::LeaseKeeper> lease_keeper;
  std::unique_ptr<internal::Maintenance> maintenance;
};

}  // namespace

struct Worker::Impl {
  WorkerOptions options;
  std::string consumer;
  std::vector<Registration> registrations;
  std::shared_ptr<internal::WorkerCounters> counters = std::make_shared<internal::WorkerCounters>();
  RedisEndpoint endpoint;
  // Added by Start() and then only by the partition watcher thread, which Shutdown() joins first.
  std::vector<RunnerGroup> groups;
  // Namespace -> the partitions served so far (0..count-1). Same rule as `groups`.
  std::map<std::string, int> partitions_served;
  internal::Alarm watch_alarm;  // stopped by Shutdown()
  std::thread partition_watch;

  enum class State { kNew, kRunning, kStopped };
  std::mutex mu;  // guards state, stop_requested
  std::condition_variable cv;
  State state = State::kNew;
  bool stop_requested = false;
  std::mutex stop_mu;  // serialises Stop()

  Status ValidateOptions() const;
  Status StartLocked();
  // The (registration, partition) pairs not served yet for the partition `counts` of
  // `namespaces`.
  std::vector<ServedPartition> NewPartitions(const std::vector<std::string>& namespaces,
                                             const std::vector<int>& counts) const;
  // Starts runners (and their lease keeper, maintenance) for `served` into *group; on failure
  // *group holds what was started, for StopGroups.
  Status StartGroup(RedisConnection& conn, const std::vector<ServedPartition>& served,
                    RunnerGroup* group);
  // Re-reads the partition counts every kPartitionRefresh and serves new partitions.
  void WatchPartitions(std::vector<std::string> namespaces, std::shared_ptr<RedisConnection> conn);
  void StopGroups(std::vector<RunnerGroup>& stopping, std::chrono::milliseconds grace);
  void Shutdown(std::chrono::milliseconds grace);
};

Status Worker::Impl::ValidateOptions() const {
  if (options.default_concurrency < 1) {
    return Status::InvalidArgument("default_concurrency", "must be >= 1");
  }
  if (options.fetch_batch < 1 || options.fetch_batch > 1000) {
    return Status::InvalidArgument("fetch_batch", "must be 1..1000");
  }
  if (options.block.count() < 1) return Status::InvalidArgument("block", "must be >= 1 ms");
  if (options.shutdown_grace.count() < 0) {
    return Status::InvalidArgument("shutdown_grace", "must be >= 0");
  }
  if (options.group.empty()) return Status::InvalidArgument("group", "must not be empty");
  if (registrations.empty()) {
    return Status::InvalidArgument("handlers", "register at least one handler before Start");
  }
  return Status::Ok();
}

Status Worker::Impl::StartLocked() {
  Status valid = ValidateOptions();
  if (!valid.ok()) return valid.WithContext("worker");
  StatusOr<RedisEndpoint> parsed = RedisEndpoint::FromOptions(options.redis);
  if (!parsed.ok()) return parsed.status().WithContext("worker");
  endpoint = *parsed;
  StatusOr<std::unique_ptr<RedisConnection>> conn = RedisConnection::Open(endpoint);
  if (!conn.ok()) return conn.status().WithContext("worker");
  Status library = internal::CheckFunctionLibrary(**conn);
  if (!library.ok()) return library;
  Status registered = RegisterNamespaces(**conn, options.redis.url, registrations);
  if (!registered.ok()) return registered.WithContext("worker");
  std::vector<std::string> namespaces;
  for (const Registration& r : registrations) {
    if (std::find(namespaces.begin(), namespaces.end(), r.ns) == namespaces.end()) {
      namespaces.push_back(r.ns);
    }
  }
  StatusOr<std::vector<int>> counts = internal::ReadPartitionCounts(**conn, namespaces);
  if (!counts.ok()) return counts.status().WithContext("worker");

  StopSignalsBlocked blocked;  // every thread started below inherits the blocked mask
  groups.emplace_back();
  Status st = StartGroup(**conn, NewPartitions(namespaces, *counts), &groups.back());
  if (!st.ok()) {
    Shutdown(std::chrono::milliseconds(0));
    return st.WithContext("worker");
  }
  for (std::size_t i = 0; i < namespaces.size(); ++i)
    partitions_served[namespaces[i]] = (*counts)[i];
  // The watcher keeps the start-up connection: one HMGET per kPartitionRefresh, nothing else.
  partition_watch = std::thread(
      [this, namespaces, c = std::shared_ptr<RedisConnection>(std::move(conn).value())]() mutable {
        WatchPartitions(namespaces, std::move(c));
      });
  return Status::Ok();
}

std::vector<ServedPartition> Worker::Impl::NewPartitions(const std::vector<std::string>& namespaces,
                                                         const std::vector<int>& counts) const {
  std::vector<ServedPartition> served;
  for (std::size_t i = 0; i < registrations.size(); ++i) {
    const std::string& ns = registrations[i].ns;
    const std::size_t at = static_cast<std::size_t>(
        std::find(namespaces.begin(), namespaces.end(), ns) - namespaces.begin());
    auto known = partitions_served.find(ns);
    const int from = known == partitions_served.end() ? 0 : known->second;
    for (int p = from; at < counts.size() && p < counts[at]; ++p) {
      served.push_back({i, internal::PartitionNamespace(ns, p)});
    }
  }
  return served;
}

Status Worker::Impl::StartGroup(RedisConnection& conn, const std::vector<ServedPartition>& served,
                                RunnerGroup* group) {
  StatusOr<std::map<std::string, std::int64_t>> ns_leases =
      NamespaceLeases(conn, registrations, served);
  if (!ns_leases.ok()) return ns_leases.status();
  if (options.maintenance) {
    std::vector<internal::Maintenance::Target> targets;
    for (const ServedPartition& p : served) {
      const Registration& r = registrations[p.registration];
      targets.push_back({p.storage_ns, r.type, r.options.retry});
    }
    group->maintenance = std::make_unique<internal::Maintenance>(
        endpoint, std::move(targets), consumer, internal::LogTo(options.logger));
  }
  auto deadline_alarm = std::make_shared<internal::Alarm>();
  for (std::size_t i = 0; i < served.size(); ++i) {
    const Registration& r = registrations[served[i].registration];
    internal::RunnerSettings s;
    s.ns = served[i].storage_ns;
    s.task_ns = r.ns;
    s.type = r.type;
    s.handler = r.handler;
    s.concurrency = r.options.concurrency > 0 ? r.options.concurrency : options.default_concurrency;
    s.retry = r.options.retry;
    s.endpoint = endpoint;
    s.group = options.group;
    s.consumer = consumer;
    s.fetch_batch = options.fetch_batch;
    s.block = options.block;
    s.lease_ms = r.options.lease_ms != 0 ? r.options.lease_ms : ns_leases->at(s.ns);
    s.deadline_alarm = deadline_alarm;
    s.log = internal::LogTo(options.logger);
    if (group->maintenance) {
      // The fetchers are joined before the maintenance loop stops (StopGroups), so the pointer
      // outlives every call.
      internal::Maintenance* m = group->maintenance.get();
      s.on_retry = [m, i](std::int64_t due_ms) { m->OnRetryScheduled(i, due_ms); };
    }
    auto runner = std::make_shared<internal::TypeRunner>(std::move(s), counters);
    Status st = runner->Start();
    if (!st.ok()) return st;
    group->runners.push_back(std::move(runner));
  }
  group->lease_keeper = std::make_unique<internal::LeaseKeeper>(
      endpoint, group->runners, deadline_alarm, internal::LogTo(options.logger));
  Status st = group->lease_keeper->Start();
  if (st.ok() && group->maintenance) st = group->maintenance->Start();
  return st;
}

void Worker::Impl::WatchPartitions(std::vector<std::string> namespaces,
                                   std::shared_ptr<RedisConnection> conn) {
  const internal::LogFn log = internal::LogTo(options.logger);
  internal::OutageLog outage("worker partition watch");
  while (watch_alarm.SleepUntil(std::chrono::steady_clock::now() + internal::kPartitionRefresh)) {
    Status st;
    if (!conn) {
      StatusOr<std::unique_ptr<RedisConnection>> opened = RedisConnection::Open(endpoint);
      if (opened.ok()) conn = std::move(opened).value();
      st = opened.status();
    }
    StatusOr<std::vector<int>> counts =
        st.ok() ? internal::ReadPartitionCounts(*conn, namespaces) : StatusOr<std::vector<int>>(st);
    std::vector<ServedPartition> added;
    if (counts.ok()) added = NewPartitions(namespaces, *counts);
    if (counts.ok() && !added.empty()) {
      RunnerGroup group;
      st = StartGroup(*conn, added, &group);
      if (!st.ok()) {
        std::vector<RunnerGroup> failed;
        failed.push_back(std::move(group));
        StopGroups(failed, std::chrono::milliseconds(0));
      } else {
        groups.push_back(std::move(group));
        for (std::size_t i = 0; i < namespaces.size(); ++i) {
          partitions_served[namespaces[i]] =
              std::max(partitions_served[namespaces[i]], (*counts)[i]);
        }
        if (log) {
          log(internal::LogLevel::kInfo, "worker serves new partitions",
              {internal::NumberAttr("fetchers_added", static_cast<long long>(added.size()))});
        }
      }
    } else if (!counts.ok()) {
      st = counts.status();
    }
    if (st.ok()) {
      outage.Succeeded(log);
    } else {
      if (conn && conn->broken()) conn.reset();
      outage.Failed(log, st, internal::kPartitionRefresh);
    }
  }
}

void Worker::Impl::Shutdown(std::chrono::milliseconds grace) {
  watch_alarm.Stop();
  if (partition_watch.joinable()) partition_watch.join();
  StopGroups(groups, grace);
}

void Worker::Impl::StopGroups(std::vector<RunnerGroup>& stopping, std::chrono::milliseconds grace) {
  std::vector<std::shared_ptr<internal::TypeRunner>> runners;
  for (RunnerGroup& g : stopping) runners.insert(runners.end(), g.runners.begin(), g.runners.end());
  for (auto& r : runners) r->BeginStop();
  // A fetcher with nothing in flight may sit in XREAD BLOCK for up to `block`: CLIENT UNBLOCK it
  // from a side connection (retried, as the unblock can race with the XREAD being sent).
  StatusOr<std::unique_ptr<RedisConnection>> control =
      RedisConnection::Open(endpoint, std::chrono::milliseconds(1000));
  auto unblock_idle = [&] {
    if (!control.ok()) return;
    for (auto& r : runners) {
      if (!r->FetcherExited() && r->FetcherBlocked() && r->Drained()) {
        (void)(*control)->CommandAt(r->stream_key(),
                                    {"CLIENT", "UNBLOCK", std::to_string(r->fetcher_client_id())});
      }
    }
  };
  auto all_exited = [&] {
    return std::all_of(runners.begin(), runners.end(),
                       [](const auto& r) { return r->FetcherExited(); });
  };
  // In-flight handlers get `grace` to finish; their acks are sent as they finish.
  auto deadline = std::chrono::steady_clock::now() + grace;
  while (!all_exited() && std::chrono::steady_clock::now() < deadline) {
    unblock_idle();
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  // The rest are cancelled and left to the lease.
  for (auto& r : runners) r->Abandon();
  deadline = std::chrono::steady_clock::now() + options.block + std::chrono::seconds(6);
  while (!all_exited() && std::chrono::steady_clock::now() < deadline) {
    unblock_idle();
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  for (auto& r : runners) r->JoinFetcher();
  for (RunnerGroup& g : stopping) {
    if (g.lease_keeper) g.lease_keeper->Stop();
  }
  for (auto& r : runners) {
    r->StopPool(std::min(grace, std::chrono::milliseconds(200)));
  }
  for (RunnerGroup& g : stopping) {
    if (g.maintenance) g.maintenance->Stop();
  }
}

Worker::Worker(WorkerOptions options) : impl_(std::make_unique<Impl>()) {
  impl_->options = std::move(options);
  impl_->consumer = MakeConsumerName(impl_->options.service);
}

Worker::~Worker() { Stop(); }

Status Worker::Register(const std::string& ns, const std::string& task_type, Handler handler,
                        TypeOptions options) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  if (impl_->state != Impl::State::kNew) {
    return Status::Conflict("register: the worker has already started");
  }
  if (!IsValidName(ns)) {
    return Status::InvalidArgument("namespace", "must match ^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$");
  }
  if (!IsValidName(task_type)) {
    return Status::InvalidArgument("task_type", "must match ^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$");
  }
  if (!handler) return Status::InvalidArgument("handler", "must not be empty");
  if (options.concurrency < 0) return Status::InvalidArgument("concurrency", "must be >= 0");
  if (options.retry.base.count() < 1 || options.retry.max < options.retry.base) {
    return Status::InvalidArgument("retry", "base must be >= 1 ms and max >= base");
  }
  if (options.lease_ms != 0 && (options.lease_ms < 1000 || options.lease_ms > 86400000)) {
    return Status::InvalidArgument("lease_ms",
                                   "must be 0 (the namespace's lease_ms) or 1000..86400000");
  }
  for (const Registration& r : impl_->registrations) {
    if (r.ns == ns && r.type == task_type) {
      return Status(StatusCode::kAlreadyExists,
                    "register: a handler for " + ns + "/" + task_type + " is already registered");
    }
  }
  impl_->registrations.push_back({ns, task_type, std::move(handler), options});
  return Status::Ok();
}

Status Worker::Start() {
  std::lock_guard<std::mutex> lock(impl_->mu);
  if (impl_->state != Impl::State::kNew) {
    return Status::Conflict("worker: Start may be called once");
  }
  Status st = impl_->StartLocked();
  impl_->state = st.ok() ? Impl::State::kRunning : Impl::State::kStopped;
  return st;
}

Status Worker::Run() {
  Status st = Start();
  if (!st.ok()) return st;
  const bool signals = impl_->options.handle_signals;
  struct sigaction old_int {};
  struct sigaction old_term {};
  sigset_t old_mask;
  if (signals) {
    g_signal_received.store(0);
    struct sigaction sa {};
    sa.sa_handler = OnStopSignal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old_int);
    sigaction(SIGTERM, &sa, &old_term);
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    pthread_sigmask(SIG_UNBLOCK, &set, &old_mask);
  }
  {
    std::unique_lock<std::mutex> lock(impl_->mu);
    while (!impl_->stop_requested) {
      if (!signals) {
        impl_->cv.wait(lock);
        continue;
      }
      // The handler only sets an atomic (all it may do), so poll it.
      impl_->cv.wait_for(lock, std::chrono::milliseconds(50));
      if (g_signal_received.load() != 0) break;
    }
  }
  Stop();
  if (signals) {
    pthread_sigmask(SIG_SETMASK, &old_mask, nullptr);
    sigaction(SIGINT, &old_int, nullptr);
    sigaction(SIGTERM, &old_term, nullptr);
  }
  return Status::Ok();
}

void Worker::Stop() {
  std::lock_guard<std::mutex> serial(impl_->stop_mu);
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    impl_->stop_requested = true;
    impl_->cv.notify_all();
    if (impl_->state != Impl::State::kRunning) return;
  }
  impl_->Shutdown(impl_->options.shutdown_grace);
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->state = Impl::State::kStopped;
}

WorkerStats Worker::stats() const {
  WorkerStats s;
  s.succeeded = impl_->counters->succeeded.load();
  s.failed = impl_->counters->failed.load();
  s.dead = impl_->counters->dead.load();
  s.malformed = impl_->counters->malformed.load();
  return s;
}

const std::string& Worker::consumer_name() const { return impl_->consumer; }

}  // namespace baton
