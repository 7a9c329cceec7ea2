#pragma once
// A cap on the size of an array reply, checked before hiredis allocates for it.
//
// hiredis 0.14 (Debian 12's) allocates an array's table of elements as soon as it reads the
// "*N" header, before one element has arrived. A stream that is not Redis (another service on
// the port, a corrupted connection) can say "*933333333" in twelve bytes, and hiredis then asked
// for 7 GB (the resp_reply fuzzer found it). Baton reads its big collections in pages, so no
// reply it asks for comes near the cap; a header over it fails the read as a protocol error.
#include <cstdint>
#include <string>

struct redisContext;

namespace baton::internal {

inline constexpr int kMaxReplyArrayElements = 1 << 24;

// Where a guarded context records the array it refused (for the error message).
struct ReplyGuard {
  std::int64_t refused_elements = 0;
};

// Makes `ctx`'s reader refuse an array header over kMaxReplyArrayElements, noting its size in
// `*guard`, which must outlive the context. hiredis then fails the read ("Out of memory") and
// the context is broken, as for any other protocol error.
void GuardReplyArrays(redisContext* ctx, ReplyGuard* guard);

// ctx->errstr, or, when the read failed on a header the guard refused, a message that says so.
std::string ReadErrorText(const redisContext* ctx, const ReplyGuard& guard);

}  // namespace baton::internal
