#pragma once
// The Redis side of the collector: one consumer group, `baton-collector`, on every namespace's
// events stream (baton:v2:{ns}:events). Every collector process is a consumer of it, so any number
// of them share the entries; an entry is acked only after the store committed it, so a collector
// killed mid-batch leaves its entries pending, and they are claimed by a live collector (or by
// itself, under the same consumer name, after a restart) and written again, idempotently.
#include <chrono>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "baton/status.h"
#include "broker/redis_connection.h"
#include "event_decode.h"
#include "event_row.h"

namespace baton::collector {

struct StreamEntry {
  std::string id;
  StreamFields fields;
};

// Entries of one namespace's events stream.
struct EventBatch {
  std::string ns;
  std::vector<StreamEntry> entries;
};

// What the group knows of one stream (checked atomically with MULTI/EXEC).
struct StreamProgress {
  // Events trimmed from the stream before the group delivered them, since the group was created
  // (exact when known; see known).
  std::int64_t lost_total = 0;
  bool known = false;
  std::int64_t behind = 0;        // entries the group has yet to deliver (lag minus the lost)
  std::string last_delivered_id;  // the group's position
};

struct EventReaderOptions {
  std::string group = "baton-collector";
  std::string consumer;  // this collector's name in the group
  int count = 1000;      // entries per stream per read
  std::chrono::milliseconds block{1000};
  // A collector's pending entries older than this are taken over by another one (it died).
  std::chrono::milliseconds claim_idle{30000};
};

class EventReader {
 public:
  EventReader(internal::RedisConnection& conn, EventReaderOptions options);

  // The namespaces that have an events stream or are registered (baton:v2:namespaces); with
  // `scan`, also a SCAN for event streams of namespaces nobody registered.
  StatusOr<std::set<std::string>> DiscoverNamespaces(bool scan);
  // Creates the group on the streams of `namespaces` not seen before (at the stream's first
  // entry, so history still in the stream is collected) and starts reading them.
  Status Follow(const std::set<std::string>& namespaces);
  const std::set<std::string>& namespaces() const { return followed_; }

  // This consumer's own delivered-but-unacked entries (after a failed store write, or left by a
  // previous process with the same consumer name).
  StatusOr<std::vector<EventBatch>> ReadOwnPending();
  // New entries of every followed stream; blocks up to options.block when there are none.
  StatusOr<std::vector<EventBatch>> ReadNew();
  // Entries other consumers held longer than claim_idle (dead collectors), now ours.
  StatusOr<std::vector<EventBatch>> ClaimAbandoned();
  Status Ack(const std::vector<EventBatch>& batches);

  // Where the group stands on `ns`'s stream, and how many events it lost to trimming.
  StatusOr<StreamProgress> Progress(const std::string& ns);

  // Copies kind and stack from the task's error history (baton:v2:{ns}:errors) into each failure
  // row (to retry/dead with an error): the failure recorded at the same time for the same attempt.
  Status AddFailureDetails(std::vector<EventRow>& rows);

 private:
  // XREADGROUP from `from` ("0": own pending, ">": new, waiting up to options_.block).
  StatusOr<std::vector<EventBatch>> Read(const std::string& from);
  StatusOr<std::vector<EventBatch>> ParseRead(const internal::Reply& reply);
  // After NOGROUP: creates the groups of every followed stream again; returns no entries.
  StatusOr<std::vector<EventBatch>> RecreateGroups();

  internal::RedisConnection& conn_;
  EventReaderOptions options_;
  std::set<std::string> followed_;
  std::map<std::string, std::string> ns_of_stream_;
};

}  // namespace baton::collector
