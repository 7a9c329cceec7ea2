#pragma once
// Everything the collector writes to the store. Ingest() applies a batch of event rows in one
// transaction and is idempotent: rows already stored (the same (ns, entry id, idx)) are skipped,
// and every rollup, run pairing and worker count is derived from the newly inserted rows only,
// so a batch replayed after a crash changes nothing (docs/collector.md, "Exactly once in the
// store").
#include <cstdint>
#include <string>
#include <vector>

#include "baton/status.h"
#include "event_row.h"
#include "sql_database.h"

namespace baton::collector {

struct IngestResult {
  std::int64_t inserted = 0;    // rows new to the store
  std::int64_t duplicates = 0;  // rows it already had (a replay)
};

// One (namespace, type) as the sampler read it from Redis.
struct QueueSample {
  std::string ns;
  std::string type;
  std::int64_t at_ms = 0;
  std::int64_t ready = 0, in_flight = 0, delayed = 0, retrying = 0, dead = 0;
  std::int64_t consumers = 0, live_consumers = 0;
};

// One consumer of a type's group as the sampler read it.
struct ConsumerSample {
  std::string name;
  std::string ns;
  std::string type;
  std::int64_t pending = 0;
  std::int64_t last_live_ms = 0;  // when it last got work or heartbeated (now - idle)
};

class StoreWriter {
 public:
  explicit StoreWriter(SqlDatabase& db) : db_(db) {}

  StatusOr<IngestResult> Ingest(const std::vector<EventRow>& rows);

  // Stores queue samples (a sample of the same (ns, type, at_ms) replaces the older one) and
  // the consumers' liveness.
  Status WriteSamples(const std::vector<QueueSample>& queues,
                      const std::vector<ConsumerSample>& consumers);

  // Records that the events stream of `ns` lost events no collector read: `lost_total` is the
  // namespace's running total (a repeated report of the same total changes nothing).
  Status RecordGap(const std::string& ns, std::int64_t now_ms, std::int64_t lost_total,
                   const std::string& after_entry);
  // The largest lost_total recorded for `ns` (0 when none).
  StatusOr<std::int64_t> LostTotal(const std::string& ns);

  // Keeps an entry that is not a well-formed event, with why.
  Status RecordRejected(const std::string& ns, const std::string& entry_id,
                        const std::string& reason, const std::string& fields_json,
                        std::int64_t now_ms);

 private:
  SqlDatabase& db_;
};

// Runs `prefix` + " VALUES ($1,..),(..)" + " " + `suffix` over `rows` (each of `columns` values)
// in chunks that fit every engine's parameter limit; returns the rows all chunks returned.
StatusOr<std::vector<SqlRow>> InsertMany(SqlDatabase& db, const std::string& prefix,
                                         std::size_t columns, const std::vector<SqlRow>& rows,
                                         const std::string& suffix);

}  // namespace baton::collector
