// Consumer side of the C++ driver: a baton::Worker with one handler per conformance task type.
// Each handler appends its report line before doing anything else, so that a task that is run
// (or retried) is visible in the report even when the handler then fails.
#include "consume.h"

#include <chrono>
#include <condition_variable>
#include <iostream>
#include <mutex>
#include <stdexcept>
#include <thread>

#include "baton/worker.h"
#include "read_file.h"
#include "report.h"
#include "sha256.h"

namespace conformance {

namespace {

constexpr char kPayloadCasePrefix[] = "payload/";

std::int64_t NowUnixMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// payload_value_equal: the received payload and the corpus file, both parsed by nlohmann::json
// (the parser a C++ handler uses). null when the case has no corpus file or either side is not
// JSON: the SHA-256 then tells what arrived.
nlohmann::json PayloadValueEqual(const ConsumeArgs& args, const std::string& case_name,
                                 const std::string& payload) {
  std::string_view name(case_name);
  if (!name.starts_with(kPayloadCasePrefix)) return nullptr;
  name.remove_prefix(sizeof(kPayloadCasePrefix) - 1);
  std::optional<std::string> expected =
      ReadFileBytes(args.corpus_dir + "/" + std::string(name) + ".json");
  if (!expected) return nullptr;
  auto received_value = nlohmann::json::parse(payload, nullptr, false);
  auto expected_value = nlohmann::json::parse(*expected, nullptr, false);
  if (received_value.is_discarded()) return false;
  if (expected_value.is_discarded()) return nullptr;
  return received_value == expected_value;
}

baton::Status Echo(const ConsumeArgs& args, Report& report, baton::TaskContext& ctx) {
  const baton::Task& task = ctx.task();
  std::string case_name;
  if (auto it = task.extra.find("x_conformance_case"); it != task.extra.end() && it->is_string()) {
    case_name = it->get<std::string>();
  }
  nlohmann::json line = {
      {"type", "conf_echo"},
      {"case", case_name},
      {"task_id", task.task_id},
      {"namespace", task.ns},
      {"task_type", task.task_type},
      {"max_retry", task.max_retry},
      {"delay_seconds", task.delay_seconds},
      {"created_at", task.created_at},
      {"execution_timeout",
       task.execution_timeout ? nlohmann::json(*task.execution_timeout) : nlohmann::json(nullptr)},
      {"extra", task.extra},
      {"payload_sha256", Sha256Hex(task.payload_json)},
      {"payload_value_equal", PayloadValueEqual(args, case_name, task.payload_json)},
  };
  return report.Append(line);
}

// Fails in both C++ idioms: a thrown exception when the payload says {"panic": true}, a returned
// error Status otherwise (kInternal: kInvalidArgument would mean non-retryable).
baton::Status Fail(Report& report, baton::TaskContext& ctx) {
  baton::Status s = report.Append(
      {{"type", "conf_fail"}, {"task_id", ctx.task().task_id}, {"attempt", ctx.attempt()}});
  if (!s.ok()) return s;
  auto payload = nlohmann::json::parse(ctx.task().payload_json, nullptr, false);
  const std::string what = "conf_fail: deliberate failure on attempt " +
                           std::to_string(ctx.attempt()) + " of " + ctx.task().task_id;
  if (payload.is_object() && payload.value("panic", false)) throw std::runtime_error(what);
  return baton::Status(baton::StatusCode::kInternal, what);
}

// Sleeps cooperatively: polls ctx.cancelled(), which the worker sets at the execution_timeout.
// Returns OK even when stopped early: past the deadline the worker must count the attempt as a
// timeout whatever the handler returns (include/baton/worker.h).
baton::Status Sleep(Report& report, baton::TaskContext& ctx) {
  baton::Status s = report.Append({{"type", "conf_sleep"},
                                   {"task_id", ctx.task().task_id},
                                   {"attempt", ctx.attempt()},
                                   {"started_ms", NowUnixMs()}});
  if (!s.ok()) return s;
  auto payload = nlohmann::json::parse(ctx.task().payload_json, nullptr, false);
  std::int64_t sleep_ms = payload.is_object() ? payload.value("sleep_ms", 0) : 0;
  auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(sleep_ms);
  while (std::chrono::steady_clock::now() < until && !ctx.cancelled()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return baton::Status::Ok();
}

baton::Status Delay(Report& report, baton::TaskContext& ctx) {
  return report.Append(
      {{"type", "conf_delay"}, {"task_id", ctx.task().task_id}, {"started_ms", NowUnixMs()}});
}

baton::Status Once(Report& report, baton::TaskContext& ctx) {
  return report.Append({{"type", "conf_once"}, {"task_id", ctx.task().task_id}});
}

// Calls worker.Stop() after `seconds` unless cancelled first (the worker stopped on a signal).
class StopTimer {
 public:
  StopTimer(baton::Worker& worker, int seconds)
      : thread_([this, &worker, seconds] {
          std::unique_lock<std::mutex> lock(mutex_);
          if (!cv_.wait_for(lock, std::chrono::seconds(seconds), [this] { return done_; })) {
            worker.Stop();
          }
        }) {}
  ~StopTimer() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      done_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  bool done_ = false;
  std::thread thread_;
};

}  // namespace

int Consume(const ConsumeArgs& args) {
  Report report(args.report_path);
  if (baton::Status s = report.Open(); !s.ok()) {
    std::cerr << "consume: " << s.ToString() << "\n";
    return 1;
  }
  baton::WorkerOptions options;
  options.redis.url = args.redis_url;
  options.logger = baton::NewStderrLogger();
  options.service = "conformance-cpp";
  options.handle_signals = true;
  baton::Worker worker(options);

  // SDK defaults except a short backoff, so that conf_fail dead-letters within seconds.
  baton::TypeOptions type_options;
  type_options.retry.base = std::chrono::milliseconds(100);
  type_options.retry.max = std::chrono::seconds(1);
  struct Entry {
    const char* type;
    baton::Handler handler;
  };
  const Entry entries[] = {
      {"conf_echo", [&](baton::TaskContext& ctx) { return Echo(args, report, ctx); }},
      {"conf_fail", [&](baton::TaskContext& ctx) { return Fail(report, ctx); }},
      {"conf_sleep", [&](baton::TaskContext& ctx) { return Sleep(report, ctx); }},
      {"conf_delay", [&](baton::TaskContext& ctx) { return Delay(report, ctx); }},
      {"conf_once", [&](baton::TaskContext& ctx) { return Once(report, ctx); }},
  };
  for (const Entry& entry : entries) {
    if (baton::Status s = worker.Register(args.ns, entry.type, entry.handler, type_options);
        !s.ok()) {
      std::cerr << "consume: " << s.ToString() << "\n";
      return 1;
    }
  }
  baton::Status status;
  {
    StopTimer timer(worker, args.seconds);
    status = worker.Run();
  }
  if (!status.ok()) {
    std::cerr << "consume: " << status.ToString() << "\n";
    return 1;
  }
  return 0;
}

}  // namespace conformance
