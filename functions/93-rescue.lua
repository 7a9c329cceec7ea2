
-- Stream ids 'ms-seq' compared as numbers: -1, 0 or 1.
local function compare_sids(a, b)
  local am, as = match(a, '^(%d+)-(%d+)$')
  local bm, bs = match(b, '^(%d+)-(%d+)$')
  am, as, bm, bs = tonumber_(am) or 0, tonumber_(as) or 0, tonumber_(bm) or 0, tonumber_(bs) or 0
  if am ~= bm then
    return am < bm and -1 or 1
  end
  if as ~= bs then
    return as < bs and -1 or 1
  end
  return 0
end

local function groups_by_name(stream)
  local out = {}
  local groups = call('XINFO', 'GROUPS', stream)
  for i = 1, #groups do
    local g = fields_by_name(groups[i])
    out[g['name']] = g
  end
  return out
end

local RESCUE_KEYS = { 'stream', 'rescue' }

--[[
baton_v2_rescue_start: starts a rescue of one queue (docs/rescue.md): a clean consumer group R
takes over the backlog of a broken group G.
  KEYS[1]  baton:v2:{NS}:stream:TYPE
  KEYS[2]  baton:v2:{NS}:rescue:TYPE
  ARGV[1]  group G
  ARGV[2]  rescue group R
  Creates R at 0 (it sees every entry still in the stream: undelivered, G's pending and any entry
  G skipped), records the handover id (the stream's last generated id), and moves G to it (never
  backwards) so G's consumers only get entries added after the start.
  Returns: the handover id.
  Errors: BATON_CONFLICT (rescue in progress, R exists); BATON_NOT_FOUND (no stream, no group G);
    BATON_INVALID <field>: <rule>.
  Events: none (no task changes state).
]]
register('baton_v2_rescue_start', function(keys, args)
  local k = bind_keys(keys, RESCUE_KEYS, true)
  argc(args, 2, 'group, rescue_group')
  local group, rescue = nonempty_arg(args[1], 'group'), nonempty_arg(args[2], 'rescue_group')
  local stream, state = k.stream, k.rescue
  if call('EXISTS', state) == 1 then
    raise('BATON_CONFLICT', 'a rescue of this queue is already in progress (group ' ..
      tostring(call('HGET', state, 'group')) .. '): finish it first')
  end
  if call('EXISTS', stream) == 0 then
    raise('BATON_NOT_FOUND', 'stream ' .. stream .. ': nothing is queued for this type')
  end
  local info = fields_by_name(call('XINFO', 'STREAM', stream))
  local groups = groups_by_name(stream)
  if groups[rescue] then
    raise('BATON_CONFLICT', 'consumer group ' .. rescue .. ' already exists on ' .. stream ..
      ': finish the rescue it belongs to, or destroy it with XGROUP DESTROY')
  end
  local g = groups[group]
  if not g then
    raise('BATON_NOT_FOUND', 'consumer group ' .. group .. ' of ' .. stream)
  end
  local handover = info['last-generated-id']
  local before = g['last-delivered-id']
  call('XGROUP', 'CREATE', stream, rescue, '0')
  if compare_sids(before, handover) < 0 then
    call('XGROUP', 'SETID', stream, group, handover, 'ENTRIESREAD',
      int_text(info['entries-added']))
  end
  call('HSET', state, 'group', group, 'rescue_group', rescue, 'handover_id', handover,
    'group_last_id_before', before, 'started_ms', int_text(now_ms()),
    'backlog_at_start', int_text(info['length']))
  return handover
end)

--[[
baton_v2_rescue_finish: ends a rescue and hands the queue back to group G.
  KEYS[1]  baton:v2:{NS}:stream:TYPE
  KEYS[2]  baton:v2:{NS}:rescue:TYPE
  ARGV[1]  force ("1" or "0")
  ARGV[2]  scan limit (entries counted as left behind, >= 1)
  Refuses unless forced while R has entries <= handover not yet delivered, or pending entries
  (<= handover: the backlog is not drained; > handover: rescue workers still hold tasks and must
  be stopped first). Then acks in G every G-pending entry <= handover whose stream entry is gone
  (the rescue finished it), sets G to the handover id if it is behind it, destroys R and deletes
  the state.
  Returns: {acked_in_G, G's last id, left_behind}.
  Errors: BATON_NOT_FOUND (no rescue in progress, G gone); BATON_CONFLICT (not done, R gone
    without force); BATON_INVALID <field>: <rule>.
  Events: none.
]]
register('baton_v2_rescue_finish', function(keys, args)
  local k = bind_keys(keys, RESCUE_KEYS, true)
  argc(args, 2, 'force, limit')
  if args[1] ~= '0' and args[1] ~= '1' then
    invalid('force', 'must be 0 or 1')
  end
  local force = args[1] == '1'
  local limit = int_arg(args[2], 'limit', 1, 1000000)
  local stream, state = k.stream, k.rescue
  local st = fields_by_name(call('HGETALL', state))
  if not st['group'] then
    raise('BATON_NOT_FOUND', 'no rescue of this queue is in progress')
  end
  local group, rescue, handover = st['group'], st['rescue_group'], st['handover_id']
  local groups = groups_by_name(stream)
  local g, r = groups[group], groups[rescue]
  if not g then
    raise('BATON_NOT_FOUND', 'consumer group ' .. group .. ' of ' .. stream ..
      ' (destroyed during the rescue?)')
  end
  local undelivered, pending_le, pending_after = 0, 0, 0
  if r then
    if compare_sids(r['last-delivered-id'], handover) < 0 then
      undelivered = #call('XRANGE', stream, '(' .. r['last-delivered-id'], handover, 'COUNT', limit)
    end
    pending_le = #call('XPENDING', stream, rescue, '-', handover, limit)
    pending_after = #call('XPENDING', stream, rescue, '(' .. handover, '+', limit)
  elseif not force then
    raise('BATON_CONFLICT', 'rescue group ' .. rescue .. ' is gone: use --force')
  end
  if not force and undelivered + pending_le + pending_after > 0 then
    raise('BATON_CONFLICT', 'rescue group ' .. rescue .. ' is not done: ' .. undelivered ..
      ' entries up to the handover ' .. handover .. ' not yet delivered, ' .. pending_le ..
      ' pending, and ' .. pending_after .. ' newer entries still held by rescue workers. Let ' ..
      'the rescue workers drain the backlog, stop them (they ack what they hold), check ' ..
      '`baton rescue status`, then finish again (or use --force)')
  end
  local acked, start = 0, '-'
  while true do
    local p = call('XPENDING', stream, group, start, handover, 1000)
    for i = 1, #p do
      local sid = p[i][1]
      if #call('XRANGE', stream, sid, sid) == 0 then
        call('XACK', stream, group, sid)
        acked = acked + 1
      end
    end
    if #p < 1000 then
      break
    end
    start = '(' .. p[#p][1]
  end
  local resumes = g['last-delivered-id']
  if compare_sids(resumes, handover) < 0 then
    call('XGROUP', 'SETID', stream, group, handover)
    resumes = handover
  end
  if r then
    call('XGROUP', 'DESTROY', stream, rescue)
  end
  call('DEL', state)
  return { acked, resumes, undelivered + pending_le }
end)
