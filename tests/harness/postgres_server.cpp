#include "harness/postgres_server.h"

#include <pwd.h>
#include <signal.h>
#include <sys/shm.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <pqxx/pqxx>
#include <sstream>
#include <stdexcept>
#include <thread>
#include <vector>

namespace baton::testing {

namespace {

// Debian installs the server binaries (initdb, postgres) in /usr/lib/postgresql/<major>/bin, not
// in PATH; pg_config (libpq-dev) may name another directory. Prefer 15 (Debian 12), else the
// newest there.
std::string ServerBinDir() {
  namespace fs = std::filesystem;
  auto usable = [](const fs::path& bin) {
    std::error_code ec;
    return fs::exists(bin / "postgres", ec) && fs::exists(bin / "initdb", ec);
  };
  const fs::path preferred = "/usr/lib/postgresql/15/bin";
  if (usable(preferred)) return preferred.string();
  int best = -1;
  fs::path best_dir;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator("/usr/lib/postgresql", ec)) {
    const std::string name = entry.path().filename().string();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    const int major = std::stoi(name);
    if (major > best && usable(entry.path() / "bin")) {
      best = major;
      best_dir = entry.path() / "bin";
    }
  }
  if (best < 0) {
    throw std::runtime_error(
        "PostgreSQL server binaries not found in /usr/lib/postgresql/*/bin (Debian package "
        "postgresql; scripts/setup.sh installs it)");
  }
  return best_dir.string();
}

// initdb and postgres refuse to run as root ("root" execution of the PostgreSQL server is not
// permitted), and CI and the developer machines run the tests as root. Then both run as an
// unprivileged user (`postgres`, which Debian's package creates, else `nobody`) through setpriv
// (util-linux, always installed): it sets the real and effective ids (postgres also insists that
// they match) and execs in place, so the server keeps the pid and process group that Process gave
// it and our signals reach it directly (runuser and su fork and stay in between).
struct RunAs {
  std::vector<std::string> prefix;  // empty when we are not root
  uid_t uid = 0;
  gid_t gid = 0;
};

RunAs Unprivileged() {
  if (geteuid() != 0) return {};
  for (const char* user : {"postgres", "nobody"}) {
    if (const passwd* pw = getpwnam(user)) {
      return {{"setpriv", "--reuid=" + std::to_string(pw->pw_uid),
               "--regid=" + std::to_string(pw->pw_gid), "--clear-groups"},
              pw->pw_uid,
              pw->pw_gid};
    }
  }
  throw std::runtime_error("running as root, and neither user postgres nor nobody exists");
}

// The processes whose parent is `parent` (from /proc/<pid>/stat).
std::vector<pid_t> ChildrenOf(pid_t parent) {
  std::vector<pid_t> children;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc", ec)) {
    const std::string name = entry.path().filename().string();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    // "pid (comm) state ppid ...": comm may hold spaces and parentheses, so read after the last
    // ')'.
    const std::string stat = ReadFile(entry.path().string() + "/stat");
    const auto close = stat.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream fields(stat.substr(close + 1));
    char state = 0;
    long ppid = 0;
    if (fields >> state >> ppid && ppid == parent) children.push_back(std::stoi(name));
  }
  return children;
}

std::string Tail(const std::string& path) {
  std::string text = ReadFile(path);
  if (text.size() > 4000) text = "..." + text.substr(text.size() - 4000);
  return path + ":\n" + text;
}

}  // namespace

