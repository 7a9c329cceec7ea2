// Task documents (contract/task.schema.json) as a producer in any language may write them:
// Task::FromJson with every contract rule, then the writers. Properties:
//  - a rejected document gets kInvalidArgument naming a contract field;
//  - an accepted one validates, and FromJson(ToJson()) gives the same task, payload bytes
//    included; the object form (ToJsonObject) is accepted again by FromJsonObject;
//  - the span scanner and depth counter take any text.
#include <string>

#include "baton/task.h"
#include "core/json_span.h"
#include "fuzz_check.h"
#include "fuzz_targets.h"

namespace baton::fuzz {
namespace {

const std::initializer_list<std::string_view> kTaskFields = {
    "document",      "task_id",    "namespace",         "task_type", "payload", "max_retry",
    "delay_seconds", "created_at", "execution_timeout", "extra",     "trace",   "headers"};

std::string Describe(const Task& task) { return task.ToJson(); }

void CheckSameTask(const Task& a, const Task& b) {
  BATON_FUZZ_CHECK(a.task_id == b.task_id && a.ns == b.ns && a.task_type == b.task_type &&
                       a.payload_json == b.payload_json && a.max_retry == b.max_retry &&
                       a.delay_seconds == b.delay_seconds && a.created_at == b.created_at &&
                       a.execution_timeout == b.execution_timeout && a.extra == b.extra,
                   Describe(a) + "\n  became\n  " + Describe(b));
}

}  // namespace

int FuzzTaskDocument(const std::uint8_t* data, std::size_t size) {
  const std::string_view document = AsText(data, size);
  (void)internal::JsonNestingDepth(document);

  StatusOr<Task> task = Task::FromJson(document);
  if (!task.ok()) {
    BATON_FUZZ_CHECK(NamesAField(task.status(), kTaskFields), task.status().ToString());
    return 0;
  }
  BATON_FUZZ_CHECK(task->Validate().ok(), task->Validate().ToString());

  const std::string written = task->ToJson();
  StatusOr<Task> again = Task::FromJson(written);
  BATON_FUZZ_CHECK(again.ok(), again.status().ToString() + " for " + written);
  CheckSameTask(*task, *again);

  // The parsed form: numbers may be respelled (1e5 -> 100000.0), so only "accepted again, and
  // stable from then on" holds. Printing a parsed payload recurses once per level: only for the
  // depths Baton prints as JSON (a deeper payload stays text everywhere else).
  if (internal::JsonNestingDepth(task->payload_json) > internal::kMaxPrintedJsonDepth) return 0;
  StatusOr<Task> from_object = Task::FromJsonObject(task->ToJsonObject());
  if (from_object.ok()) {
    StatusOr<Task> stable = Task::FromJson(from_object->ToJson());
    BATON_FUZZ_CHECK(stable.ok(), stable.status().ToString());
    CheckSameTask(*from_object, *stable);
  } else {
    // Only the payload's size may change with the respelling.
    BATON_FUZZ_CHECK(NamesAField(from_object.status(), {"payload"}),
                     from_object.status().ToString());
  }
  return 0;
}

}  // namespace baton::fuzz

BATON_FUZZ_MAIN(baton::fuzz::FuzzTaskDocument)
