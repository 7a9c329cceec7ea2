#include "users.h"

#include <sodium.h>

#include <condition_variable>
#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>

namespace baton::console {
namespace {

// libsodium must be initialised once before use; sodium_init() is thread-safe and idempotent.
bool SodiumReady() {
  static const bool ready = sodium_init() >= 0;
  return ready;
}

// At most two Argon2 verifications at once: each takes 64 MiB, and a burst of logins must not
// take the machine's memory.
std::mutex& VerifySlotsMutex() {
  static std::mutex mu;
  return mu;
}

class VerifySlot {
 public:
  VerifySlot() {
    std::unique_lock<std::mutex> lock(VerifySlotsMutex());
    Cv().wait(lock, [] { return InUse() < 2; });
    ++InUse();
  }
  ~VerifySlot() {
    {
      std::lock_guard<std::mutex> lock(VerifySlotsMutex());
      --InUse();
    }
    Cv().notify_one();
  }
  VerifySlot(const VerifySlot&) = delete;
  VerifySlot& operator=(const VerifySlot&) = delete;

 private:
  static int& InUse() {
    static int in_use = 0;
    return in_use;
  }
  static std::condition_variable& Cv() {
    static std::condition_variable cv;
    return cv;
  }
};

bool Verify(const std::string& hash, std::string_view password) {
  VerifySlot slot;
  return crypto_pwhash_str_verify(hash.c_str(), password.data(), password.size()) == 0;
}

bool ValidName(std::string_view name) {
  if (name.empty() || name.size() > 64) return false;
  for (char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '_' || c == '.' || c == '-' || c == '@';
    if (!ok) return false;
  }
  return true;
}

}  // namespace

std::string_view RoleName(Role role) {
  switch (role) {
    case Role::kViewer:
      return "viewer";
    case Role::kOperator:
      return "operator";
    case Role::kAdmin:
      return "admin";
  }
  return "viewer";
}

StatusOr<std::string> HashPassword(std::string_view password) {
  if (!SodiumReady()) return Status::Internal("libsodium could not be initialised");
  if (password.empty()) return Status::InvalidArgument("password", "must not be empty");
  char out[crypto_pwhash_STRBYTES];
  if (crypto_pwhash_str_alg(out, password.data(), password.size(),
                            crypto_pwhash_OPSLIMIT_INTERACTIVE, crypto_pwhash_MEMLIMIT_INTERACTIVE,
                            crypto_pwhash_ALG_ARGON2ID13) != 0) {
    return Status::Internal("password hashing ran out of memory");
  }
  return std::string(out);
}

StatusOr<UserDirectory> UserDirectory::Parse(std::string_view json_text) {
  if (!SodiumReady()) return Status::Internal("libsodium could not be initialised");
  const nlohmann::json doc = nlohmann::json::parse(json_text, nullptr, false);
  if (doc.is_discarded()) return Status::InvalidArgument("users file", "is not valid JSON");
  if (!doc.is_object() || !doc.contains("users") || !doc["users"].is_array()) {
    return Status::InvalidArgument("users", "must be an array of {name, role, password_hash}");
  }
  UserDirectory dir;
  std::size_t index = 0;
  for (const auto& u : doc["users"]) {
    const std::string where = "users[" + std::to_string(index++) + "]";
    if (!u.is_object()) return Status::InvalidArgument(where, "must be an object");
    const auto name_it = u.find("name");
    if (name_it == u.end() || !name_it->is_string() || !ValidName(name_it->get<std::string>())) {
      return Status::InvalidArgument(where + ".name", "must be 1 to 64 of A-Z a-z 0-9 _ . - @");
    }
    ConsoleUser user;
    user.name = name_it->get<std::string>();
    const std::string who = where + " (" + user.name + ")";
    const auto role_it = u.find("role");
    const std::string role =
        role_it != u.end() && role_it->is_string() ? role_it->get<std::string>() : std::string();
    if (role == "viewer") {
      user.role = Role::kViewer;
    } else if (role == "operator") {
      user.role = Role::kOperator;
    } else if (role == "admin") {
      user.role = Role::kAdmin;
    } else {
      return Status::InvalidArgument(who + ": role", "must be viewer, operator or admin");
    }
    const auto hash_it = u.find("password_hash");
    if (hash_it == u.end() || !hash_it->is_string() ||
        !hash_it->get<std::string>().starts_with("$argon2id$") ||
        hash_it->get<std::string>().size() >= crypto_pwhash_STRBYTES) {
      return Status::InvalidArgument(
          who + ": password_hash",
          "must be an Argon2id hash (\"$argon2id$...\"; make one with baton-console "
          "hash-password)");
    }
    user.password_hash = hash_it->get<std::string>();
    if (dir.users_.contains(user.name)) {
      return Status::InvalidArgument(who + ": name", "appears twice");
    }
    dir.users_.emplace(user.name, std::move(user));
  }
  if (dir.users_.empty()) return Status::InvalidArgument("users", "must list at least one user");
  auto dummy = HashPassword("baton-console: no such user");
  if (!dummy.ok()) return dummy.status();
  dir.dummy_hash_ = std::move(dummy).value();
  return dir;
}

StatusOr<UserDirectory> UserDirectory::Load(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::InvalidArgument("users", "cannot read the file " + path);
  std::ostringstream text;
  text << in.rdbuf();
  auto parsed = Parse(text.str());
  if (!parsed.ok()) {
    return Status(parsed.status().code(), path + ": " + parsed.status().message());
  }
  return parsed;
}

std::optional<ConsoleUser> UserDirectory::Authenticate(std::string_view name,
                                                       std::string_view password) const {
  const auto it = users_.find(name);
  if (it == users_.end()) {
    (void)Verify(dummy_hash_, password);
    return std::nullopt;
  }
  if (!Verify(it->second.password_hash, password)) return std::nullopt;
  return it->second;
}

}  // namespace baton::console
