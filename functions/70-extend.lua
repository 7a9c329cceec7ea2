
--[[
baton_v2_extend: heartbeat. Renews the leases of the tasks this consumer still holds: each lease
then ends lease_ms from now (server clock).
  KEYS[1]  baton:v2:{NS}:stream:TYPE
  KEYS[2]  baton:v2:{NS}:leases:TYPE
  KEYS[3]  baton:v2:{NS}:tasks
  KEYS[4]  baton:v2:{NS}:config
  ARGV[1]  group
  ARGV[2]  consumer
  ARGV[3]  lease_ms (1000..86400000; 0 = the namespace's lease_ms setting): the consumer's lease
           length from now on, for every task it holds of this type (as in baton_v2_dequeue)
  ARGV[4..] pairs: id, SID of each task the consumer is running
  A task is held when its record is queued at that SID and the entry is pending for this consumer
  in the group. A lease that ran out but that nobody reclaimed yet is still held (the worker is
  alive: it keeps its task). Renewing resets the entry's delivery time in the group's pending
  entries list (XCLAIM to the same consumer, JUSTID: the delivery count does not change).
  Returns: the SIDs still held, in argument order; a SID missing from the answer was taken back
    (or finished elsewhere): stop working on it. Entries held by another consumer are never taken.
  Errors: BATON_INVALID <field>: <rule>.
  Events: none.
]]
local EXTEND_KEYS = { 'stream', 'leases', 'tasks', 'config' }
register('baton_v2_extend', function(keys, args)
  local k = bind_keys(keys, EXTEND_KEYS, true)
  local group, consumer, lease_text = args[1], args[2], args[3]
  nonempty_arg(group, 'group')
  nonempty_arg(consumer, 'consumer')
  local lease_ms = lease_arg(lease_text)
  if #args < 3 or (#args - 3) % 2 ~= 0 then
    invalid('ARGV', 'expected group, consumer, lease_ms, then id, SID pairs')
  end
  local n = (#args - 3) / 2
  local ids, sids = {}, {}
  for i = 1, n do
    ids[i] = id_arg(args[2 + 2 * i], 'id')
    sids[i] = stream_id_arg(args[3 + 2 * i], 'SID')
  end
  if n == 0 then
    return {}
  end
  local records = call_many('HMGET', k.tasks, ids)
  local prefix = 'queued|' .. k.type .. '|'
  local held, h = {}, 0
  for i = 1, n do
    local rec, sid = records[i], sids[i]
    if rec and sub(rec, 1, #prefix) == prefix and sub(rec, -#sid - 1) == '|' .. sid then
      local p = pcall_redis('XPENDING', k.stream, group, sid, sid, 1, consumer)
      if type_(p) == 'table' and p.err then
        if find(p.err, 'NOGROUP', 1, true) then
          return {}
        end
        return p
      end
      if p[1] then
        h = h + 1
        held[h] = sid
      end
    end
  end
  if h > 0 then
    for s = 1, h, CHUNK do
      local claim = { 'XCLAIM', k.stream, group, consumer, '0' }
      for j = s, s + CHUNK - 1 do
        if j > h then
          break
        end
        claim[#claim + 1] = held[j]
      end
      claim[#claim + 1] = 'JUSTID'
      call(unpack_(claim))
    end
    if lease_ms == 0 then
      lease_ms = read_config(k.config).lease_ms
    end
    set_consumer_lease(k, consumer, int_text(lease_ms))
  end
  return held
end)
