// Entries of a namespace's events stream as the collector reads them (collector/event_decode.h),
// written by the functions library or by anything else with access to Redis. Input lines: the
// entry id, then field/value pairs. Each line is also read as a worker (consumer) name.
// Properties:
//  - a rejected entry gets kInvalidArgument naming the field;
//  - an accepted one gives one row per id, in order, with the entry's id and non-negative attempts.
#include <string>

#include "event_decode.h"
#include "fuzz_check.h"
#include "fuzz_targets.h"

namespace baton::fuzz {

int FuzzEventDecode(const std::uint8_t* data, std::size_t size) {
  const std::vector<std::string_view> lines = Lines(AsText(data, size));
  const std::string id = lines.empty() ? std::string() : std::string(lines[0]);
  collector::StreamFields fields;
  for (std::size_t i = 1; i + 1 < lines.size(); i += 2) {
    fields.emplace_back(std::string(lines[i]), std::string(lines[i + 1]));
  }

  StatusOr<std::vector<collector::EventRow>> rows = collector::DecodeEventEntry("shop", id, fields);
  if (!rows.ok()) {
    BATON_FUZZ_CHECK(NamesAField(rows.status(), {"id", "type", "from", "to", "worker", "ids",
                                                 "attempts", "error"}),
                     rows.status().ToString());
  } else {
    std::int64_t ms = 0, seq = 0;
    BATON_FUZZ_CHECK(collector::ParseStreamId(id, &ms, &seq), id);
    BATON_FUZZ_CHECK(!rows->empty(), id);
    for (std::size_t i = 0; i < rows->size(); ++i) {
      const collector::EventRow& row = (*rows)[i];
      BATON_FUZZ_CHECK(row.idx == static_cast<std::int64_t>(i) && row.entry_ms == ms &&
                           row.entry_seq == seq && row.attempt >= 0 && !row.task_id.empty() &&
                           row.task_id.find(' ') == std::string::npos && row.ns == "shop",
                       row.task_id);
    }
  }

  for (std::string_view line : lines) {
    const collector::WorkerIdentity who = collector::ParseWorkerName(std::string(line));
    BATON_FUZZ_CHECK(who.service.size() <= line.size() && who.host.size() <= line.size(),
                     std::string(line));
  }
  return 0;
}

}  // namespace baton::fuzz

BATON_FUZZ_MAIN(baton::fuzz::FuzzEventDecode)
