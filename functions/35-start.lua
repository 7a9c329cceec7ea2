
--[[
baton_v2_start: the bookkeeping of the fast read path. A worker may read its stream itself,
  XREADGROUP GROUP group consumer COUNT count BLOCK ms STREAMS baton:v2:{NS}:stream:TYPE >
(the entries then cross no Lua bridge, and the read blocks until work arrives), and must then call
baton_v2_start with what it read, before it acks or fails any of those entries.
  KEYS[1]  baton:v2:{NS}:stream:TYPE
  KEYS[2]  baton:v2:{NS}:leases:TYPE
  KEYS[3]  baton:v2:{NS}:tasks
  KEYS[4]  baton:v2:{NS}:bodies
  KEYS[5]  baton:v2:{NS}:errors
  KEYS[6]  baton:v2:{NS}:dead:TYPE
  KEYS[7]  baton:v2:{NS}:events
  KEYS[8]  baton:v2:{NS}:done
  KEYS[9]  baton:v2:{NS}:ended
  KEYS[10] baton:v2:{NS}:config
  ARGV[1]  group
  ARGV[2]  consumer
  ARGV[3]  lease_ms (as baton_v2_dequeue): the consumer's lease length from now on
  ARGV[4]  N
  then 3 values per entry read, in read order: SID; id (the task field's text before its first
    '|', or '' when the worker could not split the entry); attempt (the task field's ATTEMPT, or '')
  Per entry: when the task record is queued at this SID with this attempt, the task has started
  (one queued -> active events entry lists them). Any other entry gets what baton_v2_dequeue gives
  it: a malformed entry (or one no baton_v2_enqueue wrote) goes to the dead-letter queue with kind
  'malformed', a stale copy is acked and deleted, an entry already gone (e.g. a late ack of the
  task's previous holder deleted it since the read) is left alone.
  Returns: the SIDs of the entries that must not run (dead-lettered, dropped or gone), in argument
    order; usually none.
  Errors: BATON_INVALID <field>: <rule>.
  Events: queued -> active (attempt = entry attempt + 1, worker = consumer); queued -> dead for
    malformed entries; queued -> deleted for stale copies.
]]
local START_KEYS = { 'stream', 'leases', 'tasks', 'bodies', 'errors', 'dead', 'events', 'done',
  'ended', 'config' }
register('baton_v2_start', function(keys, args)
  local k = bind_keys(keys, START_KEYS, true)
  local group, consumer, lease_text = args[1], args[2], args[3]
  nonempty_arg(group, 'group')
  nonempty_arg(consumer, 'consumer')
  local lease_ms = lease_arg(lease_text)
  local n = int_arg(args[4], 'N', 0, 1000)
  argc(args, 4 + 3 * n, '4 + 3N')
  local ctx = new_ctx(k)
  if lease_ms == 0 then
    lease_ms = ctx.config.lease_ms
  end
  -- The lease length is written here too (after every argument check): a consumer pruned while
  -- idle (baton_v2_reclaim) gets its entry back with its first delivery.
  if n == 0 then
    set_consumer_lease(k, consumer, int_text(lease_ms))
    return {}
  end
  local ids = {}
  for i = 1, n do
    ids[i] = args[3 + 3 * i]
  end
  local records = call_many('HMGET', k.tasks, ids)
  local prefix = 'queued|' .. k.type .. '|'
  -- First pass, no writes: the entries that started (the common case), and the SIDs of the
  -- others checked, so that a bad SID is refused before anything is written.
  local started = {}
  for i = 1, n do
    local b = 2 + 3 * i
    local sid, attempt = args[b], args[b + 2]
    local rec = records[i]
    if rec and NEXT_TEXT[attempt] and rec == prefix .. attempt .. '|' .. sid then
      started[i] = true
    else
      stream_id_arg(sid, 'SID')
    end
  end
  set_consumer_lease(k, consumer, int_text(lease_ms))
  local out = {}
  local batch = nil -- the queued -> active events entry, opened at the first start
  local groups = nil
  for i = 1, n do
    local b = 2 + 3 * i
    local sid, id, attempt = args[b], args[b + 1], args[b + 2]
    local rec
    if started[i] then
      batch = add_to_batch(ctx, batch, 'queued', 'active', consumer, id, NEXT_TEXT[attempt])
    else
      -- The uncommon case: read the entry again and judge it as baton_v2_dequeue does, by the
      -- record of the entry's own id (never the id the caller passed: a malformed entry with the
      -- id of a live task must not overwrite it).
      if ctx.now == nil then
        ctx.now = now_ms()
        groups = { group }
      end
      local read = call('XRANGE', k.stream, sid, sid)
      local fv = read[1] and read[1][2]
      local e, reason = nil, 'gone'
      if fv then
        e, reason = parse_entry(fv)
        local rid = e and e.id or raw_entry_id(fv)
        rec = rid and call('HGET', k.tasks, rid) or false
      end
      local state, _, _, rsid
      if rec and e then
        state, _, _, rsid = parse_record(rec)
      end
      if not fv then
        out[#out + 1] = sid
      elseif e and state == 'queued' and rsid == sid then
        batch = add_to_batch(ctx, batch, 'queued', 'active', consumer, e.id,
          NEXT_TEXT[e.attempt] or int_text(tonumber_(e.attempt) + 1))
      elseif e and rec then
        drop_stale(ctx, e.id, sid, groups, e.attempt, consumer)
        out[#out + 1] = sid
      else
        bury_malformed(ctx, sid, groups, fv, rec or false,
          'malformed stream entry ' .. sid .. ': ' .. (reason or no_record_reason(e.id)),
          consumer, consumer)
        out[#out + 1] = sid
      end
    end
  end
  if ctx.died then
    cap_dead(ctx)
  end
  return out
end)
