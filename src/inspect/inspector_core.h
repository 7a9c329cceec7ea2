#pragma once
// What every Inspector operation shares: the connection, the options, argument checks and small
// reply helpers. Internal to libbaton (the public face is include/baton/inspector.h).
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "baton/inspector.h"
#include "baton/status.h"
#include "broker/redis_connection.h"

namespace baton::internal {

using Command = std::vector<std::string>;

class InspectorCore {
 public:
  // Parses the URL and connects. kInvalidArgument (bad URL) or kUnavailable.
  static StatusOr<std::unique_ptr<InspectorCore>> Open(const InspectorOptions& options);

  const InspectorOptions& options() const { return options_; }

  // One command. Error replies become a Status (StatusFromErrorReply). Reconnects first when the
  // previous command broke the connection.
  StatusOr<Reply> Call(const Command& argv);
  // Same, but an error reply is returned as a Reply of type kError (the caller decides).
  StatusOr<Reply> CallRaw(const Command& argv);
  // Many commands in one round trip; error replies stay in the result.
  StatusOr<std::vector<Reply>> Pipeline(const std::vector<Command>& commands);

  // Every key matching `pattern` of type `type`, on every server (broker/key_scan.h).
  StatusOr<std::vector<std::string>> ScanKeys(std::string_view pattern, std::string_view type);

  // The Redis server's clock, Unix ms.
  StatusOr<std::int64_t> ServerTimeMs();

  // Checks once per connection that the functions library is loaded at the version this build
  // needs (kVersionMismatch saying to run `baton init` otherwise).
  Status EnsureLibrary();

 private:
  InspectorCore(InspectorOptions options, std::unique_ptr<RedisConnection> conn)
      : options_(std::move(options)), conn_(std::move(conn)) {}
  Status EnsureConnected();

  InspectorOptions options_;
  std::unique_ptr<RedisConnection> conn_;
  bool library_checked_ = false;
};

// Every namespace with Baton keys, sorted: the directory baton:v2:namespaces (which clients add
// to) and every namespace that has a task type (baton:v2:{ns}:types, written by the functions,
// found with SCAN), since a producer need not register its namespace.
StatusOr<std::vector<std::string>> KnownNamespaces(InspectorCore& core);

// Argument checks (the contract's own rules, core/task_rules.h): kInvalidArgument naming the
// field and the pattern.
Status CheckNamespaceArg(std::string_view ns);
// The partition count of namespace `ns` (1 when it was never partitioned; docs/cluster.md).
StatusOr<int> PartitionCount(InspectorCore& core, const std::string& ns);
Status CheckTypeArg(std::string_view type);
Status CheckTaskIdArg(std::string_view id);

// The fields of a flat [name, value, name, value, ...] reply (XINFO, entry fields), by name.
std::map<std::string, const Reply*> FieldMap(const Reply& flat);
// A field as text / integer; "" / 0 when missing or nil.
std::string FieldText(const std::map<std::string, const Reply*>& fields, const std::string& name);
long long FieldInt(const std::map<std::string, const Reply*>& fields, const std::string& name);

// Error reply -> Status (a non-error reply gives OK).
Status ReplyStatus(const Reply& reply);

// A sorted-set score (Unix ms in Baton's sets) as an integer.
std::int64_t ScoreMs(const Reply& score);

}  // namespace baton::internal
