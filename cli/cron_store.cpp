#include "cron_store.h"

#include <algorithm>

#include "core/keys.h"
#include "scheduler/cron_ticker.h"

namespace baton::cli {

namespace {

const std::string kCronKey(internal::Keys::kCron);

StatusOr<internal::Reply> Checked(StatusOr<internal::Reply> reply) {
  if (!reply.ok()) return reply;
  if (reply->is_error()) return internal::StatusFromErrorReply(*reply);
  return reply;
}

}  // namespace

StatusOr<std::optional<std::string>> CronStore::Get(const std::string& name) {
  auto reply = Checked(conn_->Command({"HGET", kCronKey, name}));
  if (!reply.ok()) return reply.status();
  if (reply->is_nil()) return std::optional<std::string>();
  return std::optional<std::string>(reply->str);
}

StatusOr<std::vector<std::pair<std::string, std::string>>> CronStore::List() {
  auto reply = Checked(conn_->Command({"HGETALL", kCronKey}));
  if (!reply.ok()) return reply.status();
  std::vector<std::pair<std::string, std::string>> jobs;
  for (std::size_t i = 0; i + 1 < reply->elements.size(); i += 2) {
    jobs.emplace_back(reply->elements[i].AsString(), reply->elements[i + 1].AsString());
  }
  std::sort(jobs.begin(), jobs.end());
  return jobs;
}

Status CronStore::Put(const std::string& name, const std::string& json) {
  auto reply = Checked(conn_->Command({"HSET", kCronKey, name, json}));
  if (!reply.ok()) return reply.status();
  return Announce(name);
}

Status CronStore::Remove(const std::string& name) {
  auto reply = Checked(conn_->Command({"HDEL", kCronKey, name}));
  if (!reply.ok()) return reply.status();
  if (reply->AsInteger() == 0) return Status::NotFound("no cron job named " + name);
  return Announce(name);
}

Status CronStore::Announce(const std::string& name) {
  auto reply =
      Checked(conn_->Command({"PUBLISH", std::string(internal::kCronChangedChannel), name}));
  return reply.ok() ? Status::Ok() : reply.status();
}

}  // namespace baton::cli
