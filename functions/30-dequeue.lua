
--[[
baton_v2_dequeue: delivers up to `count` new entries of one work stream to one consumer, checking
each. Each delivered task is leased to that consumer: its lease ends lease_ms after its delivery
(server clock) unless baton_v2_extend renews it.
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
  ARGV[1]  group (consumer group; created at id 0 when missing, so it sees the whole backlog)
  ARGV[2]  consumer
  ARGV[3]  count (entries, 1..1000)
  ARGV[4]  lease_ms (1000..86400000; 0 = the namespace's lease_ms setting): the consumer's lease
           length from now on, for every task it holds of this type (stored in leases:TYPE)
  Returns: {entries, last_id, lease_deadline_ms}. entries is flat, 9 values per delivered task:
    SID, id, payload, max_retry, delay_seconds, created_at, execution_timeout, extra, attempt
    (attempts made before this delivery). When nothing was delivered, last_id is an id to block
    after with XREAD BLOCK ms STREAMS stream last_id: the stream's last entry (or 0-0) when nothing
    was read, or the last entry read when every entry read was dropped; otherwise last_id is "".
    lease_deadline_ms: when the leases of the delivered tasks end unless baton_v2_extend renews
    them.
  Checks per entry: the fields task and payload present, the task field's integers integers, and
  a task record queued at this SID. A malformed entry (or one no baton_v2_enqueue wrote) is acked,
  deleted and put in the dead-letter queue with kind 'malformed' and the reason, under its id or
  'malformed-SID'. An entry whose record points at another SID is a stale copy: acked, deleted.
  Errors: BATON_INVALID <field>: <rule>.
  Events: queued -> active (one entry; attempt = entry attempt + 1, worker = consumer);
    queued -> dead for malformed entries; queued -> deleted for stale copies.
]]
local DEQUEUE_KEYS = { 'stream', 'leases', 'tasks', 'bodies', 'errors', 'dead', 'events', 'done',
  'ended', 'config' }
register('baton_v2_dequeue', function(keys, args)
  local k = bind_keys(keys, DEQUEUE_KEYS, true)
  argc(args, 4, 'group, consumer, count, lease_ms')
  local group, consumer, count_text, lease_text = args[1], args[2], args[3], args[4]
  nonempty_arg(group, 'group')
  nonempty_arg(consumer, 'consumer')
  -- Redis takes the count as it parses integers ('01' is none): pass the number on.
  count_text = int_text(int_arg(count_text, 'count', 1, 1000))
  local lease_ms = lease_arg(lease_text)
  local stream = k.stream

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
      return { {}, last[1][1], 0 }
    end
    return { {}, '0-0', 0 }
  end

  -- Split each entry's task field. The common entry (two fields in order, small integers) takes
  -- one string.match; any other goes through parse_entry, which also names what is wrong.
  local list = read[1][2]
  local n = #list
  local ids, payloads, retries, delays, createds, timeouts, attempts, extras =
    {}, {}, {}, {}, {}, {}, {}, {}
  local reasons = {}
  local lookup_ids, m = {}, 0
  local lookup_index = nil -- entry -> index in lookup_ids, once an entry had no id (else equal)
  for i = 1, n do
    local fv = list[i][2]
    local id, max_retry, delay, created, timeout, attempt, extra
    if fv[1] == 'task' and fv[3] == 'payload' and fv[5] == nil then
      id, max_retry, delay, created, timeout, attempt, extra = match(fv[2], ENTRY_TASK_STRICT)
    end
    local payload = fv[4]
    if not (id and SMALL_INTS[max_retry] and #delay <= 15 and #created <= 15 and
        #timeout <= 15 and NEXT_TEXT[attempt]) then
      local e, reason = parse_entry(fv)
      if e then
        id, max_retry, delay, created, timeout, attempt, extra, payload = e.id, e.max_retry,
          e.delay_seconds, e.created_at, e.execution_timeout, e.attempt, e.extra, e.payload
      else
        id, reasons[i] = raw_entry_id(fv), reason
      end
    end
    if not reasons[i] then
      ids[i], payloads[i], retries[i], delays[i], createds[i], timeouts[i], attempts[i],
        extras[i] = id, payload, max_retry, delay, created, timeout, attempt, extra
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
  local records = call_many('HMGET', k.tasks, lookup_ids)

  local ctx = new_ctx(k)
  ctx.now = now_ms()
  if lease_ms == 0 then
    lease_ms = ctx.config.lease_ms
  end
  local groups = { group }
  local expected_prefix = 'queued|' .. k.type .. '|'
  local out, o = {}, 0
  local batch = nil -- the queued -> active events entry, opened at the first delivery
  for i = 1, n do
    local sid = list[i][1]
    local rec
    if lookup_index then
      rec = lookup_index[i] and records[lookup_index[i]] or false
    else
      rec = records[i]
    end
    local ok = not reasons[i]
    local deliver = false
    if ok and rec then
      local attempt = attempts[i]
      if rec == expected_prefix .. attempt .. '|' .. sid then
        deliver = true
      else
        local state, _, _, rsid = parse_record(rec)
        deliver = state == 'queued' and rsid == sid
      end
    end
    if deliver then
      local id, attempt = ids[i], attempts[i]
      out[o + 1] = sid
      out[o + 2] = id
      out[o + 3] = payloads[i]
      out[o + 4] = retries[i]
      out[o + 5] = delays[i]
      out[o + 6] = createds[i]
      out[o + 7] = timeouts[i]
      out[o + 8] = extras[i]
      out[o + 9] = attempt
      o = o + 9
      batch = add_to_batch(ctx, batch, 'queued', 'active', consumer, id,
        NEXT_TEXT[attempt] or int_text(tonumber_(attempt) + 1))
    elseif ok and rec then
      drop_stale(ctx, ids[i], sid, groups, attempts[i], consumer)
    else
      local reason = reasons[i] or no_record_reason(ids[i])
      bury_malformed(ctx, sid, groups, list[i][2], rec,
        'malformed stream entry ' .. sid .. ': ' .. reason, consumer, consumer)
    end
  end
  if ctx.died then
    cap_dead(ctx)
  end
  if o == 0 then
    return { out, list[n][1], 0 }
  end
  set_consumer_lease(k, consumer, int_text(lease_ms))
  return { out, '', ctx.now + lease_ms }
end)
