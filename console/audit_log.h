#pragma once
// The audit log of operator actions (table audit_log of the store, schema version 2): who did
// what, when, to which tasks, and how it ended.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "baton/status.h"
#include "sql_database.h"

namespace baton::console {

struct AuditEntry {
  std::int64_t at_ms = 0;
  std::string user;
  std::string role;
  std::string action;  // login, login_failed, logout, replay, edit_replay, delete, bulk_replay,
                       // bulk_delete, cron_enable, cron_disable
  std::string ns;
  std::string target;                 // a task id, a filter, a cron job name
  std::vector<std::string> task_ids;  // the tasks it touched (bulk: the ones it tried)
  std::string outcome;                // "ok" or the error
  std::string detail;
  std::string remote;  // the client's address
};

// An entry of `action`; the console fills in the time, the user, the role and the address.
AuditEntry Audited(std::string action, std::string ns, std::string target,
                   std::vector<std::string> task_ids, std::string outcome, std::string detail = "");

// At most this many ids are stored per entry; `detail` then says how many there were.
inline constexpr std::size_t kMaxAuditTaskIds = 10000;

// Where a written entry is, to record its outcome later.
struct AuditRef {
  std::int64_t at_ms = 0;
  std::string id;
};

StatusOr<AuditRef> AppendAudit(collector::SqlDatabase& db, const AuditEntry& entry);
// Sets the outcome (and detail) of a written entry: an action records "started" before it runs,
// then how it ended, so a console killed halfway still leaves who started what.
Status SetAuditOutcome(collector::SqlDatabase& db, const AuditRef& ref, const std::string& outcome,
                       const std::string& detail);

// {"entries": [...], newest first}.
StatusOr<nlohmann::json> QueryAudit(collector::SqlDatabase& db, std::int64_t limit,
                                    std::int64_t offset);

}  // namespace baton::console
