
--[[
baton_v2_dequeue: delivers up to `count` new entries of one work stream to one consumer, checking
each, and leases every delivered task to that consumer until now + lease_ms (server clock).
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
  ARGV[4]  lease_ms (1000..86400000; 0 = the namespace's lease_ms setting)
  Returns: {entries, last_id, lease_deadline_ms}. entries is flat, 9 values per delivered task:
    SID, id, payload, max_retry, delay_seconds, created_at, execution_timeout, extra, attempt
    (attempts made before this delivery). When nothing was delivered, last_id is an id to block
    after with XREAD BLOCK ms STREAMS stream last_id: the stream's last entry (or 0-0) when nothing
    was read, or the last entry read when every entry read was dropped; otherwise last_id is "".
    lease_deadline_ms: when the leases of the delivered tasks end unless baton_v2_extend moves them.
  Checks per entry: the eight fields present, integer fields integers, a valid id, and a task
  record queued at this SID. A malformed entry (or one no baton_v2_enqueue wrote) is acked,
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
  int_arg(count_text, 'count', 1, 1000)
  local lease_ms = 0
  if lease_text ~= '0' then
    lease_ms = int_arg(lease_text, 'lease_ms', 1000, 86400000)
  end
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
  local records = call_many('HMGET', k.tasks, lookup_ids)

  local ctx = new_ctx(k)
  ctx.now = now_ms()
  if lease_ms == 0 then
    lease_ms = ctx.config.lease_ms
  end
  local deadline = ctx.now + lease_ms
  local deadline_text = int_text(deadline)
  local groups = { group }
  local expected_prefix = 'queued|' .. k.type .. '|'
  local out, o = {}, 0
  local leases, l = {}, 0
  local batch = nil -- the queued -> active events entry, opened at the first delivery
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
      out[o + 1] = sid
      out[o + 2] = v[2]
      out[o + 3] = v[4]
      out[o + 4] = v[6]
      out[o + 5] = v[8]
      out[o + 6] = v[10]
      out[o + 7] = v[12]
      out[o + 8] = v[14]
      out[o + 9] = v[16]
      o = o + 9
      leases[l + 1] = deadline_text
      leases[l + 2] = v[2]
      l = l + 2
      batch = add_to_batch(ctx, batch, 'queued', 'active', consumer, v[2],
        NEXT_TEXT[v[16]] or int_text(tonumber_(v[16]) + 1))
    elseif v and rec then
      drop_stale(ctx, v[2], sid, groups, v[16], consumer)
    else
      local reason = reasons[i] or no_record_reason(v[2])
      bury_malformed(ctx, sid, groups, list[i][2], rec,
        'malformed stream entry ' .. sid .. ': ' .. reason, consumer, consumer)
    end
  end
  if l > 0 then
    call_many('ZADD', k.leases, leases)
  end
  if ctx.died then
    cap_dead(ctx)
  end
  if o == 0 then
    return { out, list[n][1], 0 }
  end
  return { out, '', deadline }
end)
