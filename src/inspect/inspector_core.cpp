#include "inspect/inspector_core.h"

#include <cmath>
#include <cstdlib>
#include <set>

#include "broker/function_library.h"
#include "broker/key_scan.h"
#include "broker/keys.h"
#include "broker/partitions.h"
#include "broker/redis_open.h"
#include "core/task_rules.h"

namespace baton::internal {

StatusOr<std::unique_ptr<InspectorCore>> InspectorCore::Open(const InspectorOptions& options) {
  auto conn = OpenRedis(options.redis);
  if (!conn.ok()) return conn.status();
  return std::unique_ptr<InspectorCore>(new InspectorCore(options, std::move(*conn)));
}

Status InspectorCore::EnsureConnected() {
  if (!conn_->broken()) return Status::Ok();
  library_checked_ = false;
  return conn_->Reconnect();
}

StatusOr<Reply> InspectorCore::CallRaw(const Command& argv) {
  if (Status s = EnsureConnected(); !s.ok()) return s;
  return conn_->Command(argv);
}

StatusOr<Reply> InspectorCore::Call(const Command& argv) {
  auto reply = CallRaw(argv);
  if (!reply.ok()) return reply.status();
  if (reply->is_error()) return StatusFromErrorReply(*reply);
  return reply;
}

StatusOr<std::vector<std::string>> InspectorCore::ScanKeys(std::string_view pattern,
                                                           std::string_view type) {
  if (Status s = EnsureConnected(); !s.ok()) return s;
  return internal::ScanKeys(*conn_, pattern, type);
}

StatusOr<std::vector<Reply>> InspectorCore::Pipeline(const std::vector<Command>& commands) {
  if (commands.empty()) return std::vector<Reply>{};
  if (Status s = EnsureConnected(); !s.ok()) return s;
  for (const auto& c : commands) conn_->Append(c);
  return conn_->Flush();
}

StatusOr<std::int64_t> InspectorCore::ServerTimeMs() {
  auto reply = Call({"TIME"});
  if (!reply.ok()) return reply.status();
  if (!reply->is_array() || reply->elements.size() != 2) {
    return Status::Internal("TIME: expected two integers");
  }
  return reply->elements[0].AsInteger() * 1000 + reply->elements[1].AsInteger() / 1000;
}

Status InspectorCore::EnsureLibrary() {
  if (library_checked_) return Status::Ok();
  if (Status s = EnsureConnected(); !s.ok()) return s;
  if (Status s = CheckFunctionLibrary(*conn_); !s.ok()) return s;
  library_checked_ = true;
  return Status::Ok();
}

StatusOr<std::vector<std::string>> KnownNamespaces(InspectorCore& core) {
  static constexpr std::string_view kTypesPrefix = "baton:v2:{";
  static constexpr std::string_view kTypesSuffix = "}:types";
  std::set<std::string> found;
  auto members = core.Call({"SMEMBERS", std::string(Keys::kNamespaces)});
  if (!members.ok()) return members.status();
  for (const Reply& m : members->elements) found.insert(m.AsString());
  auto keys = core.ScanKeys("baton:v2:{*}:types", "set");
  if (!keys.ok()) return keys.status();
  for (std::string_view k : *keys) {
    if (k.size() <= kTypesPrefix.size() + kTypesSuffix.size()) continue;
    if (k.substr(0, kTypesPrefix.size()) != kTypesPrefix) continue;
    if (k.substr(k.size() - kTypesSuffix.size()) != kTypesSuffix) continue;
    std::string_view ns =
        k.substr(kTypesPrefix.size(), k.size() - kTypesPrefix.size() - kTypesSuffix.size());
    if (CheckNamespaceArg(ns).ok()) found.insert(std::string(ns));
  }
  return std::vector<std::string>(found.begin(), found.end());
}

Status CheckNamespaceArg(std::string_view ns) {
  // A partition "NS:p" of a namespace is inspected like a namespace (docs/cluster.md).
  if (IsValidStorageNamespace(ns)) return Status::Ok();
  return task_rules::CheckName("namespace", ns);
}

StatusOr<int> PartitionCount(InspectorCore& core, const std::string& ns) {
  auto count = core.Pipeline({{"HGET", std::string(kPartitionsKey), ns}});
  if (!count.ok()) return count.status();
  if (count->front().is_error()) return StatusFromErrorReply(count->front());
  return ParsePartitionCount(count->front());
}

Status CheckTypeArg(std::string_view type) { return task_rules::CheckName("task_type", type); }

Status CheckTaskIdArg(std::string_view id) { return task_rules::CheckTaskId(id); }

std::map<std::string, const Reply*> FieldMap(const Reply& flat) {
  std::map<std::string, const Reply*> fields;
  for (std::size_t i = 0; i + 1 < flat.elements.size(); i += 2) {
    fields[flat.elements[i].AsString()] = &flat.elements[i + 1];
  }
  return fields;
}

std::string FieldText(const std::map<std::string, const Reply*>& fields, const std::string& name) {
  auto it = fields.find(name);
  return it == fields.end() ? std::string() : it->second->AsString();
}

long long FieldInt(const std::map<std::string, const Reply*>& fields, const std::string& name) {
  auto it = fields.find(name);
  return it == fields.end() ? 0 : it->second->AsInteger();
}

Status ReplyStatus(const Reply& reply) {
  if (!reply.is_error()) return Status::Ok();
  return StatusFromErrorReply(reply);
}

std::int64_t ScoreMs(const Reply& score) {
  std::string text = score.AsString();
  if (text.empty()) return 0;
  return static_cast<std::int64_t>(std::llround(std::strtod(text.c_str(), nullptr)));
}

}  // namespace baton::internal
