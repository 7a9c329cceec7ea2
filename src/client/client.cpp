// baton::Client: validates requests, then enqueues them with baton_enqueue in as few round trips
// as possible (all calls of one EnqueueMany are pipelined), and cancels tasks with baton_cancel.
#include "baton/client.h"

#include <algorithm>
#include <chrono>
#include <optional>
#include <string>
#include <unordered_set>
#include <utility>

#include "broker/enqueue_call.h"
#include "broker/function_library.h"
#include "broker/functions.h"
#include "broker/keys.h"
#include "broker/namespace_settings.h"
#include "broker/partitions.h"
#include "broker/redis_connection.h"
#include "broker/redis_open.h"
#include "client/partition_admin.h"
#include "core/task_rules.h"

namespace baton {
namespace {

using internal::EnqueueItem;
using internal::Reply;

std::int64_t NowUnixSeconds() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// The scheduling part of EnqueueOptions, checked.
StatusOr<EnqueueItem> MakeItem(Task task, const EnqueueOptions& options) {
  EnqueueItem item;
  item.task = std::move(task);
  if (options.run_at) {
    item.run_at_ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(options.run_at->time_since_epoch())
            .count();
    if (item.run_at_ms <= 0) {
      return Status::InvalidArgument("run_at", "must be after 1970-01-01T00:00:00Z");
    }
  }
  if (options.unique_ttl.count() < 0) {
    return Status::InvalidArgument(
        "unique_ttl",
        "must not be negative (got " + std::to_string(options.unique_ttl.count()) + ")");
  }
  if (!options.unique_key.empty()) {
    if (options.unique_ttl.count() < 1) {
      return Status::InvalidArgument("unique_ttl",
                                     "must be at least 1 second when unique_key is set (got " +
                                         std::to_string(options.unique_ttl.count()) + ")");
    }
    item.unique_key = options.unique_key;
    item.unique_ttl_s = options.unique_ttl.count();
  }
  return item;
}

// EnqueueTask takes the task's own fields from the document: the other EnqueueOptions fields must
// be left at their defaults, or the caller would believe they applied.
Status CheckSchedulingOnly(const EnqueueOptions& scheduling) {
  const EnqueueOptions defaults;
  const char* rule = "must be left unset: EnqueueTask takes it from the task document";
  if (scheduling.task_id) return Status::InvalidArgument("scheduling.task_id", rule);
  if (scheduling.max_retry != defaults.max_retry) {
    return Status::InvalidArgument("scheduling.max_retry", rule);
  }
  if (scheduling.delay_seconds != defaults.delay_seconds) {
    return Status::InvalidArgument("scheduling.delay_seconds", rule);
  }
  if (scheduling.execution_timeout) {
    return Status::InvalidArgument("scheduling.execution_timeout", rule);
  }
  if (scheduling.extra != defaults.extra) return Status::InvalidArgument("scheduling.extra", rule);
  return Status::Ok();
}

}  // namespace

struct Client::Impl {
  ClientOptions options;
  std::unique_ptr<internal::RedisConnection> connection;
  // Namespaces this client has already recorded in baton:v2:namespaces.
  std::unordered_set<std::string> known_namespaces;
  // Partition counts of the namespaces enqueued to (docs/cluster.md, "Partitions").
  internal::PartitionCounts partitions;

  // A broken connection is reopened (and the library version checked again: the server may have
  // restarted empty) before the next operation.
  Status EnsureConnected() {
    if (!connection->broken()) return Status::Ok();
    if (Status s = connection->Reconnect(); !s.ok()) return s;
    return internal::CheckFunctionLibrary(*connection);
  }

