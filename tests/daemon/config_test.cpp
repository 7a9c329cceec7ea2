// batond's settings: defaults, flags, environment, config file, precedence and validation.
#include "config.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "health_server.h"
#include "log.h"

namespace baton::batond {
namespace {

ParsedCommandLine Parse(std::vector<std::string> args) {
  args.insert(args.begin(), "batond");
  std::vector<const char*> argv;
  for (const std::string& a : args) argv.push_back(a.c_str());
  return ParseCommandLine(static_cast<int>(argv.size()), argv.data());
}

// A fresh temporary directory, removed at the end of the test.
class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "batond-config-XXXXXX").string();
    if (mkdtemp(tmpl.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// Sets an environment variable for the duration of one test.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) { setenv(name, value, 1); }
  ~ScopedEnv() { unsetenv(name_); }

 private:
  const char* name_;
};

TEST(ConfigTest, Defaults) {
  ParsedCommandLine p = Parse({});
  ASSERT_TRUE(p.config.has_value());
  const DaemonConfig& c = *p.config;
  EXPECT_EQ(c.redis.url, "redis://127.0.0.1:6379");
  EXPECT_TRUE(c.namespaces.empty());
  EXPECT_EQ(c.promote_batch, 1000);
  EXPECT_EQ(c.reaper_interval.count(), 1000);
  EXPECT_EQ(c.reclaim_batch, 100);
  EXPECT_EQ(c.discovery_interval.count(), 30000);
  EXPECT_EQ(c.scan_interval.count(), 300);
  EXPECT_EQ(c.cron_grace.count(), 10);
  EXPECT_TRUE(c.cron);
  EXPECT_EQ(c.health, "");
  EXPECT_EQ(c.log_level, "info");
  EXPECT_EQ(c.log_format, "text");
  EXPECT_FALSE(c.load_functions);
  EXPECT_EQ(c.instance.rfind("batond:", 0), 0u) << c.instance;
}

TEST(ConfigTest, Flags) {
  ParsedCommandLine p =
      Parse({"--redis-url", "redis://user:secret@10.0.0.1:6380/2", "--namespaces", "orders,mail",
             "--scan-interval-s", "60", "--promote-batch", "50", "--no-cron", "--health",
             "127.0.0.1:8089", "--log-format", "json", "--load-functions", "--instance", "b1"});
  ASSERT_TRUE(p.config.has_value());
  const DaemonConfig& c = *p.config;
  EXPECT_EQ(c.redis.url, "redis://user:secret@10.0.0.1:6380/2");
  EXPECT_EQ(c.namespaces, (std::vector<std::string>{"orders", "mail"}));
  EXPECT_EQ(c.scan_interval.count(), 60);
  EXPECT_EQ(c.promote_batch, 50);
  EXPECT_FALSE(c.cron);
  EXPECT_EQ(c.health, "127.0.0.1:8089");
  EXPECT_EQ(c.log_format, "json");
  EXPECT_TRUE(c.load_functions);
  EXPECT_EQ(c.instance, "b1");
}

TEST(ConfigTest, Environment) {
  ScopedEnv url("BATON_REDIS_URL", "redis://127.0.0.1:7000");
  ScopedEnv reaper("BATON_REAPER_INTERVAL_MS", "2500");
  ScopedEnv cron("BATON_CRON", "false");
  ScopedEnv ns("BATON_NAMESPACES", "a,b");
  ParsedCommandLine p = Parse({});
  ASSERT_TRUE(p.config.has_value());
  EXPECT_EQ(p.config->redis.url, "redis://127.0.0.1:7000");
  EXPECT_EQ(p.config->reaper_interval.count(), 2500);
  EXPECT_FALSE(p.config->cron);
  EXPECT_EQ(p.config->namespaces, (std::vector<std::string>{"a", "b"}));
  // A flag beats the environment.
  ParsedCommandLine q = Parse({"--reaper-interval-ms", "900"});
  ASSERT_TRUE(q.config.has_value());
  EXPECT_EQ(q.config->reaper_interval.count(), 900);
}

TEST(ConfigTest, BooleanSpellings) {
  for (const char* off : {"false", "0", "off", "no"}) {
    ScopedEnv cron("BATON_CRON", off);
    ParsedCommandLine p = Parse({});
    ASSERT_TRUE(p.config.has_value()) << off;
    EXPECT_FALSE(p.config->cron) << off;
  }
  for (const char* on : {"true", "1", "on", "yes"}) {
    ScopedEnv load("BATON_LOAD_FUNCTIONS", on);
    ParsedCommandLine p = Parse({});
    ASSERT_TRUE(p.config.has_value()) << on;
    EXPECT_TRUE(p.config->load_functions) << on;
  }
}

TEST(ConfigTest, ConfigFile) {
  TempDir dir;
  const std::string path = dir.path() + "/batond.toml";
  std::ofstream(path) << "# batond settings\n"
                         "redis-url = \"redis://127.0.0.1:7001\"\n"
                         "namespaces = [\"orders\", \"mail\"]\n"
                         "reaper-interval-ms = 250\n"
                         "cron = false\n"
                         "log-level = \"debug\"\n";
  ParsedCommandLine p = Parse({"--config", path});
  ASSERT_TRUE(p.config.has_value());
  EXPECT_EQ(p.config->redis.url, "redis://127.0.0.1:7001");
  EXPECT_EQ(p.config->namespaces, (std::vector<std::string>{"orders", "mail"}));
  EXPECT_EQ(p.config->reaper_interval.count(), 250);
  EXPECT_FALSE(p.config->cron);
  EXPECT_EQ(p.config->log_level, "debug");

  // Precedence: flag > file > environment.
  ScopedEnv env_url("BATON_REDIS_URL", "redis://127.0.0.1:7002");
  ScopedEnv env_level("BATON_LOG_LEVEL", "warn");
  ScopedEnv env_batch("BATON_PROMOTE_BATCH", "77");
  ParsedCommandLine q = Parse({"--config", path, "--log-level", "error"});
  ASSERT_TRUE(q.config.has_value());
  EXPECT_EQ(q.config->redis.url, "redis://127.0.0.1:7001");  // file beats environment
  EXPECT_EQ(q.config->log_level, "error");                   // flag beats file
  EXPECT_EQ(q.config->promote_batch, 77);                    // environment beats default

  // The file can also come from BATON_CONFIG.
  ScopedEnv env_config("BATON_CONFIG", path.c_str());
  ParsedCommandLine r = Parse({});
  ASSERT_TRUE(r.config.has_value());
  EXPECT_EQ(r.config->reaper_interval.count(), 250);
}

TEST(ConfigTest, UnknownFileKeyIsAnError) {
  TempDir dir;
  const std::string path = dir.path() + "/batond.ini";
  std::ofstream(path) << "lease_msec = 10\n";
  ParsedCommandLine p = Parse({"--config", path});
  EXPECT_FALSE(p.config.has_value());
  EXPECT_NE(p.exit_code, 0);
}

TEST(ConfigTest, MissingConfigFileIsAnError) {
  ParsedCommandLine p = Parse({"--config", "/nonexistent/batond.toml"});
  EXPECT_FALSE(p.config.has_value());
  EXPECT_NE(p.exit_code, 0);
}

TEST(ConfigTest, InvalidValuesAreRefused) {
  for (const std::vector<std::string>& args :
       std::vector<std::vector<std::string>>{{"--redis-url", "http://x"},
                                             {"--namespaces", "bad name"},
                                             {"--promote-batch", "0"},
                                             {"--promote-batch", "10001"},
                                             {"--reclaim-batch", "1001"},
                                             {"--reaper-interval-ms", "5"},
                                             {"--scan-interval-s", "5"},
                                             {"--health", "8089"},
                                             {"--health", "127.0.0.1:99999"},
                                             {"--log-level", "loud"},
                                             {"--log-format", "xml"},
                                             {"--promote-batch", "abc"},
                                             {"--no-such-flag"}}) {
    ParsedCommandLine p = Parse(args);
    EXPECT_FALSE(p.config.has_value()) << args[0];
    EXPECT_EQ(p.exit_code, 2) << args[0];
  }
}

// Protocol v2 removed lease-ms (the lease deadline lives in Redis) and events-maxlen (a namespace
// setting). An old flag, config file or environment still setting one is refused, and the message
// says why, instead of CLI11's "unknown option" or an ignored variable.
TEST(ConfigTest, RemovedSettingsAreRefusedWithAnExplanation) {
  TempDir dir;
  const std::string old_file = dir.path() + "/old.toml";
  std::ofstream(old_file) << "redis-url = \"redis://127.0.0.1:7001\"\nlease-ms = 30000\n";
  const std::string old_ini = dir.path() + "/old.ini";
  std::ofstream(old_ini) << "events-maxlen=5000\n";
  struct Case {
    std::vector<std::string> args;
    const char* env_name;
    const char* setting;
  };
  for (const Case& c : std::vector<Case>{{{"--lease-ms", "5000"}, nullptr, "lease-ms"},
                                         {{"--config", old_file}, nullptr, "lease-ms"},
                                         {{}, "BATON_LEASE_MS", "lease-ms"},
                                         {{"--events-maxlen", "0"}, nullptr, "events-maxlen"},
                                         {{"--config", old_ini}, nullptr, "events-maxlen"},
                                         {{}, "BATON_EVENTS_MAXLEN", "events-maxlen"}}) {
    std::optional<ScopedEnv> env;
    if (c.env_name != nullptr) env.emplace(c.env_name, "1000");
    ParsedCommandLine p = Parse(c.args);
    const std::string what = c.env_name != nullptr ? c.env_name : c.args[0] + " " + c.args[1];
    EXPECT_FALSE(p.config.has_value()) << what;
    EXPECT_EQ(p.exit_code, 2) << what;
    EXPECT_EQ(p.error.rfind(c.setting, 0), 0u) << what << ": " << p.error;
    EXPECT_NE(p.error.find("removed in protocol v2"), std::string::npos) << p.error;
    EXPECT_NE(p.error.find("Delete this setting"), std::string::npos) << p.error;
  }
}

TEST(ConfigTest, HelpExitsZero) {
  ParsedCommandLine p = Parse({"--help"});
  EXPECT_FALSE(p.config.has_value());
  EXPECT_EQ(p.exit_code, 0);
}

TEST(ConfigTest, ValidateNamesTheSetting) {
  DaemonConfig c;
  c.instance = "x";
  c.retry_base = std::chrono::milliseconds(500);
  c.retry_max = std::chrono::milliseconds(100);
  Status s = Validate(c);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message().rfind("retry-max-ms:", 0), 0u) << s.message();
}

TEST(ListenAddressTest, Parses) {
  std::string host;
  int port = -1;
  ASSERT_TRUE(ParseListenAddress("127.0.0.1:8089", &host, &port).ok());
  EXPECT_EQ(host, "127.0.0.1");
  EXPECT_EQ(port, 8089);
  ASSERT_TRUE(ParseListenAddress("[::1]:0", &host, &port).ok());
  EXPECT_EQ(host, "::1");
  EXPECT_EQ(port, 0);
  EXPECT_FALSE(ParseListenAddress(":80", &host, &port).ok());
  EXPECT_FALSE(ParseListenAddress("host:", &host, &port).ok());
  EXPECT_FALSE(ParseListenAddress("host:http", &host, &port).ok());
}

TEST(LogTest, TextLinesAreLogfmt) {
  SetupLogging(spdlog::level::info, LogFormat::kText);
  EXPECT_EQ(RenderLogLine("cron tick fired", {{"job", "nightly"}, {"tick", 17L}, {"dup", false}}),
            "msg=\"cron tick fired\" job=nightly tick=17 dup=false");
  EXPECT_EQ(RenderLogLine("x", {{"error", "a \"b\"\nc"}, {"empty", ""}}),
            "msg=x error=\"a \\\"b\\\"\\nc\" empty=\"\"");
}

TEST(LogTest, JsonLinesAreObjects) {
  SetupLogging(spdlog::level::info, LogFormat::kJson);
  std::string line = RenderLogLine("promoted", {{"ns", "orders"}, {"count", 3}, {"ok", true}});
  auto doc = nlohmann::json::parse("{" + line + "}");
  EXPECT_EQ(doc["msg"], "promoted");
  EXPECT_EQ(doc["ns"], "orders");
  EXPECT_EQ(doc["count"], 3);
  EXPECT_EQ(doc["ok"], true);
  SetupLogging(spdlog::level::info, LogFormat::kText);
}

}  // namespace
}  // namespace baton::batond
