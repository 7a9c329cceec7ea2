#pragma once
// One task's share of one events-stream entry: the unit the collector stores. An entry that
// moved N tasks (a batch) becomes N rows with idx 0..N-1; (ns, entry_ms, entry_seq, idx) is
// unique, which makes every write idempotent (docs/collector.md).
#include <cstdint>
#include <string>

namespace baton::collector {

struct EventRow {
  std::string ns;
  std::int64_t entry_ms = 0;   // the entry id's time: when the transition happened (Redis clock)
  std::int64_t entry_seq = 0;  // the entry id's sequence number
  std::int64_t idx = 0;        // position of the task in the entry's `ids`
  std::string task_id;
  std::string type;
  std::string from;  // state before
  std::string to;    // state after
  std::int64_t attempt = 0;
  std::string worker;  // consumer name, "reclaim", or ""
  std::string error;   // failures only
  // Copied from baton:v2:{ns}:errors when the collector read the event (failures only; empty when
  // the history was gone by then, e.g. the task succeeded on a later attempt).
  std::string kind;
  std::string stack;
};

// Who a worker is, read from its consumer name `<service>:<host>:<pid>:<6 hex>:<language>`
// (docs/protocol.md). Other names: language "unknown", host "".
struct WorkerIdentity {
  std::string service;
  std::string host;
  std::string language = "unknown";
};
WorkerIdentity ParseWorkerName(const std::string& consumer);

}  // namespace baton::collector
