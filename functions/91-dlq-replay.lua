
--[[
baton_v2_dlq_replay: puts a dead task back into its stream with a fresh retry budget (attempt 0),
optionally with a new payload. The error history stays in errors: later failures continue its
sequence.
  KEYS[1]  baton:v2:{NS}:dead:TYPE
  KEYS[2]  baton:v2:{NS}:stream:TYPE
  KEYS[3]  baton:v2:{NS}:tasks
  KEYS[4]  baton:v2:{NS}:bodies
  KEYS[5]  baton:v2:{NS}:events
  KEYS[6]  baton:v2:{NS}:config
  ARGV[1]  id
  ARGV[2]  new payload (JSON object text, <= 524288 bytes; empty = keep the old one)
  A body that cannot become a valid task (a foreign or malformed entry: a field missing or not an
  integer, a payload that is not a JSON object) is refused, so a replay never causes an immediate
  second death; a new payload fixes a bad payload, nothing fixes the other fields.
  Returns: the new SID.
  Errors: BATON_NOT_FOUND dead task ID; BATON_CONFLICT cannot replay (with the reason and a
    hint); BATON_INVALID <field>: <rule>.
  Events: dead -> queued (attempt 0).
]]
local REPLAY_KEYS = { 'dead', 'stream', 'tasks', 'bodies', 'events', 'config' }

-- Why a dead task's body cannot be replayed as it is, or nil.
local function unreplayable(body)
  if SMALL_INTS[body.max_retry] == nil or SMALL_INTS[body.max_retry] > 25 then
    return 'max_retry is not an integer 0..25'
  end
  if not is_uint(body.delay_seconds) then
    return 'delay_seconds is not an integer'
  end
  local created = tonumber_(body.created_at)
  if not is_uint(body.created_at) or created < 946684800 or created > 4102444800 then
    return 'created_at is not Unix seconds'
  end
  if body.execution_timeout ~= '' and not is_uint(body.execution_timeout) then
    return 'execution_timeout is not an integer'
  end
  if body.extra ~= '' and not (find(body.extra, '^%s*{') and find(body.extra, '}%s*$')) then
    return 'extra is not a JSON object'
  end
  return nil
end

register('baton_v2_dlq_replay', function(keys, args)
  local k = bind_keys(keys, REPLAY_KEYS, true)
  argc(args, 2, 'id, payload')
  local id, payload = id_arg(args[1], 'id'), args[2]
  if payload ~= '' then
    object_arg(payload, 'payload', PAYLOAD_MAX_BYTES)
  end

  local rec = call('HGET', k.tasks, id)
  local state, rtype
  if rec then
    state, rtype = parse_record(rec)
  end
  if state ~= 'dead' or rtype ~= k.type then
    raise('BATON_NOT_FOUND', 'dead task ' .. id .. ' of type ' .. k.type)
  end
  local body = decode_body(call('HGET', k.bodies, id))
  if payload ~= '' then
    body.payload = payload
  end
  local why = unreplayable(body)
  if why == nil and not (find(body.payload, '^%s*{') and find(body.payload, '}%s*$')) then
    why = 'its payload is not a JSON object (replay it with a new payload)'
  end
  if why then
    raise('BATON_CONFLICT', 'cannot replay ' .. id .. ': ' .. why .. '; enqueue a corrected ' ..
      'task instead and delete this one')
  end
  local ctx = new_ctx(k)
  ctx.now = now_ms()
  local sid = add_entry(k.stream, id, body, '0')
  call('HSET', k.tasks, id, make_record('queued', k.type, '0', sid))
  call('HDEL', k.bodies, id)
  call('ZREM', k.dead, id)
  emit(ctx, id, 'dead', 'queued', '0', '', '')
  return sid
end)
