#include "broker/reply_guard.h"

#include <hiredis/hiredis.h>

#include <mutex>

namespace baton::internal {
namespace {

// hiredis' own functions (the same static table for every context), with createArray wrapped.
redisReplyObjectFunctions guarded_functions;
void* (*hiredis_create_array)(const redisReadTask*, int) = nullptr;

void* CreateGuardedArray(const redisReadTask* task, int elements) {
  if (elements > kMaxReplyArrayElements) {
    if (task->privdata != nullptr) {
      static_cast<ReplyGuard*>(task->privdata)->refused_elements = elements;
    }
    return nullptr;  // hiredis reports it as out of memory and breaks the context
  }
  return hiredis_create_array(task, elements);
}

}  // namespace

void GuardReplyArrays(redisContext* ctx, ReplyGuard* guard) {
  static std::once_flag once;
  std::call_once(once, [ctx] {
    guarded_functions = *ctx->reader->fn;
    hiredis_create_array = guarded_functions.createArray;
    guarded_functions.createArray = CreateGuardedArray;
  });
  guard->refused_elements = 0;
  ctx->reader->fn = &guarded_functions;
  ctx->reader->privdata = guard;
}

std::string ReadErrorText(const redisContext* ctx, const ReplyGuard& guard) {
  if (ctx->err == REDIS_ERR_OOM && guard.refused_elements > 0) {
    return "protocol error: a reply array of " + std::to_string(guard.refused_elements) +
           " elements is over the limit of " + std::to_string(kMaxReplyArrayElements) +
           " (is the server at this address Redis?)";
  }
  return ctx->errstr;
}

}  // namespace baton::internal
