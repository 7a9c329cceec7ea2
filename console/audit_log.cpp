#include "audit_log.h"

#include "sessions.h"

namespace baton::console {

using collector::AsInt;
using collector::SqlValue;

AuditEntry Audited(std::string action, std::string ns, std::string target,
                   std::vector<std::string> task_ids, std::string outcome, std::string detail) {
  AuditEntry e;
  e.action = std::move(action);
  e.ns = std::move(ns);
  e.target = std::move(target);
  e.task_ids = std::move(task_ids);
  e.outcome = std::move(outcome);
  e.detail = std::move(detail);
  return e;
}

StatusOr<AuditRef> AppendAudit(collector::SqlDatabase& db, const AuditEntry& entry) {
  nlohmann::json ids = nlohmann::json::array();
  for (std::size_t i = 0; i < entry.task_ids.size() && i < kMaxAuditTaskIds; ++i) {
    ids.push_back(entry.task_ids[i]);
  }
  std::string detail = entry.detail;
  if (entry.task_ids.size() > kMaxAuditTaskIds) {
    detail += (detail.empty() ? "" : "; ") + std::to_string(entry.task_ids.size()) +
              " tasks, the first " + std::to_string(kMaxAuditTaskIds) + " listed";
  }
  AuditRef ref{entry.at_ms, RandomToken().substr(0, 16)};
  auto inserted = db.Query(
      "INSERT INTO audit_log (at_ms, id, user_name, role, action, ns, target, task_ids, outcome,"
      " detail, remote) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)",
      {ref.at_ms, ref.id, entry.user, entry.role, entry.action, entry.ns, entry.target,
       ids.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace), entry.outcome, detail,
       entry.remote});
  if (!inserted.ok()) return inserted.status();
  return ref;
}

Status SetAuditOutcome(collector::SqlDatabase& db, const AuditRef& ref, const std::string& outcome,
                       const std::string& detail) {
  return db
      .Query("UPDATE audit_log SET outcome = $1, detail = $2 WHERE at_ms = $3 AND id = $4",
             {outcome, detail, ref.at_ms, ref.id})
      .status();
}

StatusOr<nlohmann::json> QueryAudit(collector::SqlDatabase& db, std::int64_t limit,
                                    std::int64_t offset) {
  auto rows = db.Query(
      "SELECT at_ms, user_name, role, action, ns, target, task_ids, outcome, detail, remote"
      " FROM audit_log ORDER BY at_ms DESC, id DESC LIMIT $1 OFFSET $2",
      {limit, offset});
  if (!rows.ok()) return rows.status();
  nlohmann::json entries = nlohmann::json::array();
  for (const auto& r : *rows) {
    const auto text = [&r](std::size_t i) {
      const auto* s = std::get_if<std::string>(&r[i]);
      return s ? *s : std::string();
    };
    nlohmann::json ids = nlohmann::json::parse(text(6), nullptr, false);
    if (ids.is_discarded()) ids = nlohmann::json::array();
    entries.push_back({{"at_ms", AsInt(r[0])},
                       {"user", text(1)},
                       {"role", text(2)},
                       {"action", text(3)},
                       {"ns", text(4)},
                       {"target", text(5)},
                       {"task_ids", ids},
                       {"outcome", text(7)},
                       {"detail", text(8)},
                       {"remote", text(9)}});
  }
  return nlohmann::json{{"entries", entries}};
}

}  // namespace baton::console
