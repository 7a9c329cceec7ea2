
--[[
baton_ack: records success for N tasks of one (NS, TYPE) and writes their done markers, atomically.
  KEYS[1]  baton:{NS}:stream:TYPE
  KEYS[2]  baton:{NS}:scheduled:TYPE
  KEYS[3]  baton:{NS}:tasks
  KEYS[4]  baton:{NS}:events
  KEYS[5]  baton:{NS}:errors
  KEYS[6]  baton:{NS}:bodies
  KEYS[6+i]  baton:{NS}:done:ID_i, i = 1..N
  ARGV[1]  group
  ARGV[2]  retention_s (done marker TTL, seconds, >= 1)
  ARGV[3]  events MAXLEN (entries; 0 = no events)
  ARGV[4]  N
  then 2 values per task: id, SID (the stream entry the worker ran)
  then ARGV[5+2N]  consumer
  Per task: XACK and XDEL of the SID; the record, body and error history leave their hashes;
  done:ID is set to {"state":"done",...} with the TTL. A stale ack (the lease had expired and the
  task was taken back) still counts as success: a waiting retry (scheduled set, or a newer stream
  copy) is removed; a redelivery that already started may still run (at-least-once).
  Returns: N statuses: 'done', 'stale_done' (success recorded after the lease was lost) or 'gone'
    (no live task: already finished, cancelled or deleted; or dead, which stays in the
    dead-letter queue since baton_ack does not get its key).
  Errors: BATON_INVALID <field>: <rule>.
  Events: active -> done (attempt = the run that succeeded, worker = consumer); for a stale ack
    the from state is the record's (retry, scheduled or queued).
]]
register('baton_ack', function(keys, args)
  local stream, sched, tasks, events, errors, bodies =
    keys[1], keys[2], keys[3], keys[4], keys[5], keys[6]
  local group, retention_text, maxlen_text, n_text = args[1], args[2], args[3], args[4]

  nonempty_arg(group, 'group')
  int_arg(retention_text, 'retention_s', 1)
  local ctx = events_ctx(events, maxlen_text)
  local n = int_arg(n_text, 'N', 0)
  if #keys ~= 6 + n then
    invalid('KEYS', 'expected 6 + N = ' .. (6 + n) .. ' keys, got ' .. #keys)
  end
  if #args ~= 5 + 2 * n then
    invalid('ARGV', 'expected 5 + 2N = ' .. (5 + 2 * n) .. ' values, got ' .. #args)
  end
  local consumer = args[5 + 2 * n]
  local task_type = key_type(stream, 'stream', 1)
  if n == 0 then
    return {}
  end
  local ids, sids = {}, {}
  for i = 1, n do
    ids[i] = args[3 + 2 * i]
    sids[i] = args[4 + 2 * i]
  end
  -- The records are read before anything is checked or written. A task whose record is queued at
  -- the given SID with attempt 0 (the common case: first run) is 'fresh': its id and SID are the
  -- record's, so they need no check. Every other id and SID is checked, in argument order,
  -- before the first write. Ids are not pattern-checked: an id without a live record is 'gone'.
  local records = call_many('HMGET', tasks, ids)
  local fresh_prefix = 'queued|' .. task_type .. '|0|'
  local fresh = {}
  for i = 1, n do
    local rec = records[i]
    if rec and rec == fresh_prefix .. sids[i] then
      fresh[i] = true
    else
      nonempty_arg(ids[i], 'id')
      if not find(sids[i], '^%d+%-%d+$') then
        stream_id_arg(sids[i], 'SID')
      end
    end
  end

  local now = now_ms()
  -- The done marker of a normal ack is prefix .. attempts .. suffix.
  local done_prefix = '{"state":"done","type":"' .. task_type .. '","attempts":'
  local done_suffix = ',"finished_ms":' .. int_text(now) .. ',"worker":' .. json_string(consumer) ..
      '}'
  local fresh_marker = done_prefix .. '1' .. done_suffix
  local with_events = ctx.maxlen ~= 0

  xack_many(stream, group, sids)
  call_many('XDEL', stream, sids)

  local out = {}
  local finished, f = {}, 0 -- ids leaving tasks / bodies / errors
  local newer_sids, s = {}, 0 -- stream copies of a waiting retry (stale ack)
  local seen = {} -- ids already acked in this call: a repeat is 'gone'
  for i = 1, n do
    local id = ids[i]
    if fresh[i] and not seen[id] then
      seen[id] = true
      out[i] = 'done'
      f = f + 1
      finished[f] = id
      call('SET', keys[6 + i], fresh_marker, 'EX', retention_text)
      if with_events then -- emit(), inlined on the hot path
        call('XADD', events, '*', 'id', id, 'type', task_type, 'from', 'active', 'to', 'done',
          'attempt', '1', 'worker', consumer, 'error', '')
        trim_ctx = ctx
      end
    else
      local sid, rec = sids[i], records[i]
      local state, rtype, attempt, rsid
      if rec and not seen[id] then
        state, rtype, attempt, rsid = match(rec, '^(%a+)|([^|]*)|(%d+)|(.*)$')
      end
      seen[id] = true
      if state == nil or state == 'dead' then
        out[i] = 'gone'
      else
        local attempts, from
        if state == 'queued' and rsid == sid then
          out[i] = 'done'
          attempts, from = NEXT_TEXT[attempt] or int_text(tonumber_(attempt) + 1), 'active'
        else
          out[i] = 'stale_done'
          attempts, from = attempt, state
          if state == 'queued' then
            s = s + 1
            newer_sids[s] = rsid
          else
            call('ZREM', sched, id)
            call('HDEL', bodies, id)
          end
        end
        f = f + 1
        finished[f] = id
        local marker
        if rtype == task_type then
          marker = done_prefix .. attempts .. done_suffix
        else
          marker = final_record('done', rtype, attempts, now, consumer)
        end
        call('SET', keys[6 + i], marker, 'EX', retention_text)
        if with_events then
          emit(ctx, id, rtype, from, 'done', attempts, consumer, '')
        end
      end
    end
  end
  if f > 0 then
    call_many('HDEL', tasks, finished)
    call_many('HDEL', errors, finished)
  end
  if s > 0 then
    call_many('XDEL', stream, newer_sids)
  end
  return out
end)
