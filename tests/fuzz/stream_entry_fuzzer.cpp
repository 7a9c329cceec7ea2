// Task entries as Redis hands them to a worker (src/broker/task_codec.h), written by any producer
// or by hand: a work stream entry read with XREADGROUP (the flat field/value array: the input's
// lines) and a baton_dequeue entry (9 values: the first 9 lines). Properties:
//  - a rejected entry gets kInvalidArgument naming the field, and the ids the worker needs to
//    fail it are still filled in;
//  - an accepted entry is a valid task of the queue it was read from, with attempt >= 1;
//  - encoding that task (EncodeEnqueueArgs) and decoding it again gives the same task.
#include <algorithm>
#include <string>
#include <vector>

#include "broker/task_codec.h"
#include "fuzz_check.h"
#include "fuzz_targets.h"

namespace baton::fuzz {
namespace {

using internal::DeliveredTask;
using internal::Reply;

constexpr std::string_view kNs = "shop";
constexpr std::string_view kType = "mail";
const std::initializer_list<std::string_view> kEntryFields = {
    "task",  "payload",    "task_id",  "max_retry",         "delay_seconds",
    "extra", "created_at", "attempt",  "execution_timeout", "namespace",
    "trace", "headers",    "task_type"};

Reply Text(std::string_view text) {
  Reply reply;
  reply.type = Reply::Type::kString;
  reply.str = std::string(text);
  return reply;
}

Reply Array(const std::vector<std::string_view>& values) {
  Reply reply;
  reply.type = Reply::Type::kArray;
  for (std::string_view value : values) reply.elements.push_back(Text(value));
  return reply;
}

void CheckAccepted(const DeliveredTask& delivered) {
  const Task& task = delivered.task;
  BATON_FUZZ_CHECK(task.Validate().ok(), task.Validate().ToString());
  BATON_FUZZ_CHECK(task.ns == kNs && task.task_type == kType, task.ToJson());
  BATON_FUZZ_CHECK(delivered.attempt >= 1, std::to_string(delivered.attempt));

  // Round trip through the enqueue wire form: the per-task ARGV of baton_enqueue carries the
  // values a dequeued entry returns (id, payload, max_retry, delay, created_at, timeout, extra).
  const std::vector<std::string> args = internal::EncodeEnqueueArgs(task, 0, "", 0);
  const std::string attempt = std::to_string(delivered.attempt - 1);
  const Reply entry = Array({delivered.stream_id, args[0], args[1], args[2], args[3], args[4],
                             args[5], args[6], attempt});
  std::string sid, id;
  StatusOr<DeliveredTask> again = internal::DecodeDequeuedEntry(kNs, kType, entry, 0, &sid, &id);
  BATON_FUZZ_CHECK(again.ok(), again.status().ToString() + " re-decoding " + task.ToJson());
  BATON_FUZZ_CHECK(again->task.ToJson() == task.ToJson() && again->attempt == delivered.attempt &&
                       again->stream_id == delivered.stream_id,
                   task.ToJson() + "\n  became\n  " + again->task.ToJson());
}

}  // namespace

int FuzzStreamEntry(const std::uint8_t* data, std::size_t size) {
  const std::vector<std::string_view> lines = Lines(AsText(data, size));

  // XREADGROUP: the lines are the entry's field/value array. The "not filled in" mark is longer
  // than the input, so no value taken from the input can equal it (an id "unset" once did).
  const std::string unset(size + 1, '?');
  std::string task_id = unset, attempt = unset;
  StatusOr<DeliveredTask> streamed =
      internal::DecodeStreamEntry(kNs, kType, "1722489600123-0", Array(lines), &task_id, &attempt);
  if (streamed.ok()) {
    CheckAccepted(*streamed);
    BATON_FUZZ_CHECK(task_id == streamed->task.task_id, task_id);
  } else {
    BATON_FUZZ_CHECK(NamesAField(streamed.status(), kEntryFields), streamed.status().ToString());
    BATON_FUZZ_CHECK(task_id != unset && attempt != unset, "ids not filled in");
  }
  if (!lines.empty()) (void)internal::ParseEntryTask(lines[0]);

  // baton_dequeue: 9 values per entry; a short input still makes one (empty values).
  std::vector<std::string_view> values(lines.begin(),
                                       lines.begin() + std::min<std::size_t>(lines.size(), 9));
  values.resize(9);
  std::string sid, id;
  StatusOr<DeliveredTask> dequeued =
      internal::DecodeDequeuedEntry(kNs, kType, Array(values), 0, &sid, &id);
  BATON_FUZZ_CHECK(sid == values[0] && id == values[1], "ids not filled in");
  if (dequeued.ok()) {
    CheckAccepted(*dequeued);
  } else {
    BATON_FUZZ_CHECK(NamesAField(dequeued.status(), kEntryFields), dequeued.status().ToString());
  }
  // Out of range entry numbers are refused, never read.
  StatusOr<DeliveredTask> beyond =
      internal::DecodeDequeuedEntry(kNs, kType, Array(lines), lines.size() / 9, &sid, &id);
  BATON_FUZZ_CHECK(!beyond.ok(), "read past the entries array");
  return 0;
}

}  // namespace baton::fuzz

BATON_FUZZ_MAIN(baton::fuzz::FuzzStreamEntry)
