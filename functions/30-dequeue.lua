
--[[
baton_dequeue: delivers up to `count` new entries of one work stream to one consumer, checking each.
  KEYS[1]  baton:{NS}:stream:TYPE
  KEYS[2]  baton:{NS}:tasks
  KEYS[3]  baton:{NS}:events
  KEYS[4]  baton:{NS}:bodies
  KEYS[5]  baton:{NS}:errors
  KEYS[6]  baton:{NS}:dead:TYPE
  ARGV[1]  group (consumer group; created at id 0 when missing, so it sees the whole backlog)
  ARGV[2]  consumer
  ARGV[3]  count (entries, >= 1)
  ARGV[4]  events MAXLEN (entries; 0 = no events)
  Returns: {entries, last_id}. entries is flat, 9 values per delivered task: SID, id, payload,
    max_retry, delay_seconds, created_at, execution_timeout, extra, attempt (attempts made before
    this delivery). When nothing was delivered, last_id is an id to block after with
    XREAD BLOCK ms STREAMS stream last_id: the stream's last entry (or 0-0) when nothing was read,
    or the last entry read when every entry read was dropped. Otherwise last_id is "".
  Checks per entry: the eight fields present, integer fields integers, a valid id, and a task
  record queued at this SID. A malformed entry (or one no baton_enqueue wrote) is acked, deleted
  and put in the dead-letter queue with kind 'malformed' and the reason, under its id or
  'malformed-SID'. An entry whose record points at another SID is a stale copy: acked, deleted.
  Errors: BATON_INVALID <field>: <rule>.
  Events: queued -> active (attempt = entry attempt + 1, worker = consumer); queued -> dead for
    malformed entries; queued -> deleted for stale copies.
]]
register('baton_dequeue', function(keys, args)
  local stream, tasks, events, bodies, errors, dead =
    keys[1], keys[2], keys[3], keys[4], keys[5], keys[6]
  local group, consumer, count_text, maxlen_text = args[1], args[2], args[3], args[4]

  nonempty_arg(group, 'group')
  nonempty_arg(consumer, 'consumer')
  int_arg(count_text, 'count', 1)
  local ctx = events_ctx(events, maxlen_text)
  local task_type = key_type(stream, 'stream', 1)

  local read = pcall_redis('XREADGROUP', 'GROUP', group, consumer, 'COUNT', count_text,
    'STREAMS', stream, '>')
  if type_(read) == 'table' and read.err then
    if not find(read.err, 'NOGROUP', 1, true) then
      return read
    end
    call('XGROUP', 'CREATE', stream, group, '0', 'MKSTREAM')
    read = call('XREADGROUP', 'GROUP', group, consumer, 'COUNT', count_text, 'STREAMS', stream,
      '>')
  end
  if not read then
    local last = call('XREVRANGE', stream, '+', '-', 'COUNT', 1)
    if last[1] then
      return { {}, last[1][1] }
    end
    return { {}, '0-0' }
  end

  local list = read[1][2]
  local n = #list
  local checked, reasons = {}, {}
  local lookup_ids, m = {}, 0
  local lookup_index = nil -- entry -> index in lookup_ids, once an entry had no id (else equal)
  local created_ok = {} -- created_at texts already checked (a batch mostly shares a few)
  for i = 1, n do
    local fv = list[i][2]
    -- The common entry (fields in order, small integers, a created_at already checked) is
    -- checked inline; any other goes through check_entry, which also names what is wrong.
    local v, reason = fv, nil
    if not (#fv == 16 and fv[1] == 'id' and fv[3] == 'payload' and fv[5] == 'max_retry' and
        fv[7] == 'delay_seconds' and fv[9] == 'created_at' and fv[11] == 'execution_timeout' and
        fv[13] == 'extra' and fv[15] == 'attempt' and SMALL_INTS[fv[6]] and
        (fv[8] == '0' or is_uint(fv[8])) and created_ok[fv[10]] and
        (fv[12] == '' or is_uint(fv[12])) and NEXT_TEXT[fv[16]]) then
      v, reason = check_entry(fv)
      if v then
        created_ok[v[10]] = true
      end
    end
    local id
    if v then
      checked[i], id = v, v[2]
    else
      reasons[i], id = reason, raw_entry_id(fv)
    end
    if id then
      m = m + 1
      lookup_ids[m] = id
      if lookup_index then
        lookup_index[i] = m
      end
    elseif not lookup_index then
      lookup_index = {}
      for j = 1, i - 1 do
        lookup_index[j] = j
      end
    end
  end
  local records = call_many('HMGET', tasks, lookup_ids)

  ctx.stream, ctx.tasks, ctx.bodies, ctx.errors, ctx.dead = stream, tasks, bodies, errors, dead
  ctx.group, ctx.type, ctx.now = group, task_type, nil
  local expected_prefix = 'queued|' .. task_type .. '|'
  local with_events = ctx.maxlen ~= 0
  local out, k = {}, 0
  for i = 1, n do
    local sid = list[i][1]
    local v = checked[i]
    local rec
    if lookup_index then
      rec = lookup_index[i] and records[lookup_index[i]] or false
    else
      rec = records[i]
    end
    local deliver = false
    if v and rec then
      if rec == expected_prefix .. v[16] .. '|' .. sid then
        deliver = true
      else
        local state, _, _, rsid = parse_record(rec)
        deliver = state == 'queued' and rsid == sid
      end
    end
    if deliver then
      out[k + 1] = sid
      out[k + 2] = v[2]
      out[k + 3] = v[4]
      out[k + 4] = v[6]
      out[k + 5] = v[8]
      out[k + 6] = v[10]
      out[k + 7] = v[12]
      out[k + 8] = v[14]
      out[k + 9] = v[16]
      k = k + 9
      if with_events then -- emit(), inlined on the hot path
        call('XADD', events, '*', 'id', v[2], 'type', task_type, 'from', 'queued', 'to', 'active',
          'attempt', NEXT_TEXT[v[16]] or int_text(tonumber_(v[16]) + 1), 'worker', consumer,
          'error', '')
        trim_ctx = ctx
      end
    elseif v and rec then
      drop_stale(ctx, v[2], sid, v[16], consumer)
    else
      if ctx.now == nil then
        ctx.now = now_ms()
      end
      local reason = reasons[i] or no_record_reason(v[2])
      bury_malformed(ctx, sid, list[i][2], rec, 'malformed stream entry ' .. sid .. ': ' .. reason,
        consumer, consumer)
    end
  end
  if k == 0 then
    return { out, list[n][1] }
  end
  return { out, '' }
end)
