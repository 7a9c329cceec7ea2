#pragma once
// The consumer's report file (tests/conformance/DRIVERS.md): JSON lines appended by the handlers.
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>

#include "baton/status.h"

namespace conformance {

// Appends one JSON document per line. Each line is a single write(2) to a file opened with
// O_APPEND, so the harness never reads half a line; handlers of several threads share one Report.
class Report {
 public:
  explicit Report(std::string path) : path_(std::move(path)) {}
  ~Report();
  Report(const Report&) = delete;
  Report& operator=(const Report&) = delete;

  // Opens (creates) the file. kUnavailable with the reason when it cannot.
  baton::Status Open();
  // Thread-safe. Fails (kInternal) when the line could not be written whole.
  baton::Status Append(const nlohmann::json& line);

 private:
  std::string path_;
  int fd_ = -1;
  std::mutex mutex_;
};

}  // namespace conformance
