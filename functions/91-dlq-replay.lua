
--[[
baton_dlq_replay: puts a dead task back into its stream with a fresh retry budget (attempt 0),
optionally with a new payload. The error history stays in errors.
  KEYS[1]  baton:{NS}:dead:TYPE
  KEYS[2]  baton:{NS}:stream:TYPE
  KEYS[3]  baton:{NS}:tasks
  KEYS[4]  baton:{NS}:bodies
  KEYS[5]  baton:{NS}:events
  ARGV[1]  id
  ARGV[2]  new payload (JSON object text, <= 524288 bytes; empty = keep the old one)
  ARGV[3]  events MAXLEN (entries; 0 = no events)
  Returns: the new SID.
  Errors: BATON_NOT_FOUND dead task ID; BATON_INVALID <field>: <rule>.
  Events: dead -> queued (attempt 0).
]]
register('baton_dlq_replay', function(keys, args)
  local dead, stream, tasks, bodies, events = keys[1], keys[2], keys[3], keys[4], keys[5]
  local id, payload, maxlen_text = args[1], args[2], args[3]

  id_arg(id, 'id')
  if payload == nil then
    invalid('payload', 'is required (empty = keep)')
  end
  if payload ~= '' then
    object_arg(payload, 'payload', PAYLOAD_MAX_BYTES)
  end
  local ctx = events_ctx(events, maxlen_text)
  local task_type = key_type(dead, 'dead', 1)
  if key_type(stream, 'stream', 2) ~= task_type then
    invalid('KEYS[2]', 'must be the stream of task type ' .. task_type)
  end

  local rec = call('HGET', tasks, id)
  local state, rtype
  if rec then
    state, rtype = parse_record(rec)
  end
  if state ~= 'dead' or rtype ~= task_type then
    raise('BATON_NOT_FOUND', 'dead task ' .. id .. ' of type ' .. task_type)
  end
  local body = decode_body(call('HGET', bodies, id))
  if payload ~= '' then
    body.payload = payload
  end
  local sid = add_entry(stream, id, body, '0')
  call('HSET', tasks, id, make_record('queued', task_type, 0, sid))
  call('HDEL', bodies, id)
  call('ZREM', dead, id)
  emit(ctx, id, task_type, 'dead', 'queued', '0', '', '')
  return sid
end)
