#pragma once
// The console's users (docs/console.md "Users and roles"): a JSON file of names, roles and
// Argon2id password hashes (libsodium's crypto_pwhash_str), read once at start.
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "baton/status.h"

namespace baton::console {

enum class Role { kViewer, kOperator, kAdmin };

std::string_view RoleName(Role role);  // "viewer", "operator", "admin"

struct ConsoleUser {
  std::string name;
  Role role = Role::kViewer;
  std::string password_hash;  // "$argon2id$..."
};

class UserDirectory {
 public:
  // Parses the users file's text. kInvalidArgument naming the user (by position and name) and
  // the field: "users[2] (ops): role: must be viewer, operator or admin".
  static StatusOr<UserDirectory> Parse(std::string_view json_text);
  static StatusOr<UserDirectory> Load(const std::string& path);

  // The user when `password` matches its hash; nullopt otherwise. An unknown name costs the same
  // Argon2 work as a known one, so timing does not tell which names exist.
  std::optional<ConsoleUser> Authenticate(std::string_view name, std::string_view password) const;

  std::size_t size() const { return users_.size(); }

 private:
  std::map<std::string, ConsoleUser, std::less<>> users_;
  std::string dummy_hash_;  // verified against for unknown names
};

// An Argon2id hash of `password` (interactive limits: 64 MiB, 2 passes).
StatusOr<std::string> HashPassword(std::string_view password);

}  // namespace baton::console
