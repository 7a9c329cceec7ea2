#include "cron/cron_store.h"

#include <algorithm>

#include "broker/keys.h"
#include "broker/protocol_gen.h"

namespace baton::internal {
namespace {

const std::string kCronKey(Keys::kCron);
const std::string kChangedChannel(protocol::kChannelCronChanged);

std::vector<std::string> Announcement(const std::string& name) {
  return {"PUBLISH", kChangedChannel, name};
}

// An error reply becomes its Status; I/O failures pass through.
StatusOr<Reply> Checked(StatusOr<Reply> reply) {
  if (!reply.ok()) return reply;
  if (reply->is_error()) return StatusFromErrorReply(*reply);
  return reply;
}

// The first error reply of a pipeline as a Status, or OK.
Status FirstError(const std::vector<Reply>& replies) {
  for (const Reply& reply : replies) {
    if (reply.is_error()) return StatusFromErrorReply(reply);
  }
  return Status::Ok();
}

}  // namespace

StatusOr<std::optional<std::string>> CronStore::Get(const std::string& name) {
  auto reply = Checked(conn_.Command({"HGET", kCronKey, name}));
  if (!reply.ok()) return reply.status();
  if (reply->is_nil()) return std::optional<std::string>();
  return std::optional<std::string>(reply->str);
}

StatusOr<std::vector<std::pair<std::string, std::string>>> CronStore::List() {
  auto reply = Checked(conn_.Command({"HGETALL", kCronKey}));
  if (!reply.ok()) return reply.status();
  std::vector<std::pair<std::string, std::string>> jobs;
  for (std::size_t i = 0; i + 1 < reply->elements.size(); i += 2) {
    jobs.emplace_back(reply->elements[i].AsString(), reply->elements[i + 1].AsString());
  }
  std::sort(jobs.begin(), jobs.end());
  return jobs;
}

Status CronStore::Put(const std::string& name, const std::string& json) {
  conn_.Append({"HSET", kCronKey, name, json});
  conn_.Append(Announcement(name));
  auto replies = conn_.Flush();
  if (!replies.ok()) return replies.status();
  return FirstError(*replies);
}

StatusOr<bool> CronStore::Add(const std::string& name, const std::string& json) {
  auto added = Checked(conn_.Command({"HSETNX", kCronKey, name, json}));
  if (!added.ok()) return added.status();
  if (added->AsInteger() == 0) return false;
  if (auto announced = Checked(conn_.Command(Announcement(name))); !announced.ok()) {
    return announced.status();
  }
  return true;
}

StatusOr<bool> CronStore::Replace(const std::string& name, const std::string& expected,
                                  const std::string& json) {
  conn_.Append({"WATCH", kCronKey});
  conn_.Append({"HGET", kCronKey, name});
  auto read = conn_.Flush();
  if (!read.ok()) return read.status();
  Status read_error = FirstError(*read);
  if (!read_error.ok() || (*read)[1].is_nil() || (*read)[1].str != expected) {
    // Leave the connection without a WATCH for the next call (best effort: a broken connection
    // loses it anyway).
    (void)conn_.CommandAt(kCronKey, {"UNWATCH"});  // on a cluster, the node that has the WATCH
    if (!read_error.ok()) return read_error;
    return false;
  }
  conn_.Append({"MULTI"});
  conn_.Append({"HSET", kCronKey, name, json});
  conn_.Append(Announcement(name));
  conn_.Append({"EXEC"});
  auto written = conn_.Flush();
  if (!written.ok()) return written.status();
  if (Status s = FirstError(*written); !s.ok()) return s;
  // EXEC answers nil when the hash changed after WATCH: nothing was written. Otherwise the
  // replies of HSET and PUBLISH, either of which may be an error.
  const Reply& exec = written->back();
  if (exec.is_nil()) return false;
  if (Status s = FirstError(exec.elements); !s.ok()) return s;
  return true;
}

Status CronStore::Remove(const std::string& name) {
  auto removed = Checked(conn_.Command({"HDEL", kCronKey, name}));
  if (!removed.ok()) return removed.status();
  if (removed->AsInteger() == 0) return Status::NotFound("no cron job named " + name);
  auto announced = Checked(conn_.Command(Announcement(name)));
  return announced.ok() ? Status::Ok() : announced.status();
}

}  // namespace baton::internal
