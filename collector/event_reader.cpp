#include "event_reader.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <thread>

#include "broker/key_scan.h"
#include "broker/keys.h"

namespace baton::collector {

using internal::Keys;
using internal::Reply;

namespace {

// On a cluster, how long ReadNew() pauses when no namespace had a new event (it cannot BLOCK).
constexpr std::chrono::milliseconds kClusterPollPause{100};

constexpr std::string_view kEventsSuffix = "}:events";
constexpr std::string_view kKeyPrefix = "baton:v2:{";

// The namespace of an events stream key, or "" when `key` is not one.
std::string NamespaceOfEventsKey(const std::string& key) {
  if (key.rfind(kKeyPrefix, 0) != 0 || key.size() <= kKeyPrefix.size() + kEventsSuffix.size() ||
      key.compare(key.size() - kEventsSuffix.size(), kEventsSuffix.size(), kEventsSuffix) != 0) {
    return "";
  }
  return key.substr(kKeyPrefix.size(), key.size() - kKeyPrefix.size() - kEventsSuffix.size());
}

Status ReplyError(const StatusOr<Reply>& reply, std::string_view what) {
  if (!reply.ok()) return reply.status();
  if (reply->is_error()) return Status::Internal(std::string(what) + ": " + reply->str);
  return Status::Ok();
}

// A flat [name, value, name, value, ...] reply as a lookup.
const Reply* Field(const Reply& map, std::string_view name) {
  for (std::size_t i = 0; i + 1 < map.elements.size(); i += 2) {
    if (map.elements[i].str == name) return &map.elements[i + 1];
  }
  return nullptr;
}

bool IdBefore(const std::string& a, const std::string& b) {
  std::int64_t ams = 0, aseq = 0, bms = 0, bseq = 0;
  ParseStreamId(a, &ams, &aseq);
  ParseStreamId(b, &bms, &bseq);
  return std::tie(ams, aseq) < std::tie(bms, bseq);
}

// [[id, [f, v, ...] | nil], ...] -> entries (an entry whose fields are nil was trimmed while
// pending: it keeps an empty field list).
std::vector<StreamEntry> ParseEntries(const Reply& list) {
  std::vector<StreamEntry> entries;
  for (const Reply& e : list.elements) {
    if (!e.is_array() || e.elements.empty()) continue;
    StreamEntry entry;
    entry.id = e.elements[0].str;
    if (e.elements.size() > 1 && e.elements[1].is_array()) {
      const auto& kv = e.elements[1].elements;
      for (std::size_t i = 0; i + 1 < kv.size(); i += 2) {
        entry.fields.emplace_back(kv[i].str, kv[i + 1].str);
      }
    }
    entries.push_back(std::move(entry));
  }
  return entries;
}

}  // namespace

EventReader::EventReader(internal::RedisConnection& conn, EventReaderOptions options)
    : conn_(conn), options_(std::move(options)) {}

StatusOr<std::set<std::string>> EventReader::DiscoverNamespaces(bool scan) {
  std::set<std::string> found;
  auto members = conn_.Command({"SMEMBERS", std::string(Keys::kNamespaces)});
  if (Status s = ReplyError(members, "SMEMBERS"); !s.ok()) return s;
  for (const auto& m : members->elements) found.insert(m.str);
  if (scan) {
    auto keys = internal::ScanKeys(conn_, "baton:v2:{*}:events", "stream");
    if (!keys.ok()) return keys.status();
    for (const std::string& key : *keys) {
      std::string ns = NamespaceOfEventsKey(key);
      if (!ns.empty()) found.insert(std::move(ns));
    }
  }
  return found;
}

Status EventReader::Follow(const std::set<std::string>& namespaces) {
  for (const auto& ns : namespaces) {
    if (followed_.count(ns)) continue;
    const std::string key = Keys(ns).Events();
    // A new group starts at the stream's first entry and counts as read what was trimmed before
    // it existed (entries added minus length): history older than the first collector is not a
    // gap. From then on Redis counts the group's reads one by one, so events trimmed before the
    // group got them stay in its lag (see Progress).
    std::int64_t trimmed_before = 0;
    auto info = conn_.Command({"XINFO", "STREAM", key});
    if (!info.ok()) return info.status();
    if (!info->is_error()) {
      const Reply* added = Field(*info, "entries-added");
      const Reply* length = Field(*info, "length");
      if (added && length)
        trimmed_before = std::max<long long>(0, added->AsInteger() - length->AsInteger());
    }
    auto created = conn_.Command({"XGROUP", "CREATE", key, options_.group, "0", "MKSTREAM",
                                  "ENTRIESREAD", std::to_string(trimmed_before)});
    if (!created.ok()) return created.status();
    if (created->is_error() && created->str.rfind("BUSYGROUP", 0) != 0) {
      return Status::Internal("XGROUP CREATE " + key + ": " + created->str);
    }
    if (!created->is_error() && trimmed_before > 0) {
      spdlog::info(
          "namespace {}: {} events were trimmed before the first collector read the "
          "stream; collecting from its oldest entry (not counted as lost)",
          ns, trimmed_before);
    }
    followed_.insert(ns);
    ns_of_stream_[key] = ns;
  }
  return Status::Ok();
}

StatusOr<std::vector<EventBatch>> EventReader::ParseRead(const Reply& reply) {
  std::vector<EventBatch> batches;
  if (reply.is_nil()) return batches;
  if (reply.is_error()) return Status::Internal("XREADGROUP: " + reply.str);
  for (const Reply& stream : reply.elements) {
    if (stream.elements.size() != 2) continue;
    auto it = ns_of_stream_.find(stream.elements[0].str);
    if (it == ns_of_stream_.end()) continue;
    EventBatch batch{it->second, ParseEntries(stream.elements[1])};
    if (!batch.entries.empty()) batches.push_back(std::move(batch));
  }
  return batches;
}

StatusOr<std::vector<EventBatch>> EventReader::ReadOwnPending() { return Read("0"); }

StatusOr<std::vector<EventBatch>> EventReader::ReadNew() { return Read(">"); }

StatusOr<std::vector<EventBatch>> EventReader::Read(const std::string& from) {
  if (followed_.empty()) return std::vector<EventBatch>{};
  const bool wait = from == ">";
  std::vector<std::string> head = {"XREADGROUP",      "GROUP", options_.group,
                                   options_.consumer, "COUNT", std::to_string(options_.count)};
  if (conn_.cluster()) {
    // Namespaces live in different slots and one XREADGROUP cannot span slots: one read per
    // namespace, all in one pipeline (each node answers its own at once), and a short pause
    // when nothing came instead of BLOCK.
    for (const auto& [key, ns] : ns_of_stream_) {
      std::vector<std::string> argv = head;
      argv.insert(argv.end(), {"STREAMS", key, from});
      conn_.Append(argv);
    }
    auto replies = conn_.Flush();
    if (!replies.ok()) return replies.status();
    std::vector<EventBatch> batches;
    for (const Reply& reply : *replies) {
      if (reply.is_error() && reply.str.rfind("NOGROUP", 0) == 0) return RecreateGroups();
      auto parsed = ParseRead(reply);
      if (!parsed.ok()) return parsed.status();
      for (EventBatch& batch : *parsed) batches.push_back(std::move(batch));
    }
    if (wait && batches.empty()) {
      std::this_thread::sleep_for(std::min(options_.block, kClusterPollPause));
    }
    return batches;
  }
  std::vector<std::string> argv = head;
  if (wait) argv.insert(argv.end(), {"BLOCK", std::to_string(options_.block.count())});
  argv.push_back("STREAMS");
  for (const auto& [key, ns] : ns_of_stream_) argv.push_back(key);
  for (std::size_t i = 0; i < ns_of_stream_.size(); ++i) argv.push_back(from);
  auto reply = wait ? conn_.BlockingCommand(argv, options_.block) : conn_.Command(argv);
  if (!reply.ok()) return reply.status();
  if (reply->is_error() && reply->str.rfind("NOGROUP", 0) == 0) return RecreateGroups();
  return ParseRead(*reply);
}

StatusOr<std::vector<EventBatch>> EventReader::RecreateGroups() {
  // One stream read together with the others was deleted (DEL, FLUSHDB) or lost its group: the
  // whole read fails. Create the groups again (an existing one is kept) and read again next time.
  std::set<std::string> namespaces = followed_;
  followed_.clear();
  ns_of_stream_.clear();
  if (Status s = Follow(namespaces); !s.ok()) return s;
  return std::vector<EventBatch>{};
}

StatusOr<std::vector<EventBatch>> EventReader::ClaimAbandoned() {
  std::vector<EventBatch> batches;
  for (const auto& [key, ns] : ns_of_stream_) {
    conn_.Append({"XAUTOCLAIM", key, options_.group, options_.consumer,
                  std::to_string(options_.claim_idle.count()), "0-0", "COUNT",
                  std::to_string(options_.count)});
  }
  auto replies = conn_.Flush();
  if (!replies.ok()) return replies.status();
  std::size_t i = 0;
  for (const auto& [key, ns] : ns_of_stream_) {
    const Reply& r = (*replies)[i++];
    if (r.is_error() && r.str.rfind("NOGROUP", 0) == 0) return RecreateGroups();
    if (r.is_error()) return Status::Internal("XAUTOCLAIM " + key + ": " + r.str);
    if (r.elements.size() < 2) continue;
    EventBatch batch{ns, ParseEntries(r.elements[1])};
    // Entries trimmed while a dead collector held them: Redis drops them from the PEL and lists
    // their ids. They are kept as entries without fields, so the store records their loss.
    if (r.elements.size() > 2) {
      for (const auto& id : r.elements[2].elements) batch.entries.push_back({id.str, {}});
    }
    if (!batch.entries.empty()) batches.push_back(std::move(batch));
  }
  return batches;
}

Status EventReader::Ack(const std::vector<EventBatch>& batches) {
  for (const auto& batch : batches) {
    std::vector<std::string> argv = {"XACK", Keys(batch.ns).Events(), options_.group};
    for (const auto& e : batch.entries) argv.push_back(e.id);
    conn_.Append(argv);
  }
  auto replies = conn_.Flush();
  if (!replies.ok()) return replies.status();
  for (const auto& r : *replies) {
    if (r.is_error()) return Status::Internal("XACK: " + r.str);
  }
  return Status::Ok();
}

StatusOr<StreamProgress> EventReader::Progress(const std::string& ns) {
  const std::string key = Keys(ns).Events();
  conn_.Append({"MULTI"});
  conn_.Append({"XINFO", "STREAM", key});
  conn_.Append({"XINFO", "GROUPS", key});
  conn_.Append({"EXEC"});
  auto replies = conn_.Flush();
  if (!replies.ok()) return replies.status();
  const Reply& exec = replies->back();
  StreamProgress progress;
  if (!exec.is_array() || exec.elements.size() != 2) return progress;  // stream gone meanwhile
  const Reply& stream = exec.elements[0];
  const Reply& groups = exec.elements[1];
  if (stream.is_error() || groups.is_error()) return progress;
  const Reply* group = nullptr;
  for (const auto& g : groups.elements) {
    const Reply* name = Field(g, "name");
    if (name && name->str == options_.group) group = &g;
  }
  if (!group) return progress;
  const Reply* last_delivered = Field(*group, "last-delivered-id");
  const Reply* lag = Field(*group, "lag");
  const Reply* length = Field(stream, "length");
  const Reply* last_generated = Field(stream, "last-generated-id");
  const Reply* first = Field(stream, "first-entry");
  if (!last_delivered || !lag || !length || !last_generated) return progress;
  progress.last_delivered_id = last_delivered->str;
  if (lag->is_nil()) return progress;  // Redis cannot tell (entries deleted by XDEL)
  const std::int64_t lag_count = lag->AsInteger();
  // Redis counts the group's reads one by one, so entries trimmed before the group reached them
  // stay in its lag for good: caught up, the lag is exactly the events lost; behind the first
  // entry still in the stream, it is the lost ones plus the whole stream.
  if (last_delivered->str == last_generated->str) {
    progress.lost_total = lag_count;
    progress.known = true;
  } else if (first && first->is_array() && !first->elements.empty() &&
             IdBefore(last_delivered->str, first->elements[0].str)) {
    progress.lost_total = lag_count - length->AsInteger();
    progress.behind = length->AsInteger();
    progress.known = true;
  } else {
    progress.behind = lag_count;  // an upper bound: it may include lost events
  }
  return progress;
}

Status EventReader::AddFailureDetails(std::vector<EventRow>& rows) {
  std::vector<EventRow*> failures;
  for (auto& r : rows) {
    if ((r.to == "retry" || r.to == "dead") && !r.error.empty()) failures.push_back(&r);
  }
  if (failures.empty()) return Status::Ok();
  for (const EventRow* r : failures) conn_.Append({"HGET", Keys(r->ns).Errors(), r->task_id});
  auto counters = conn_.Flush();
  if (!counters.ok()) return counters.status();
  // The newest few failures of each task: the one of this event is among them unless the task
  // failed many more times since.
  constexpr std::int64_t kLookBack = 5;
  std::vector<std::size_t> asked;
  for (std::size_t i = 0; i < failures.size(); ++i) {
    const std::int64_t n = (*counters)[i].AsInteger();
    if (n <= 0) continue;
    std::vector<std::string> argv = {"HMGET", Keys(failures[i]->ns).Errors()};
    for (std::int64_t k = n; k >= std::max<std::int64_t>(1, n - kLookBack + 1); --k) {
      argv.push_back(failures[i]->task_id + "|" + std::to_string(k));
    }
    conn_.Append(argv);
    asked.push_back(i);
  }
  if (asked.empty()) return Status::Ok();
  auto histories = conn_.Flush();
  if (!histories.ok()) return histories.status();
  for (std::size_t j = 0; j < asked.size(); ++j) {
    EventRow& row = *failures[asked[j]];
    const nlohmann::json* best = nullptr;
    nlohmann::json parsed_best;
    std::int64_t best_distance = 0;
    for (const auto& value : (*histories)[j].elements) {
      if (value.is_nil()) continue;
      auto failure = nlohmann::json::parse(value.str, nullptr, false);
      if (!failure.is_object() || failure.value("attempt", -1) != row.attempt) continue;
      const std::int64_t distance =
          std::llabs(failure.value("at_ms", std::int64_t{0}) - row.entry_ms);
      if (!best || distance < best_distance) {
        parsed_best = std::move(failure);
        best = &parsed_best;
        best_distance = distance;
      }
    }
    if (best && best_distance <= 1000) {
      if (best->contains("kind") && (*best)["kind"].is_string()) row.kind = (*best)["kind"];
      if (best->contains("stack") && (*best)["stack"].is_string()) row.stack = (*best)["stack"];
    }
  }
  return Status::Ok();
}

}  // namespace baton::collector