PostgresServer::PostgresServer() {
  const std::string bin = ServerBinDir();
  const RunAs run_as = Unprivileged();
  if (!run_as.prefix.empty()) {
    // mkdtemp made the directory 0700 for root: hand it to the server's user, who creates the
    // cluster and the Unix socket in it (its parent, /tmp, is world-traversable). ~TempDir, as
    // root, still removes it with everything in it.
    if (chown(dir_.path().c_str(), run_as.uid, run_as.gid) != 0) {
      throw std::runtime_error("chown " + dir_.path() + " failed");
    }
  }
  auto command = [&run_as](std::vector<std::string> argv) {
    argv.insert(argv.begin(), run_as.prefix.begin(), run_as.prefix.end());
    return argv;
  };
  const std::map<std::string, std::string> env = {{"LC_ALL", "C"}};
  const std::string data = dir_.path() + "/data";
  const std::string initdb_log = dir_.path() + "/initdb.log";
  const std::string log = dir_.path() + "/postgres.log";

  // --no-sync: a test cluster need not survive a crash of the machine.
  Process initdb(command({bin + "/initdb", "-D", data, "-U", "baton", "--auth=trust", "-E", "UTF8",
                          "--locale=C", "--no-sync"}),
                 initdb_log, env);
  const auto initdb_status = initdb.Wait(std::chrono::seconds(120));
  if (initdb_status != 0) {
    initdb.Kill();
    throw std::runtime_error("initdb failed\n" + Tail(initdb_log));
  }

  // Another test may grab the port between FreeLoopbackPort() and the server's bind(): then the
  // server exits at once and we retry on another port.
  for (int attempt = 0; attempt < 5; ++attempt) {
    port_ = FreeLoopbackPort();
    process_ = std::make_unique<Process>(
        command({bin + "/postgres", "-D", data, "-p", std::to_string(port_), "-k", dir_.path(),
                 "-c", "listen_addresses=127.0.0.1", "-c", "fsync=off", "-c",
                 "synchronous_commit=off", "-c", "full_page_writes=off"}),
        log, env);
    // Through the Unix socket in our own directory, so that a server of another test that took
    // the port is never mistaken for ours (the server makes its TCP socket first and exits when
    // it cannot).
    const std::string admin = "host=" + dir_.path() + " port=" + std::to_string(port_) +
                              " user=baton dbname=postgres connect_timeout=5";
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (std::chrono::steady_clock::now() < deadline && process_->Running()) {
      try {
        pqxx::connection conn(admin);
        pqxx::nontransaction tx(conn);
        tx.exec("CREATE DATABASE baton");
        return;
      } catch (const pqxx::broken_connection&) {
        // Not listening yet, or "the database system is starting up".
      } catch (const std::exception& e) {
        Stop(SIGKILL);
        throw std::runtime_error(std::string("CREATE DATABASE baton failed: ") + e.what() + "\n" +
                                 Tail(log));
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    Stop(SIGKILL);
  }
  throw std::runtime_error("could not start postgres\n" + Tail(log));
}

PostgresServer::~PostgresServer() {
  try {
    Stop(SIGINT);  // fast shutdown: ends the sessions (SIGTERM would wait for clients to leave)
  } catch (...) {
  }
}

std::string PostgresServer::NewDatabaseUrl() {
  const std::string name = "test" + std::to_string(++databases_);
  pqxx::connection conn(url());
  pqxx::nontransaction tx(conn);
  tx.exec("CREATE DATABASE " + name);
  return "postgresql://baton@127.0.0.1:" + std::to_string(port_) + "/" + name;
}

void PostgresServer::Kill() { Stop(SIGKILL); }

void PostgresServer::Stop(int first_signal) {
  if (!process_ || !process_->Running()) return;
  const pid_t pid = process_->pid();
  if (first_signal != SIGKILL) {
    kill(pid, first_signal);
    if (process_->Wait(std::chrono::seconds(10))) return;
  }
  // Every backend makes itself a process group leader (setsid), so killing the postmaster's group
  // is not enough, and a backend outlives its postmaster until it notices (it may even answer one
  // more statement). Stop the postmaster so that it forks no more, SIGKILL its children, then it.
  kill(pid, SIGSTOP);
  for (pid_t child : ChildrenOf(pid)) kill(child, SIGKILL);
  kill(pid, SIGKILL);
  process_->Kill();
  // A killed server leaves its small System V shared memory segment behind (a clean shutdown
  // removes it): its id is the second number on line 7 of postmaster.pid.
  std::ifstream lock(dir_.path() + "/data/postmaster.pid");
  std::string line;
  for (int i = 0; i < 7 && std::getline(lock, line); ++i) {
  }
  long key = 0;
  long shmid = -1;
  std::istringstream fields(line);
  if (lock && fields >> key >> shmid && shmid >= 0) {
    shmctl(static_cast<int>(shmid), IPC_RMID, nullptr);
  }
}

}  // namespace baton::testing
