#pragma once
// A listening Unix socket in a fresh temporary directory, for the fake servers of tests and
// fuzzers that must answer with bytes no real Redis would send. Header-only: unit tests and
// fuzzers use it without linking the harness library.
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

namespace baton::testing {

struct UnixListener {
  std::string dir;   // the temporary directory holding the socket
  std::string path;  // dir + "/redis.sock"
  int fd = -1;
};

// Creates /tmp/<prefix>-XXXXXX, binds and listens there; aborts when it cannot (a broken test
// machine, not a test result).
inline UnixListener ListenOnUnixSocket(const std::string& prefix, int backlog) {
  std::string dir_template = "/tmp/" + prefix + "-XXXXXX";
  if (mkdtemp(dir_template.data()) == nullptr) std::abort();
  UnixListener listener;
  listener.dir = dir_template;
  listener.path = listener.dir + "/redis.sock";
  listener.fd = socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  listener.path.copy(address.sun_path, sizeof(address.sun_path) - 1);
  if (listener.fd < 0 ||
      bind(listener.fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0 ||
      listen(listener.fd, backlog) != 0) {
    std::abort();
  }
  return listener;
}

}  // namespace baton::testing
