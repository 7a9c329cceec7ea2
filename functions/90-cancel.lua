
--[[
baton_v2_cancel: cancels a task that has not started: queued (not pending in any consumer group)
or scheduled / retrying.
  KEYS[1]  baton:v2:{NS}:stream:TYPE
  KEYS[2]  baton:v2:{NS}:scheduled:TYPE
  KEYS[3]  baton:v2:{NS}:tasks
  KEYS[4]  baton:v2:{NS}:bodies
  KEYS[5]  baton:v2:{NS}:errors
  KEYS[6]  baton:v2:{NS}:events
  KEYS[7]  baton:v2:{NS}:done
  KEYS[8]  baton:v2:{NS}:ended
  KEYS[9]  baton:v2:{NS}:config
  ARGV[1]  id
  The task leaves the stream or the scheduled set, its record, body and error history are removed
  and it becomes final 'cancelled' (a duplicate for enqueue during done_retention_s).
  Returns: 'cancelled'.
  Errors: BATON_NOT_FOUND task ID (no live task); BATON_CONFLICT (active, or dead: use
    baton_v2_dlq_delete); BATON_INVALID <field>: <rule> (also when the task has another type).
  Events: queued -> cancelled, scheduled -> cancelled, retry -> cancelled.
]]
local CANCEL_KEYS = { 'stream', 'scheduled', 'tasks', 'bodies', 'errors', 'events', 'done',
  'ended', 'config' }
register('baton_v2_cancel', function(keys, args)
  local k = bind_keys(keys, CANCEL_KEYS, true)
  argc(args, 1, 'id')
  local id = id_arg(args[1], 'id')

  local rec = call('HGET', k.tasks, id)
  local state, rtype, attempt, rsid
  if rec then
    state, rtype, attempt, rsid = parse_record(rec)
  end
  if state == nil then
    raise('BATON_NOT_FOUND', 'task ' .. id)
  end
  if rtype ~= k.type then
    invalid('KEYS[1]', 'task ' .. id .. ' has type ' .. rtype)
  end
  if state == 'dead' then
    raise('BATON_CONFLICT', 'task ' .. id .. ' is dead (delete it from the dead-letter queue)')
  end
  if state == 'queued' then
    local owner = holder_of(k.stream, group_names(k.stream), rsid)
    if owner then
      raise('BATON_CONFLICT', 'task ' .. id .. ' is active on consumer ' .. owner)
    end
    call('XDEL', k.stream, rsid)
  elseif state == 'scheduled' or state == 'retry' then
    call('ZREM', k.scheduled, id)
    call('HDEL', k.bodies, id)
  else
    raise('BATON_CONFLICT', 'task ' .. id .. ' is ' .. state)
  end
  local ctx = new_ctx(k)
  ctx.now = now_ms()
  call('HDEL', k.tasks, id)
  delete_errors(k.errors, { id })
  local attempt_text = int_text(attempt)
  mark_final(ctx, { id }, { id, 'cancelled|' .. k.type .. '|' .. attempt_text .. '|' })
  emit(ctx, id, state, 'cancelled', attempt_text, '', '')
  trim_final(ctx)
  return 'cancelled'
end)
