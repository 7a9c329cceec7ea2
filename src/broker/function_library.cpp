#include "broker/function_library.h"

#include <string>

#include "broker/functions.h"

namespace baton::internal {
namespace {

const char kLibrarySource[] =
#include "function_library_source.inc"
    ;

// The version loaded on `node` (a RedisConnection::Nodes() name), "none" when the function
// does not exist.
StatusOr<std::string> LoadedVersion(RedisConnection& connection, const std::string& node) {
  StatusOr<Reply> reply = connection.CommandOnNode(node, fn::Version());
  if (!reply.ok()) return reply.status();
  if (reply->is_error()) {
    // "ERR Function not found" (Redis 7.0 wording).
    if (reply->str.find("not found") != std::string::npos) return std::string("none");
    return Status::Internal("FCALL_RO baton_v2_version: " + reply->str);
  }
  if (reply->type != Reply::Type::kString && reply->type != Reply::Type::kStatus &&
      reply->type != Reply::Type::kInteger) {
    return Status::Internal("FCALL_RO baton_v2_version: expected a string reply");
  }
  return reply->AsString();
}

// "in Redis", or "on the primary host:port" of a cluster.
std::string Where(const std::string& node) {
  return node.empty() ? "in Redis" : "on the primary " + node;
}

Status VersionMismatch(const std::string& loaded, const std::string& node) {
  return Status(StatusCode::kVersionMismatch, "functions library version " + loaded + " loaded " +
                                                  Where(node) + ", this client needs " +
                                                  std::string(kFunctionLibraryVersion) +
                                                  ": run 'baton init'");
}

}  // namespace

std::string_view FunctionLibrarySource() { return {kLibrarySource, sizeof(kLibrarySource) - 1}; }

Status LoadFunctionLibrary(RedisConnection& connection, std::string* loaded_version) {
  if (FunctionLibrarySource().empty()) {
    return Status::Internal("this build embedded no functions library (functions/*.lua missing)");
  }
  // Every primary of a cluster runs the functions for its own slots (replicas get the library
  // through replication).
  for (const std::string& node : connection.Nodes()) {
    StatusOr<Reply> reply = connection.CommandOnNode(
        node, {"FUNCTION", "LOAD", "REPLACE", std::string(FunctionLibrarySource())});
    if (!reply.ok()) return reply.status();
    if (reply->is_error()) {
      return Status::Internal("FUNCTION LOAD" + (node.empty() ? "" : " on " + node) + ": " +
                              reply->str);
    }
    StatusOr<std::string> version = LoadedVersion(connection, node);
    if (!version.ok()) return version.status();
    if (loaded_version != nullptr) *loaded_version = *version;
    if (*version != kFunctionLibraryVersion) return VersionMismatch(*version, node);
  }
  return Status::Ok();
}

Status CheckFunctionLibrary(RedisConnection& connection) {
  for (const std::string& node : connection.Nodes()) {
    StatusOr<std::string> version = LoadedVersion(connection, node);
    if (!version.ok()) return version.status();
    if (*version != kFunctionLibraryVersion) return VersionMismatch(*version, node);
  }
  return Status::Ok();
}

}  // namespace baton::internal
