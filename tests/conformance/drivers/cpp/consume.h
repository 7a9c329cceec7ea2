#pragma once
// `driver consume`: runs a baton::Worker with the conformance handlers for a while.
#include <string>

namespace conformance {

struct ConsumeArgs {
  std::string redis_url;
  std::string ns;
  std::string report_path;
  std::string corpus_dir;
  int seconds = 60;
};

// Runs until `seconds` passed or SIGTERM/SIGINT, then stops gracefully. Returns the exit status.
int Consume(const ConsumeArgs& args);

}  // namespace conformance
