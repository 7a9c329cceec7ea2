
--[[
baton_extend: heartbeat. Resets the idle time (the lease) of the entries this consumer still holds.
  KEYS[1]  baton:{NS}:stream:TYPE
  ARGV[1]  group
  ARGV[2]  consumer
  ARGV[3..] SIDs the consumer is working on
  Returns: the SIDs still held, in argument order; a SID missing from the answer was taken back
    (or deleted from the stream): stop working on it. Entries held by another consumer are never
    taken over.
  Errors: BATON_INVALID <field>: <rule>.
  Events: none.
]]
register('baton_extend', function(keys, args)
  local stream = keys[1]
  local group, consumer = args[1], args[2]

  nonempty_arg(group, 'group')
  nonempty_arg(consumer, 'consumer')
  for i = 3, #args do
    stream_id_arg(args[i], 'SID')
  end
  local held, k = {}, 0
  for i = 3, #args do
    local sid = args[i]
    local p = pcall_redis('XPENDING', stream, group, sid, sid, 1, consumer)
    if type_(p) == 'table' and p.err then
      if find(p.err, 'NOGROUP', 1, true) then
        return {}
      end
      return p
    end
    if p[1] then
      k = k + 1
      held[k] = sid
    end
  end
  if k == 0 then
    return {}
  end
  -- XCLAIM to the same consumer with min-idle 0 resets the idle time; JUSTID keeps the delivery
  -- count. Entries deleted from the stream are dropped from the PEL and left out of the reply.
  local out, o = {}, 0
  for s = 1, k, CHUNK do
    local e = s + CHUNK - 1
    if e > k then
      e = k
    end
    local argv, a = { stream, group, consumer, 0 }, 4
    for j = s, e do
      a = a + 1
      argv[a] = held[j]
    end
    argv[a + 1] = 'JUSTID'
    local r = call('XCLAIM', unpack_(argv))
    for j = 1, #r do
      o = o + 1
      out[o] = r[j]
    end
  end
  return out
end)
