// Producer side of the C++ driver. The payload must reach Redis as the exact bytes of the case's
// payload file: TaskRequest::payload is a parsed nlohmann::json (re-serializing it would sort keys,
// turn 1.10 into 1.1 and round integers beyond 2^64), so each request carries the file's bytes in
// TaskRequest::payload_json, and Client::Enqueue makes the UUIDv7 and created_at as for any task.
#include "produce.h"

#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "baton/client.h"
#include "read_file.h"

namespace conformance {

namespace {

const char* OutcomeName(baton::EnqueueOutcome outcome) {
  switch (outcome) {
    case baton::EnqueueOutcome::kQueued:
      return "queued";
    case baton::EnqueueOutcome::kScheduled:
      return "scheduled";
    case baton::EnqueueOutcome::kDuplicate:
      return "duplicate";
    case baton::EnqueueOutcome::kUniqueConflict:
      return "unique_conflict";
  }
  return "unknown";
}

// The request a case line describes (payload left empty: it is set as raw text later).
baton::TaskRequest RequestFor(const std::string& ns, const nlohmann::json& line) {
  baton::TaskRequest request;
  request.ns = ns;
  request.task_type = line.at("task_type").get<std::string>();
  request.options.max_retry = line.at("max_retry").get<int>();
  request.options.delay_seconds = line.at("delay_seconds").get<std::int64_t>();
  if (line.contains("execution_timeout") && !line["execution_timeout"].is_null()) {
    request.options.execution_timeout = line["execution_timeout"].get<int>();
  }
  if (line.contains("task_id") && !line["task_id"].is_null()) {
    request.options.task_id = line["task_id"].get<std::string>();
  }
  if (line.contains("extra") && line["extra"].is_object()) request.options.extra = line["extra"];
  return request;
}

// Enqueues one case line; prints its result line. False (with the error on stderr) on failure.
bool EnqueueLine(baton::Client& client, const std::string& ns, const std::string& text) {
  nlohmann::json line = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (line.is_discarded() || !line.is_object()) {
    std::cerr << "produce: cases line is not a JSON object: " << text << "\n";
    return false;
  }
  const std::string case_name = line.value("case", "");
  try {
    baton::TaskRequest request = RequestFor(ns, line);
    const std::string payload_file = line.at("payload_file").get<std::string>();
    std::optional<std::string> payload = ReadFileBytes(payload_file);
    if (!payload) {
      std::cerr << "produce: " << case_name << ": cannot read " << payload_file << "\n";
      return false;
    }
    request.payload_json = std::move(*payload);
    baton::StatusOr<baton::EnqueueResult> result = client.Enqueue(request);
    if (!result.ok()) {
      std::cerr << "produce: " << case_name << ": " << result.status().ToString() << "\n";
      return false;
    }
    nlohmann::json out = {{"case", case_name},
                          {"task_id", result->task_id},
                          {"status", OutcomeName(result->outcome)}};
    std::cout << out.dump() << std::endl;
    return true;
  } catch (const nlohmann::json::exception& e) {
    std::cerr << "produce: " << case_name << ": bad cases line: " << e.what() << "\n";
    return false;
  }
}

}  // namespace

int Produce(const std::string& redis_url, const std::string& ns, const std::string& cases_path) {
  std::ifstream cases(cases_path);
  if (!cases) {
    std::cerr << "produce: cannot read " << cases_path << "\n";
    return 1;
  }
  baton::ClientOptions options;
  options.redis.url = redis_url;
  auto client = baton::Client::Connect(options);
  if (!client.ok()) {
    std::cerr << "produce: " << client.status().ToString() << "\n";
    return 1;
  }
  bool all_ok = true;
  std::string text;
  while (std::getline(cases, text)) {
    if (text.empty()) continue;
    all_ok = EnqueueLine(**client, ns, text) && all_ok;
  }
  return all_ok ? 0 : 1;
}

}  // namespace conformance
