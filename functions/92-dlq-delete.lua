
--[[
baton_dlq_delete: deletes a dead task for good; a 'deleted' final record is kept for the retention.
  KEYS[1]  baton:{NS}:dead:TYPE
  KEYS[2]  baton:{NS}:tasks
  KEYS[3]  baton:{NS}:bodies
  KEYS[4]  baton:{NS}:errors
  KEYS[5]  baton:{NS}:events
  KEYS[6]  baton:{NS}:done:ID
  ARGV[1]  id
  ARGV[2]  retention_s (TTL of the final record, seconds, >= 1)
  ARGV[3]  events MAXLEN (entries; 0 = no events)
  Returns: 'deleted'.
  Errors: BATON_NOT_FOUND dead task ID; BATON_INVALID <field>: <rule>.
  Events: dead -> deleted.
]]
register('baton_dlq_delete', function(keys, args)
  local dead, tasks, bodies, errors, events, done =
    keys[1], keys[2], keys[3], keys[4], keys[5], keys[6]
  local id, retention_text, maxlen_text = args[1], args[2], args[3]

  id_arg(id, 'id')
  int_arg(retention_text, 'retention_s', 1)
  local ctx = events_ctx(events, maxlen_text)
  local task_type = key_type(dead, 'dead', 1)

  local rec = call('HGET', tasks, id)
  local state, rtype, attempt
  if rec then
    state, rtype, attempt = parse_record(rec)
  end
  if state ~= 'dead' or rtype ~= task_type then
    raise('BATON_NOT_FOUND', 'dead task ' .. id .. ' of type ' .. task_type)
  end
  local now = now_ms()
  call('ZREM', dead, id)
  call('HDEL', tasks, id)
  call('HDEL', bodies, id)
  call('HDEL', errors, id)
  call('SET', done, final_record('deleted', task_type, attempt, now, ''), 'EX', retention_text)
  emit(ctx, id, task_type, 'dead', 'deleted', attempt, '', '')
  return 'deleted'
end)
