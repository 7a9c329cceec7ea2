#pragma once
// A Redis reply as Baton keeps it: an owned tree, independent of hiredis.
#include <string>
#include <vector>

#include "baton/status.h"

namespace baton::internal {

// An owned copy of a reply tree (so it outlives hiredis' buffers and is easy to test).
struct Reply {
  enum class Type { kNil, kString, kStatus, kError, kInteger, kArray };
  Type type = Type::kNil;
  std::string str;  // kString, kStatus, kError
  long long integer = 0;
  std::vector<Reply> elements;  // kArray

  bool is_nil() const { return type == Type::kNil; }
  bool is_error() const { return type == Type::kError; }
  bool is_array() const { return type == Type::kArray; }
  // String of a kString/kStatus reply, or the decimal of a kInteger one; "" otherwise.
  std::string AsString() const;
  // Integer reply, or a kString reply holding an integer; 0 otherwise.
  long long AsInteger() const;
};

// Maps an error reply to a Status: "BATON_INVALID f: r" -> kInvalidArgument "f: r",
// BATON_NOT_FOUND -> kNotFound, BATON_CONFLICT -> kConflict, anything else -> kInternal.
Status StatusFromErrorReply(const Reply& reply);

}  // namespace baton::internal
