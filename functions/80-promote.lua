
--[[
baton_promote: moves due scheduled (delayed or retrying) tasks of one (NS, TYPE) into the stream.
Atomic: any number of promoters may call it at once; nothing is promoted twice or lost.
  KEYS[1]  baton:{NS}:scheduled:TYPE
  KEYS[2]  baton:{NS}:stream:TYPE
  KEYS[3]  baton:{NS}:tasks
  KEYS[4]  baton:{NS}:bodies
  KEYS[5]  baton:{NS}:events
  ARGV[1]  limit (tasks per call, >= 1)
  ARGV[2]  events MAXLEN (entries; 0 = no events)
  Each due task gets a stream entry (its body, attempt = the record's attempt), its record becomes
  queued at the new SID and its body leaves bodies. A member without a scheduled/retry record is
  removed from the set. A missing or corrupt body still gives an entry (with empty fields), which
  the next baton_dequeue sends to the dead-letter queue as malformed.
  Returns: {promoted, next_due_ms, now_ms}; next_due_ms is -1 when the set is empty (it is <= now
    when more tasks are due than the limit allowed: call again).
  Errors: BATON_INVALID <field>: <rule>.
  Events: scheduled -> queued, retry -> queued.
]]
register('baton_promote', function(keys, args)
  local sched, stream, tasks, bodies, events = keys[1], keys[2], keys[3], keys[4], keys[5]
  local limit_text, maxlen_text = args[1], args[2]

  int_arg(limit_text, 'limit', 1)
  local ctx = events_ctx(events, maxlen_text)
  local task_type = key_type(sched, 'scheduled', 1)
  if key_type(stream, 'stream', 2) ~= task_type then
    invalid('KEYS[2]', 'must be the stream of task type ' .. task_type)
  end
  local now = now_ms()

  local ids = call('ZRANGE', sched, '-inf', now, 'BYSCORE', 'LIMIT', 0, limit_text)
  local promoted = 0
  if #ids > 0 then
    local records = call_many('HMGET', tasks, ids)
    local texts = call_many('HMGET', bodies, ids)
    local new_records, r = {}, 0
    local moved = {}
    for i = 1, #ids do
      local id, rec = ids[i], records[i]
      local state, _, attempt
      if rec then
        state, _, attempt = parse_record(rec)
      end
      if state == 'scheduled' or state == 'retry' then
        local sid = add_entry(stream, id, decode_body(texts[i]), attempt)
        new_records[r + 1] = id
        new_records[r + 2] = make_record('queued', task_type, attempt, sid)
        r = r + 2
        emit(ctx, id, task_type, state, 'queued', attempt, '', '')
        promoted = promoted + 1
        moved[promoted] = id
      end
    end
    call_many('ZREM', sched, ids)
    call_many('HDEL', bodies, moved)
    if r > 0 then
      call_many('HSET', tasks, new_records)
    end
  end
  local next_due = earliest_due(sched) or -1
  return { promoted, next_due, now }
end)
