
--[[
baton_cancel: cancels a task that has not started: queued (not pending in any consumer group) or
scheduled / retrying.
  KEYS[1]  baton:{NS}:stream:TYPE
  KEYS[2]  baton:{NS}:scheduled:TYPE
  KEYS[3]  baton:{NS}:tasks
  KEYS[4]  baton:{NS}:bodies
  KEYS[5]  baton:{NS}:events
  KEYS[6]  baton:{NS}:done:ID
  KEYS[7]  baton:{NS}:errors
  ARGV[1]  id
  ARGV[2]  retention_s (TTL of the final record, seconds, >= 1)
  ARGV[3]  events MAXLEN (entries; 0 = no events)
  The task leaves the stream or the scheduled set, its record, body and error history are removed
  and done:ID is set to {"state":"cancelled",...} with the TTL.
  Returns: 'cancelled'.
  Errors: BATON_NOT_FOUND task ID (no live task); BATON_CONFLICT (active, or dead: use
    baton_dlq_delete); BATON_INVALID <field>: <rule> (also when the keys are of another type than
    the task's).
  Events: queued -> cancelled, scheduled -> cancelled, retry -> cancelled.
]]
register('baton_cancel', function(keys, args)
  local stream, sched, tasks, bodies, events, done, errors =
    keys[1], keys[2], keys[3], keys[4], keys[5], keys[6], keys[7]
  local id, retention_text, maxlen_text = args[1], args[2], args[3]

  id_arg(id, 'id')
  int_arg(retention_text, 'retention_s', 1)
  local ctx = events_ctx(events, maxlen_text)
  local task_type = key_type(stream, 'stream', 1)

  local rec = call('HGET', tasks, id)
  local state, rtype, attempt, rsid
  if rec then
    state, rtype, attempt, rsid = parse_record(rec)
  end
  if state == nil then
    raise('BATON_NOT_FOUND', 'task ' .. id)
  end
  if rtype ~= task_type then
    invalid('KEYS[1]', 'task ' .. id .. ' has type ' .. rtype)
  end
  if state == 'dead' then
    raise('BATON_CONFLICT', 'task ' .. id .. ' is dead (delete it from the dead-letter queue)')
  end
  if state == 'queued' then
    local groups = pcall_redis('XINFO', 'GROUPS', stream)
    if type_(groups) == 'table' and not groups.err then
      for g = 1, #groups do
        local info = groups[g]
        for j = 1, #info - 1, 2 do
          if info[j] == 'name' then
            local p = call('XPENDING', stream, info[j + 1], rsid, rsid, 1)
            if p[1] then
              raise('BATON_CONFLICT', 'task ' .. id .. ' is active on consumer ' .. p[1][2])
            end
          end
        end
      end
    end
    call('XDEL', stream, rsid)
  elseif state == 'scheduled' or state == 'retry' then
    call('ZREM', sched, id)
    call('HDEL', bodies, id)
  else
    raise('BATON_CONFLICT', 'task ' .. id .. ' is ' .. state)
  end
  local now = now_ms()
  call('HDEL', tasks, id)
  call('HDEL', errors, id)
  call('SET', done, final_record('cancelled', task_type, attempt, now, ''), 'EX', retention_text)
  emit(ctx, id, task_type, state, 'cancelled', attempt, '', '')
  return 'cancelled'
end)
