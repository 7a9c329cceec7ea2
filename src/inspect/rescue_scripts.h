#pragma once
// The two atomic steps of a rescue (docs/rescue.md), as Lua scripts run with EVAL. They are
// consumer-group administration, not task transitions, so they are not part of the `baton`
// functions library; each touches only the work stream and the rescue state hash of one
// (namespace, type), which share the namespace's hash slot.
namespace baton::internal {

// Shared helpers, prepended to both scripts.
inline constexpr const char* kRescuePrelude = R"LUA(
local function fields(flat)
  local t = {}
  for i = 1, #flat - 1, 2 do t[flat[i]] = flat[i + 1] end
  return t
end
local function parse_id(id)
  local ms, seq = string.match(id, '^(%d+)-(%d+)$')
  return tonumber(ms) or 0, tonumber(seq) or 0
end
local function cmp(a, b)
  local am, as = parse_id(a)
  local bm, bs = parse_id(b)
  if am ~= bm then return am < bm and -1 or 1 end
  if as ~= bs then return as < bs and -1 or 1 end
  return 0
end
local function groups_by_name(stream)
  local out = {}
  for _, g in ipairs(redis.call('XINFO', 'GROUPS', stream)) do
    local f = fields(g)
    out[f['name']] = f
  end
  return out
end
)LUA";

// rescue start.
//   KEYS[1] baton:{NS}:stream:TYPE   KEYS[2] baton:{NS}:rescue:TYPE
//   ARGV[1] group G                  ARGV[2] rescue group R
// Creates R at 0 (it sees every entry still in the stream: undelivered, G's pending and any entry
// G skipped), records the handover id (the stream's last generated id), and moves G to it
// (never backwards) so G's consumers only get entries added after the start.
// Returns the handover id. Errors: BATON_CONFLICT (rescue in progress, R exists),
// BATON_NOT_FOUND (no stream, no group G).
inline constexpr const char* kRescueStartScript = R"LUA(
local stream, state = KEYS[1], KEYS[2]
local group, rescue = ARGV[1], ARGV[2]
if redis.call('EXISTS', state) == 1 then
  return redis.error_reply('BATON_CONFLICT a rescue of this queue is already in progress (group ' ..
    tostring(redis.call('HGET', state, 'group')) .. '): finish it first')
end
if redis.call('EXISTS', stream) == 0 then
  return redis.error_reply('BATON_NOT_FOUND stream ' .. stream .. ': nothing is queued for this type')
end
local info = fields(redis.call('XINFO', 'STREAM', stream))
local groups = groups_by_name(stream)
if groups[rescue] then
  return redis.error_reply('BATON_CONFLICT consumer group ' .. rescue .. ' already exists on ' ..
    stream .. ': finish the rescue it belongs to, or destroy it with XGROUP DESTROY')
end
local g = groups[group]
if not g then
  return redis.error_reply('BATON_NOT_FOUND consumer group ' .. group .. ' of ' .. stream)
end
local handover = info['last-generated-id']
local before = g['last-delivered-id']
redis.call('XGROUP', 'CREATE', stream, rescue, '0')
if cmp(before, handover) < 0 then
  redis.call('XGROUP', 'SETID', stream, group, handover, 'ENTRIESREAD',
    string.format('%d', info['entries-added']))
end
local t = redis.call('TIME')
local started = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('HSET', state, 'group', group, 'rescue_group', rescue, 'handover_id', handover,
  'group_last_id_before', before, 'started_ms', string.format('%d', started),
  'backlog_at_start', string.format('%d', info['length']))
return handover
)LUA";

// rescue finish.
//   KEYS[1] baton:{NS}:stream:TYPE   KEYS[2] baton:{NS}:rescue:TYPE
//   ARGV[1] force ("1" or "0")       ARGV[2] scan limit (entries counted as left behind)
// Refuses (BATON_CONFLICT) unless forced while R has entries <= handover not yet delivered, or
// pending entries (<= handover: the backlog is not drained; > handover: rescue workers still hold
// tasks and must be stopped first). Then acks in G every G-pending entry <= handover whose stream
// entry is gone (the rescue finished it), sets G to the handover id if it is behind it, destroys R
// and deletes the state. Returns {acked_in_G, G's last id, left_behind}.
inline constexpr const char* kRescueFinishScript = R"LUA(
local stream, state = KEYS[1], KEYS[2]
local force, limit = ARGV[1] == '1', ARGV[2]
local st = fields(redis.call('HGETALL', state))
if not st['group'] then
  return redis.error_reply('BATON_NOT_FOUND no rescue of this queue is in progress')
end
local group, rescue, handover = st['group'], st['rescue_group'], st['handover_id']
local groups = groups_by_name(stream)
local g, r = groups[group], groups[rescue]
if not g then
  return redis.error_reply('BATON_NOT_FOUND consumer group ' .. group .. ' of ' .. stream ..
    ' (destroyed during the rescue?)')
end
local undelivered, pending_le, pending_after = 0, 0, 0
if r then
  if cmp(r['last-delivered-id'], handover) < 0 then
    undelivered = #redis.call('XRANGE', stream, '(' .. r['last-delivered-id'], handover, 'COUNT', limit)
  end
  pending_le = #redis.call('XPENDING', stream, rescue, '-', handover, limit)
  pending_after = #redis.call('XPENDING', stream, rescue, '(' .. handover, '+', limit)
elseif not force then
  return redis.error_reply('BATON_CONFLICT rescue group ' .. rescue .. ' is gone: use --force')
end
if not force and undelivered + pending_le + pending_after > 0 then
  return redis.error_reply('BATON_CONFLICT rescue group ' .. rescue .. ' is not done: ' ..
    undelivered .. ' entries up to the handover ' .. handover .. ' not yet delivered, ' ..
    pending_le .. ' pending, and ' .. pending_after .. ' newer entries still held by rescue ' ..
    'workers. Let the rescue workers drain the backlog, stop them (they ack what they hold), ' ..
    'check `baton rescue status`, then finish again (or use --force)')
end
local acked, start = 0, '-'
while true do
  local p = redis.call('XPENDING', stream, group, start, handover, 1000)
  for i = 1, #p do
    local sid = p[i][1]
    if #redis.call('XRANGE', stream, sid, sid) == 0 then
      redis.call('XACK', stream, group, sid)
      acked = acked + 1
    end
  end
  if #p < 1000 then break end
  start = '(' .. p[#p][1]
end
local resumes = g['last-delivered-id']
if cmp(resumes, handover) < 0 then
  redis.call('XGROUP', 'SETID', stream, group, handover)
  resumes = handover
end
if r then
  redis.call('XGROUP', 'DESTROY', stream, rescue)
end
redis.call('DEL', state)
return {acked, resumes, undelivered + pending_le}
)LUA";

}  // namespace baton::internal
