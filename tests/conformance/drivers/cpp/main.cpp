// The C++ conformance driver (tests/conformance/DRIVERS.md), built on the public API only
// (include/baton/*.h):
//   baton_conformance_cpp produce --redis URL --ns NS --cases FILE
//   baton_conformance_cpp consume --redis URL --ns NS --report FILE --corpus DIR --seconds N
#include <charconv>
#include <iostream>
#include <map>
#include <string>

#include "consume.h"
#include "produce.h"

namespace {

constexpr int kUsageExit = 2;

int Usage(const std::string& why) {
  std::cerr << "baton_conformance_cpp: " << why
            << "\nusage: baton_conformance_cpp produce --redis URL --ns NS --cases FILE\n"
               "       baton_conformance_cpp consume --redis URL --ns NS --report FILE "
               "--corpus DIR --seconds N\n";
  return kUsageExit;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return Usage("missing mode");
  const std::string mode = argv[1];
  std::map<std::string, std::string> options;
  for (int i = 2; i < argc; i += 2) {
    std::string name = argv[i];
    if (!name.starts_with("--") || i + 1 >= argc) return Usage("bad option " + name);
    options[name.substr(2)] = argv[i + 1];
  }
  auto need = [&](const char* name) -> const std::string* {
    auto it = options.find(name);
    return it == options.end() ? nullptr : &it->second;
  };
  if (mode == "produce") {
    const std::string* redis = need("redis");
    const std::string* ns = need("ns");
    const std::string* cases = need("cases");
    if (!redis || !ns || !cases) return Usage("produce needs --redis, --ns and --cases");
    return conformance::Produce(*redis, *ns, *cases);
  }
  if (mode == "consume") {
    conformance::ConsumeArgs args;
    const std::string* redis = need("redis");
    const std::string* ns = need("ns");
    const std::string* report = need("report");
    const std::string* corpus = need("corpus");
    const std::string* seconds = need("seconds");
    if (!redis || !ns || !report || !corpus || !seconds) {
      return Usage("consume needs --redis, --ns, --report, --corpus and --seconds");
    }
    args.redis_url = *redis;
    args.ns = *ns;
    args.report_path = *report;
    args.corpus_dir = *corpus;
    auto [end, ec] =
        std::from_chars(seconds->data(), seconds->data() + seconds->size(), args.seconds);
    if (ec != std::errc() || end != seconds->data() + seconds->size() || args.seconds < 1) {
      return Usage("--seconds must be a positive integer (got " + *seconds + ")");
    }
    return conformance::Consume(args);
  }
  return Usage("unknown mode " + mode);
}
