#include "report.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace conformance {

Report::~Report() {
  if (fd_ >= 0) ::close(fd_);
}

baton::Status Report::Open() {
  fd_ = ::open(path_.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd_ < 0) {
    return baton::Status::Unavailable("report " + path_ + ": " + std::strerror(errno));
  }
  return baton::Status::Ok();
}

baton::Status Report::Append(const nlohmann::json& line) {
  // Invalid UTF-8 in a string (which a correct SDK never delivers) is replaced rather than thrown,
  // so the harness sees the damage in the report instead of a missing line.
  std::string text = line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  std::lock_guard<std::mutex> lock(mutex_);
  ssize_t written = ::write(fd_, text.data(), text.size());
  if (written != static_cast<ssize_t>(text.size())) {
    return baton::Status::Internal("report " + path_ + ": short write: " + std::strerror(errno));
  }
  return baton::Status::Ok();
}

}  // namespace conformance
