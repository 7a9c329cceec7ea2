#pragma once
// Turns an entry of a namespace's events stream (docs/keyspace.md, "Event entry") into EventRows.
#include <string>
#include <utility>
#include <vector>

#include "baton/status.h"
#include "event_row.h"

namespace baton::collector {

using StreamFields = std::vector<std::pair<std::string, std::string>>;

// kInvalidArgument naming the field and the rule when the entry is not a well-formed event
// (unparsable id, a missing field, ids and attempts of different lengths, a non-numeric
// attempt, an unknown state): such an entry is kept aside (rejected_events), never guessed at.
StatusOr<std::vector<EventRow>> DecodeEventEntry(const std::string& ns, const std::string& entry_id,
                                                 const StreamFields& fields);

// "1700000000000-3" -> {1700000000000, 3}; false when it is not a stream id.
bool ParseStreamId(const std::string& id, std::int64_t* ms, std::int64_t* seq);

}  // namespace baton::collector
