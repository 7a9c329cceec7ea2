// baton task show|cancel: one task's whole story (state, where it is, body, every error with its
// stack, events), and cancelling a task that has not started.
#include <iostream>

#include "commands.h"
#include "inspect/utf8_text.h"
#include "output.h"

namespace baton::cli {

namespace {

struct TaskArgs {
  std::string id;
  std::string ns;
};

// "lease ends in 12 s" / "lease expired 3 s ago" (server clock).
std::string LeaseText(const TaskInfo& t) {
  if (!t.lease_deadline_ms) return "no lease";
  std::int64_t left = *t.lease_deadline_ms - t.now_ms;
  if (left >= 0) return "lease ends in " + DurationText(left);
  return "lease expired " + DurationText(-left) + " ago, not yet taken back";
}

// Who holds the task's entry (XPENDING).
std::string HolderText(const TaskInfo& t) {
  if (t.leases.empty()) return "(no holder)";
  const TaskLease& l = t.leases.front();
  return "consumer " + l.consumer + " (group " + l.group + "), delivery #" +
         std::to_string(l.deliveries) + ", delivered or renewed " + DurationText(l.idle_ms) +
         " ago";
}

std::string Where(const TaskInfo& t) {
  switch (t.state) {
    case TaskState::kQueued:
      return "waiting in the stream (entry " + t.stream_id + ")";
    case TaskState::kActive:  // pending in a group: `leases` names the holder
      return "running on " + HolderText(t) + "; " + LeaseText(t) + " (entry " + t.stream_id + ")";
    case TaskState::kScheduled:
      return "delayed, due at " + WhenText(t.due_ms.value_or(0), t.now_ms);
    case TaskState::kRetry:
      return "waiting to retry, next attempt at " + WhenText(t.due_ms.value_or(0), t.now_ms);
    case TaskState::kDead:
      return "in the dead-letter queue since " + WhenText(t.dead_since_ms.value_or(0), t.now_ms);
    case TaskState::kDone:
      return "finished at " + WhenText(t.finished_ms.value_or(0), t.now_ms) +
             (t.finished_by.empty() ? "" : " by " + t.finished_by);
    case TaskState::kCancelled:
    case TaskState::kDeleted:
      return std::string(TaskStateName(t.state)) + " at " +
             WhenText(t.finished_ms.value_or(0), t.now_ms);
    case TaskState::kDropped:
      return "dropped from the dead-letter queue by its caps at " +
             WhenText(t.finished_ms.value_or(0), t.now_ms);
  }
  return "";
}

void PrintTask(const TaskInfo& t) {
  std::cout << "task       " << t.id << "\n"
            << "namespace  " << t.ns << "\n"
            << "type       " << (t.type.empty() ? "(unknown: its events are gone)" : t.type) << "\n"
            << "state      " << TaskStateName(t.state) << "\n"
            << "where      " << Where(t) << "\n"
            << "attempts   "
            << (t.state == TaskState::kDone && t.attempts == 0 ? std::string("(unknown)")
                                                               : std::to_string(t.attempts))
            << "\n";
  if (t.body) {
    std::cout << "payload    " << internal::ValidUtf8(t.body->payload) << "\n"
              << "max_retry  " << t.body->max_retry << "\n";
    if (!t.body->execution_timeout.empty()) {
      std::cout << "timeout    " << t.body->execution_timeout << " s\n";
    }
    if (!t.body->extra.empty()) {
      std::cout << "extra      " << internal::ValidUtf8(t.body->extra) << "\n";
    }
    if (!t.body->raw_fields.empty()) {
      std::cout << "raw fields (the malformed entry as its writer sent it):\n";
      for (const auto& [name, value] : t.body->raw_fields) {
        std::cout << "  " << internal::ValidUtf8(name) << " = " << internal::ValidUtf8(value)
                  << "\n";
      }
    }
  }
  if (!t.errors.empty()) {
    std::cout << "\nerrors (oldest first):\n";
    for (const TaskError& e : t.errors) {
      std::cout << "  attempt " << e.attempt << "  " << e.kind << "  " << TimeText(e.at_ms)
                << (e.worker.empty() ? "" : "  on " + e.worker) << "\n    " << e.error << "\n";
      if (!e.stack.empty()) {
        std::size_t start = 0;
        while (start < e.stack.size()) {
          std::size_t end = e.stack.find('\n', start);
          if (end == std::string::npos) end = e.stack.size();
          std::cout << "      " << e.stack.substr(start, end - start) << "\n";
          start = end + 1;
        }
      }
    }
  }
  std::cout << "\nevents (oldest first" << (t.events_complete ? "" : "; older ones not found")
            << "):\n";
  Table table({"  TIME", "FROM", "TO", "ATTEMPT", "WORKER", "ERROR"});
  for (const TaskEvent& e : t.events) {
    table.Add(
        {"  " + TimeText(e.at_ms), e.from, e.to, std::to_string(e.attempt), e.worker, e.error});
  }
  if (table.empty()) {
    std::cout << "  (none)\n";
  } else {
    table.Print(std::cout);
  }
}

int RunShow(Context& ctx, const TaskArgs& args) {
  auto inspector = ctx.OpenInspector();
  if (!inspector.ok()) return ctx.Fail("task show", inspector.status());
  auto task = (*inspector)->GetTask(args.ns, args.id);
  if (!task.ok()) {
    return ctx.Fail("task show", task.status(),
                    "Check --ns, or run 'baton doctor " + args.id + " --ns " + args.ns + "'.");
  }
  if (ctx.global.json) {
    PrintTaskJson(*task);
  } else {
    PrintTask(*task);
  }
  return kExitOk;
}

int RunCancel(Context& ctx, const TaskArgs& args) {
  auto client = ctx.OpenClient();
  if (!client.ok()) return ctx.Fail("task cancel", client.status());
  Status s = (*client)->Cancel(args.ns, args.id);
  if (!s.ok()) {
    std::string hint;
    if (s.code() == StatusCode::kConflict) {
      hint = "A running task cannot be cancelled; a dead one is removed with 'baton dlq delete'.";
    }
    return ctx.Fail("task cancel", s, hint);
  }
  if (ctx.global.json) {
    PrintJson({{"task_id", args.id}, {"namespace", args.ns}, {"state", "cancelled"}});
  } else {
    std::cout << "cancelled " << args.id << "\n";
  }
  return kExitOk;
}

}  // namespace

void AddTaskCommand(CLI::App& app, Context& ctx) {
  CLI::App* task = app.add_subcommand("task", "Show or cancel one task");
  task->require_subcommand(1);

  auto show_args = std::make_shared<TaskArgs>();
  CLI::App* show = task->add_subcommand(
      "show", "Where a task is, its body, every error with its stack, and its events");
  show->add_option("id", show_args->id, "Task id")->required();
  show->add_option("--ns", show_args->ns, "Namespace")->required();
  show->callback([&ctx, show_args] { ctx.exit_code = RunShow(ctx, *show_args); });

  auto cancel_args = std::make_shared<TaskArgs>();
  CLI::App* cancel = task->add_subcommand("cancel", "Cancel a task that has not started");
  cancel->add_option("id", cancel_args->id, "Task id")->required();
  cancel->add_option("--ns", cancel_args->ns, "Namespace")->required();
  cancel->callback([&ctx, cancel_args] { ctx.exit_code = RunCancel(ctx, *cancel_args); });
}

}  // namespace baton::cli
