#include "inspect/stream_state.h"

#include <algorithm>

#include "inspect/stream_id.h"

namespace baton::internal {

namespace {

bool IsNoSuchKey(const Reply& reply) {
  return reply.is_error() && reply.str.find("no such key") != std::string::npos;
}

std::string EntryId(const std::map<std::string, const Reply*>& fields, const std::string& name) {
  auto it = fields.find(name);
  if (it == fields.end() || !it->second->is_array() || it->second->elements.empty()) return "";
  return it->second->elements[0].AsString();
}

}  // namespace

const GroupInfo* StreamState::FindGroup(const std::string& name) const {
  for (const auto& g : groups) {
    if (g.name == name) return &g;
  }
  return nullptr;
}

StatusOr<RangeCount> CountEntries(InspectorCore& core, const std::string& stream,
                                  const std::string& start, const std::string& end,
                                  std::size_t limit) {
  return CountRange(core, start, limit, [&](const std::string& from, std::size_t count) {
    return Command{"XRANGE", stream, from, end, "COUNT", std::to_string(count)};
  });
}

StatusOr<RangeCount> CountReady(InspectorCore& core, const std::string& stream,
                                const StreamState& state, const GroupInfo& group) {
  const std::string& position = group.last_delivered_id;
  if (state.length == 0 || CompareStreamIds(state.last_entry_id, position) <= 0) {
    return RangeCount{0, true};
  }
  if (CompareStreamIds(state.first_entry_id, position) > 0) return RangeCount{state.length, true};
  const std::size_t limit = core.options().entry_scan_limit;
  auto behind = CountEntries(core, stream, "-", position, limit);
  if (!behind.ok()) return behind.status();
  if (behind->exact)
    return RangeCount{std::max<std::int64_t>(0, state.length - behind->count), true};
  auto ahead = CountEntries(core, stream, "(" + position, "+", limit);
  if (!ahead.ok()) return ahead.status();
  if (ahead->exact) return *ahead;
  // Both sides are longer than the limit: the ready count lies between the two bounds.
  return RangeCount{std::max(ahead->count, state.length - behind->count), false};
}

StatusOr<StreamState> ReadStreamState(InspectorCore& core, const std::string& stream_key,
                                      bool count_ready) {
  StreamState state;
  auto replies = core.Pipeline({{"XINFO", "STREAM", stream_key}, {"XINFO", "GROUPS", stream_key}});
  if (!replies.ok()) return replies.status();
  const Reply& info = (*replies)[0];
  if (IsNoSuchKey(info)) return state;
  if (info.is_error()) return ReplyStatus(info).WithContext("XINFO STREAM " + stream_key);
  auto fields = FieldMap(info);
  state.exists = true;
  state.length = FieldInt(fields, "length");
  state.last_generated_id = FieldText(fields, "last-generated-id");
  state.entries_added = FieldInt(fields, "entries-added");
  state.first_entry_id = EntryId(fields, "first-entry");
  state.last_entry_id = EntryId(fields, "last-entry");

  const Reply& groups = (*replies)[1];
  if (groups.is_error()) return ReplyStatus(groups).WithContext("XINFO GROUPS " + stream_key);
  for (const Reply& g : groups.elements) {
    auto gf = FieldMap(g);
    GroupInfo group;
    group.name = FieldText(gf, "name");
    group.last_delivered_id = FieldText(gf, "last-delivered-id");
    group.pending = FieldInt(gf, "pending");
    if (auto it = gf.find("lag"); it != gf.end() && !it->second->is_nil()) {
      group.lag = it->second->AsInteger();
    }
    state.groups.push_back(std::move(group));
  }
  std::sort(state.groups.begin(), state.groups.end(),
            [](const GroupInfo& a, const GroupInfo& b) { return a.name < b.name; });
  if (state.groups.empty()) return state;

  const std::int64_t live_window_ms = core.options().live_consumer_window.count();
  std::vector<Command> commands;
  for (const auto& g : state.groups) commands.push_back({"XINFO", "CONSUMERS", stream_key, g.name});
  auto consumers = core.Pipeline(commands);
  if (!consumers.ok()) return consumers.status();
  for (std::size_t i = 0; i < state.groups.size(); ++i) {
    GroupInfo& group = state.groups[i];
    const Reply& list = (*consumers)[i];
    if (list.is_error()) continue;  // the group was destroyed between the two round trips
    for (const Reply& c : list.elements) {
      auto cf = FieldMap(c);
      ConsumerInfo consumer;
      consumer.name = FieldText(cf, "name");
      consumer.pending = FieldInt(cf, "pending");
      consumer.idle_ms = FieldInt(cf, "idle");
      consumer.live = consumer.idle_ms < live_window_ms;
      if (consumer.live) ++group.live_consumers;
      group.consumers.push_back(std::move(consumer));
    }
    std::sort(group.consumers.begin(), group.consumers.end(),
              [](const ConsumerInfo& a, const ConsumerInfo& b) { return a.name < b.name; });
  }
  if (count_ready) {
    for (GroupInfo& group : state.groups) {
      auto ready = CountReady(core, stream_key, state, group);
      if (!ready.ok()) return ready.status();
      group.ready = ready->count;
      group.ready_exact = ready->exact;
    }
  }
  return state;
}

}  // namespace baton::internal
