#pragma once
// `driver produce`: enqueues the tasks of a cases file with baton::Client.
#include <string>

namespace conformance {

// Returns the process exit status: 0 when every enqueue call succeeded, 1 otherwise (the error on
// stderr). Prints {"case", "task_id", "status"} per task on stdout.
int Produce(const std::string& redis_url, const std::string& ns, const std::string& cases_path);

}  // namespace conformance
