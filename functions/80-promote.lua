
--[[
baton_v2_promote: moves due scheduled (delayed or retrying) tasks of one (NS, TYPE) into the
stream. Atomic: any number of promoters may call it at once; nothing is promoted twice or lost.
  KEYS[1]  baton:v2:{NS}:scheduled:TYPE
  KEYS[2]  baton:v2:{NS}:stream:TYPE
  KEYS[3]  baton:v2:{NS}:tasks
  KEYS[4]  baton:v2:{NS}:bodies
  KEYS[5]  baton:v2:{NS}:events
  KEYS[6]  baton:v2:{NS}:config
  ARGV[1]  limit (tasks per call, 1..10000)
  Each due task gets a stream entry (its body, attempt = the record's attempt), its record becomes
  queued at the new SID and its body leaves bodies. A member without a scheduled/retry record is
  removed from the set. A missing or corrupt body still gives an entry (with empty fields), which
  the next baton_v2_dequeue sends to the dead-letter queue as malformed.
  Returns: {promoted, next_due_ms, now_ms}; next_due_ms is -1 when the set is empty (it is <= now
    when more tasks are due than the limit allowed: call again).
  Errors: BATON_INVALID <field>: <rule>.
  Events: scheduled -> queued, retry -> queued (one entry per source state).
]]
local PROMOTE_KEYS = { 'scheduled', 'stream', 'tasks', 'bodies', 'events', 'config' }
register('baton_v2_promote', function(keys, args)
  local k = bind_keys(keys, PROMOTE_KEYS, true)
  argc(args, 1, 'limit')
  -- Redis takes the limit as it parses integers ('01' is none): pass the number on.
  local limit_text = int_text(int_arg(args[1], 'limit', 1, 10000))
  local now = now_ms()

  local ids = call('ZRANGE', k.scheduled, '-inf', now, 'BYSCORE', 'LIMIT', 0, limit_text)
  local promoted = 0
  if #ids > 0 then
    local ctx = new_ctx(k)
    ctx.now = now
    local records = call_many('HMGET', k.tasks, ids)
    local texts = call_many('HMGET', k.bodies, ids)
    local new_records, r = {}, 0
    local moved = {}
    for i = 1, #ids do
      local id, rec = ids[i], records[i]
      local state, rtype, attempt
      if rec then
        state, rtype, attempt = parse_record(rec)
      end
      if (state == 'scheduled' or state == 'retry') and rtype == k.type then
        local attempt_text = int_text(attempt)
        local sid = add_entry(k.stream, id, decode_body(texts[i]), attempt_text)
        new_records[r + 1] = id
        new_records[r + 2] = make_record('queued', k.type, attempt_text, sid)
        r = r + 2
        emit(ctx, id, state, 'queued', attempt_text, '', '')
        promoted = promoted + 1
        moved[promoted] = id
      end
    end
    call_many('ZREM', k.scheduled, ids)
    call_many('HDEL', k.bodies, moved)
    if r > 0 then
      call_many('HSET', k.tasks, new_records)
    end
  end
  local next_due = earliest_score(k.scheduled) or -1
  return { promoted, next_due, now }
end)