  // Sets each item's storage_ns to its partition (reading stale partition counts first).
  Status AssignPartitions(std::vector<EnqueueItem>& items);
  StatusOr<std::vector<EnqueueResult>> Submit(std::vector<EnqueueItem>& items);
  // The storage namespaces of `ns`: its task's partition first, then the others.
  StatusOr<std::vector<std::string>> PartitionsToSearch(const std::string& ns,
                                                        const std::string& task_id);
};

Status Client::Impl::AssignPartitions(std::vector<EnqueueItem>& items) {
  std::vector<std::string> namespaces;  // distinct; usually one
  for (const EnqueueItem& item : items) {
    if (std::find(namespaces.begin(), namespaces.end(), item.task.ns) == namespaces.end()) {
      namespaces.push_back(item.task.ns);
    }
  }
  if (Status s = partitions.Refresh(*connection, namespaces); !s.ok()) return s;
  for (EnqueueItem& item : items) {
    const int count = partitions.Count(item.task.ns);
    item.storage_ns = count > 1 ? internal::PartitionNamespace(
                                      item.task.ns, internal::PartitionOf(item.task.task_id, count))
                                : std::string();
  }
  return Status::Ok();
}

StatusOr<std::vector<std::string>> Client::Impl::PartitionsToSearch(const std::string& ns,
                                                                    const std::string& task_id) {
  // Read now: a task enqueued to a partition added in the last seconds must still be found.
  if (Status s = partitions.ReadNow(*connection, ns); !s.ok()) return s;
  const int count = partitions.Count(ns);
  const int first = internal::PartitionOf(task_id, count);
  std::vector<std::string> storage = {internal::PartitionNamespace(ns, first)};
  for (int p = 0; p < count; ++p) {
    if (p != first) storage.push_back(internal::PartitionNamespace(ns, p));
  }
  return storage;
}

StatusOr<std::vector<EnqueueResult>> Client::Impl::Submit(std::vector<EnqueueItem>& items) {
  if (items.empty()) return std::vector<EnqueueResult>();
  if (Status s = EnsureConnected(); !s.ok()) return s;
  if (Status s = AssignPartitions(items); !s.ok()) return s;

  // baton:v2:namespaces is a plain directory outside any function: one SADD per new namespace per
  // client, riding in the same round trip as the enqueues.
  std::vector<std::string> sadd = {"SADD", std::string(internal::Keys::kNamespaces)};
  for (const EnqueueItem& item : items) {
    if (known_namespaces.count(item.task.ns) == 0 &&
        std::find(sadd.begin() + 2, sadd.end(), item.task.ns) == sadd.end()) {
      sadd.push_back(item.task.ns);
    }
  }
  const bool send_sadd = sadd.size() > 2;
  if (send_sadd) connection->Append(sadd);

  const std::vector<internal::EnqueueCall> calls = internal::PlanEnqueueCalls(items);
  // WAIT right after each call: on a cluster it follows that call to its primary.
  const bool wait = options.wait_replicas > 0;
  const std::vector<std::string> wait_command = {"WAIT", std::to_string(options.wait_replicas),
                                                 std::to_string(options.wait_timeout.count())};
  for (const internal::EnqueueCall& call : calls) {
    connection->Append(internal::BuildEnqueueCommand(call, items));
    if (wait) connection->Append(wait_command);
  }
  StatusOr<std::vector<Reply>> replies = connection->Flush();
  if (!replies.ok()) return replies.status();

  std::size_t next = 0;
  if (send_sadd) {
    // A failed SADD only costs a retry on the next enqueue; the tasks themselves were written.
    if (!(*replies)[next].is_error()) known_namespaces.insert(sadd.begin() + 2, sadd.end());
    ++next;
  }
  std::vector<EnqueueResult> results(items.size());
  Status first_error;
  for (const internal::EnqueueCall& call : calls) {
    Status s = internal::ReadEnqueueReply((*replies)[next++], call, items, &results);
    if (!s.ok() && first_error.ok()) first_error = s;
    if (!wait) continue;
    const Reply& acked = (*replies)[next++];
    if (s.ok() && first_error.ok() && (acked.is_error() || acked.integer < options.wait_replicas)) {
      first_error = Status::Unavailable(
          std::to_string(call.items.size()) + " " + call.ns + "/" + call.task_type +
          " task(s) written on the primary but acknowledged by only " +
          (acked.is_error() ? "0 (" + acked.str + ")" : std::to_string(acked.integer)) + " of " +
          std::to_string(options.wait_replicas) + " replicas within " +
          std::to_string(options.wait_timeout.count()) +
          " ms; it may still run, but is not known to survive a failover");
    }
  }
  if (!first_error.ok()) return first_error;
  return results;
}

Client::Client(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Client::~Client() = default;

StatusOr<std::unique_ptr<Client>> Client::Connect(const ClientOptions& options) {
  if (options.wait_replicas < 0) {
    return Status::InvalidArgument("wait_replicas", "must be 0 (no WAIT) or more");
  }
  if (options.wait_replicas > 0 && options.wait_timeout.count() <= 0) {
    // WAIT with timeout 0 blocks forever.
    return Status::InvalidArgument("wait_timeout", "must be at least 1 ms when wait_replicas > 0");
  }
  auto connection = internal::OpenRedis(options.redis);
  if (!connection.ok()) return connection.status().WithContext("connect");
  if (Status s = internal::CheckFunctionLibrary(**connection); !s.ok()) {
    return s.WithContext("connect");
  }
  auto impl = std::make_unique<Impl>();
  impl->options = options;
  impl->connection = std::move(connection).value();
  return std::unique_ptr<Client>(new Client(std::move(impl)));
}

StatusOr<Task> Client::BuildTask(const TaskRequest& request) {
  Task task;
  task.task_id = request.options.task_id ? *request.options.task_id : NewTaskId();
  task.ns = request.ns;
  task.task_type = request.task_type;
  if (request.payload_json) {
    task.payload_json = *request.payload_json;  // checked by Validate() below, kept byte for byte
  } else if (!request.payload.is_object()) {
    return Status::InvalidArgument(
        "payload", "must be a JSON object (got " +
                       std::string(internal::task_rules::JsonTypeName(request.payload)) + ")");
  } else {
    task.payload_json =
        request.payload.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  }
  task.max_retry = request.options.max_retry;
  task.delay_seconds = request.options.delay_seconds;
  task.created_at = NowUnixSeconds();
  task.execution_timeout = request.options.execution_timeout;
  task.extra = request.options.extra;
  // A payload dumped from a JSON object here is one by construction: only its size is checked.
  const auto payload_check = request.payload_json ? internal::task_rules::PayloadCheck::kFull
                                                  : internal::task_rules::PayloadCheck::kSizeOnly;
  if (Status s = internal::task_rules::CheckTask(task, payload_check); !s.ok()) return s;
  return task;
}

StatusOr<EnqueueResult> Client::Enqueue(const TaskRequest& request) {
  StatusOr<std::vector<EnqueueResult>> results =
      EnqueueMany(std::span<const TaskRequest>(&request, 1));
  if (!results.ok()) return results.status();
  return std::move(results->front());
}

StatusOr<std::vector<EnqueueResult>> Client::EnqueueMany(std::span<const TaskRequest> requests) {
  std::vector<EnqueueItem> items;
  items.reserve(requests.size());
  // One request keeps the plain "enqueue: field: rule" form; a batch says which request.
  auto where = [&](std::size_t i) {
    return requests.size() == 1 ? "enqueue" : "enqueue: requests[" + std::to_string(i) + "]";
  };
  for (std::size_t i = 0; i < requests.size(); ++i) {
    StatusOr<Task> task = BuildTask(requests[i]);
    if (!task.ok()) return task.status().WithContext(where(i));
    StatusOr<EnqueueItem> item = MakeItem(std::move(task).value(), requests[i].options);
    if (!item.ok()) return item.status().WithContext(where(i));
    items.push_back(std::move(item).value());
  }
  StatusOr<std::vector<EnqueueResult>> results = impl_->Submit(items);
  if (!results.ok()) return results.status().WithContext("enqueue");
  return results;
}

StatusOr<EnqueueResult> Client::EnqueueTask(const Task& task, const EnqueueOptions& scheduling) {
  if (Status s = CheckSchedulingOnly(scheduling); !s.ok()) return s.WithContext("enqueue");
  if (Status s = task.Validate(); !s.ok()) return s.WithContext("enqueue");
  StatusOr<EnqueueItem> item = MakeItem(task, scheduling);
  if (!item.ok()) return item.status().WithContext("enqueue");
  std::vector<EnqueueItem> items;
  items.push_back(std::move(item).value());
  StatusOr<std::vector<EnqueueResult>> results = impl_->Submit(items);
  if (!results.ok()) return results.status().WithContext("enqueue");
  return std::move(results->front());
}

Status Client::Cancel(const std::string& ns, const std::string& task_id) {
  if (Status s = internal::task_rules::CheckName("namespace", ns); !s.ok()) {
    return s.WithContext("cancel");
  }
  if (Status s = internal::task_rules::CheckTaskId(task_id); !s.ok()) {
    return s.WithContext("cancel");
  }
  if (Status s = impl_->EnsureConnected(); !s.ok()) return s.WithContext("cancel");
  internal::RedisConnection& connection = *impl_->connection;
  StatusOr<std::vector<std::string>> storage = impl_->PartitionsToSearch(ns, task_id);
  if (!storage.ok()) return storage.status().WithContext("cancel");

  // The record "STATE|TYPE|ATTEMPT|SID" names the type, hence the stream and scheduled keys. A
  // partitioned namespace: the id's partition first (where every producer puts it), then the
  // others (a task enqueued before the partition count grew).
  std::optional<Reply> record;
  std::string storage_ns;
  for (const std::string& candidate : *storage) {
    StatusOr<Reply> found =
        connection.Command({"HGET", internal::Keys(candidate).Tasks(), task_id});
    if (!found.ok()) return found.status().WithContext("cancel");
    if (found->is_error()) return internal::StatusFromErrorReply(*found).WithContext("cancel");
    if (!found->is_nil()) {
      record = std::move(found).value();
      storage_ns = candidate;
      break;
    }
  }
  if (!record) {
    return Status::NotFound("cancel: no live task " + task_id + " in namespace " + ns);
  }
  const std::string text = record->AsString();
  const std::size_t first = text.find('|');
  const std::size_t second = first == std::string::npos ? first : text.find('|', first + 1);
  if (second == std::string::npos) {
    return Status::Internal("cancel: malformed task record '" + text + "'");
  }
  const std::string type = text.substr(first + 1, second - first - 1);

  StatusOr<Reply> reply = connection.Command(internal::fn::Cancel(storage_ns, type, task_id));
  if (!reply.ok()) return reply.status().WithContext("cancel");
  if (reply->is_error()) return internal::StatusFromErrorReply(*reply).WithContext("cancel");
  if (reply->AsString() != "cancelled") {
    return Status::Internal("cancel: unexpected reply '" + reply->AsString() + "'");
  }
  return Status::Ok();
}

StatusOr<NamespaceSettings> Client::ConfigureNamespace(
    const std::string& ns, const std::vector<std::pair<std::string, std::string>>& changes) {
  if (Status s = internal::task_rules::CheckName("namespace", ns); !s.ok()) {
    return s.WithContext("configure");
  }
  if (Status s = impl_->EnsureConnected(); !s.ok()) return s.WithContext("configure");
  // Every partition of the namespace gets the same settings, in one pipeline; partition 0's reply
  // is the answer (all the same unless one was hand-edited). A change reads the count now, not
  // from the cache, to reach a partition added in the last seconds too; a read asks partition 0.
  if (!changes.empty()) {
    if (Status s = impl_->partitions.ReadNow(*impl_->connection, ns); !s.ok()) {
      return s.WithContext("configure");
    }
  }
  const int count = changes.empty() ? 1 : impl_->partitions.Count(ns);
  for (int p = 0; p < count; ++p) {
    impl_->connection->Append(
        internal::fn::Configure(internal::PartitionNamespace(ns, p), changes));
  }
  StatusOr<std::vector<Reply>> replies = impl_->connection->Flush();
  if (!replies.ok()) return replies.status().WithContext("configure");
  for (const Reply& r : *replies) {
    if (r.is_error()) return internal::StatusFromErrorReply(r).WithContext("configure");
  }
  const Reply* reply = &replies->front();
  StatusOr<NamespaceSettings> settings = internal::ParseNamespaceSettings(*reply);
  if (!settings.ok()) return settings.status().WithContext("configure");
  return settings;
}

StatusOr<int> Client::Partitions(const std::string& ns) {
  if (Status s = internal::task_rules::CheckName("namespace", ns); !s.ok()) {
    return s.WithContext("partitions");
  }
  if (Status s = impl_->EnsureConnected(); !s.ok()) return s.WithContext("partitions");
  StatusOr<int> count = internal::ReadPartitionCount(*impl_->connection, ns);
  if (!count.ok()) return count.status().WithContext("partitions");
  return count;
}

StatusOr<int> Client::SetPartitions(const std::string& ns, int count) {
  if (Status s = internal::task_rules::CheckName("namespace", ns); !s.ok()) {
    return s.WithContext("partitions");
  }
  if (Status s = impl_->EnsureConnected(); !s.ok()) return s.WithContext("partitions");
  StatusOr<int> now = internal::GrowPartitions(*impl_->connection, ns, count);
  if (!now.ok()) return now.status().WithContext("partitions");
  impl_->partitions.Set(ns, *now);  // this client's next enqueue uses it at once
  return now;
}

}  // namespace baton
