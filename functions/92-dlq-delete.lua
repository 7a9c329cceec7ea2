
--[[
baton_v2_dlq_delete: deletes a dead task for good; it becomes final 'deleted' (a duplicate for
enqueue during done_retention_s).
  KEYS[1]  baton:v2:{NS}:dead:TYPE
  KEYS[2]  baton:v2:{NS}:tasks
  KEYS[3]  baton:v2:{NS}:bodies
  KEYS[4]  baton:v2:{NS}:errors
  KEYS[5]  baton:v2:{NS}:events
  KEYS[6]  baton:v2:{NS}:done
  KEYS[7]  baton:v2:{NS}:ended
  KEYS[8]  baton:v2:{NS}:config
  ARGV[1]  id
  Returns: 'deleted'.
  Errors: BATON_NOT_FOUND dead task ID; BATON_INVALID <field>: <rule>.
  Events: dead -> deleted.
]]
local DELETE_KEYS = { 'dead', 'tasks', 'bodies', 'errors', 'events', 'done', 'ended', 'config' }
register('baton_v2_dlq_delete', function(keys, args)
  local k = bind_keys(keys, DELETE_KEYS, true)
  argc(args, 1, 'id')
  local id = id_arg(args[1], 'id')

  local rec = call('HGET', k.tasks, id)
  local state, rtype, attempt
  if rec then
    state, rtype, attempt = parse_record(rec)
  end
  if state ~= 'dead' or rtype ~= k.type then
    raise('BATON_NOT_FOUND', 'dead task ' .. id .. ' of type ' .. k.type)
  end
  local ctx = new_ctx(k)
  ctx.now = now_ms()
  call('ZREM', k.dead, id)
  call('HDEL', k.tasks, id)
  call('HDEL', k.bodies, id)
  delete_errors(k.errors, { id })
  local attempt_text = int_text(attempt)
  mark_final(ctx, { id }, { id, 'deleted|' .. k.type .. '|' .. attempt_text .. '|' })
  emit(ctx, id, 'dead', 'deleted', attempt_text, '', '')
  trim_final(ctx)
  return 'deleted'
end)
