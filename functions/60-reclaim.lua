
--[[
baton_reclaim: takes back tasks whose lease expired (the worker crashed or hung). Each counts as a
failed attempt of kind 'lease_expired' and follows the retry policy (retry or dead-letter queue).
  KEYS[1]  baton:{NS}:stream:TYPE
  KEYS[2]  baton:{NS}:scheduled:TYPE
  KEYS[3]  baton:{NS}:dead:TYPE
  KEYS[4]  baton:{NS}:tasks
  KEYS[5]  baton:{NS}:bodies
  KEYS[6]  baton:{NS}:errors
  KEYS[7]  baton:{NS}:events
  ARGV[1]  group
  ARGV[2]  min_idle_ms (the lease, ms): pending entries idle at least this long are taken back
  ARGV[3]  count (entries per call, >= 1)
  ARGV[4]  base_ms (retry backoff base, ms)
  ARGV[5]  max_ms (retry backoff cap, ms)
  ARGV[6]  jitter seed (integer): each entry gets its own pseudo-random jitter in [0, 1)
  ARGV[7]  events MAXLEN (entries; 0 = no events)
  ARGV[8]  reaper name (the event's worker)
  Pending entries that are malformed go to the dead-letter queue (kind malformed); stale copies
  and entries deleted from the stream only leave the PEL.
  Returns: {reclaimed, retried, dead} (reclaimed = retried + dead).
  Errors: BATON_INVALID <field>: <rule>.
  Events: active -> retry / active -> dead, error 'lease expired after N ms on consumer C' (the
    error history records C as the worker); queued -> dead for malformed entries.
  Publishes 'NS|TYPE|due_ms' on baton:wakeup when a retry becomes the earliest scheduled task.
]]
register('baton_reclaim', function(keys, args)
  local stream, sched, dead, tasks, bodies, errors, events =
    keys[1], keys[2], keys[3], keys[4], keys[5], keys[6], keys[7]
  local group, min_idle_text, count_text, base_text, max_text, seed_text, maxlen_text, reaper =
    args[1], args[2], args[3], args[4], args[5], args[6], args[7], args[8]

  nonempty_arg(group, 'group')
  int_arg(min_idle_text, 'min_idle_ms', 0)
  int_arg(count_text, 'count', 1)
  local base = int_arg(base_text, 'base_ms', 0)
  local max = int_arg(max_text, 'max_ms', 0)
  local seed = int_arg(seed_text, 'jitter_seed', 0)
  local ctx = events_ctx(events, maxlen_text)
  nonempty_arg(reaper, 'reaper')
  local task_type = key_type(stream, 'stream', 1)

  local pending = pcall_redis('XPENDING', stream, group, 'IDLE', min_idle_text, '-', '+',
    count_text)
  if type_(pending) == 'table' and pending.err then
    if find(pending.err, 'NOGROUP', 1, true) then
      return { 0, 0, 0 } -- no group yet: nothing was ever delivered
    end
    return pending
  end
  if #pending == 0 then
    return { 0, 0, 0 }
  end

  ctx.stream, ctx.sched, ctx.dead, ctx.tasks, ctx.bodies, ctx.errors =
    stream, sched, dead, tasks, bodies, errors
  ctx.group, ctx.type, ctx.now = group, task_type, now_ms()
  local old_earliest = earliest_due(sched)
  local min_due = nil
  local retried, buried = 0, 0
  for i = 1, #pending do
    local sid, owner, idle = pending[i][1], pending[i][2], pending[i][3]
    local entry = call('XRANGE', stream, sid, sid)
    if entry[1] == nil then
      call('XACK', stream, group, sid) -- deleted from the stream: nothing left to run
    else
      local fv = entry[1][2]
      local v, reason = check_entry(fv)
      local lookup = v and v[2] or raw_entry_id(fv)
      local rec = lookup and call('HGET', tasks, lookup) or false
      local state, rsid
      if rec then
        local st, _, _, rs = parse_record(rec)
        state, rsid = st, rs
      end
      if v and state == 'queued' and rsid == sid then
        local message = 'lease expired after ' .. idle .. ' ms on consumer ' .. owner
        local outcome, at = fail_entry(ctx, v[2], sid, fields_by_name(v), tonumber_(v[16]) + 1,
          'lease_expired', message, '', owner, reaper, 'active', base, max,
          seeded_jitter(seed, i))
        if outcome == 'retry' then
          retried = retried + 1
          if min_due == nil or at < min_due then
            min_due = at
          end
        else
          buried = buried + 1
        end
      elseif v and rec then
        drop_stale(ctx, v[2], sid, v[16], reaper)
      else
        reason = reason or no_record_reason(v[2])
        bury_malformed(ctx, sid, fv, rec, 'malformed stream entry ' .. sid .. ': ' .. reason,
          owner, reaper)
        buried = buried + 1
      end
    end
  end
  wake_if_earlier(key_namespace(tasks), task_type, min_due, old_earliest)
  return { retried + buried, retried, buried }
end)
