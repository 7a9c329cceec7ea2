
--[[
baton_v2_reclaim: takes back tasks whose own lease deadline has passed (their worker crashed, hung
or lost Redis and stopped heartbeating). Each counts as a failed attempt of kind 'lease_expired'
and follows the retry policy. Only the deadline recorded by baton_v2_dequeue / baton_v2_extend
decides: whoever calls this, with whatever settings, never takes a task from a live,
heartbeating worker.
  KEYS[1]  baton:v2:{NS}:stream:TYPE
  KEYS[2]  baton:v2:{NS}:scheduled:TYPE
  KEYS[3]  baton:v2:{NS}:leases:TYPE
  KEYS[4]  baton:v2:{NS}:dead:TYPE
  KEYS[5]  baton:v2:{NS}:tasks
  KEYS[6]  baton:v2:{NS}:bodies
  KEYS[7]  baton:v2:{NS}:errors
  KEYS[8]  baton:v2:{NS}:events
  KEYS[9]  baton:v2:{NS}:done
  KEYS[10] baton:v2:{NS}:ended
  KEYS[11] baton:v2:{NS}:config
  ARGV[1]  count (expired leases per call, 1..1000)
  ARGV[2]  base_ms (retry backoff base, ms)
  ARGV[3]  max_ms (retry backoff cap, ms)
  ARGV[4]  jitter seed (integer): each task gets its own pseudo-random jitter in [0, 1)
  ARGV[5]  reaper name (the event's worker)
  A lease whose task is no longer queued at a pending entry (finished, cancelled) is dropped. A
  leased entry that is malformed goes to the dead-letter queue (kind malformed).
  Returns: {reclaimed, retried, dead, next_deadline_ms, now_ms} (reclaimed = retried + dead;
    next_deadline_ms = the earliest lease deadline left, -1 when none; <= now_ms when more leases
    expired than count allowed: call again).
  Errors: BATON_INVALID <field>: <rule>.
  Events: active -> retry / active -> dead, error 'lease expired at <deadline_ms> (N ms ago) on
    consumer C' (the error history records C as the worker); queued -> dead for malformed entries.
  Publishes 'NS|TYPE|due_ms' on baton:v2:wakeup when a retry becomes the earliest scheduled task.
]]
local RECLAIM_KEYS = { 'stream', 'scheduled', 'leases', 'dead', 'tasks', 'bodies', 'errors',
  'events', 'done', 'ended', 'config' }
register('baton_v2_reclaim', function(keys, args)
  local k = bind_keys(keys, RECLAIM_KEYS, true)
  argc(args, 5, 'count, base_ms, max_ms, jitter_seed, reaper')
  local count_text = args[1]
  int_arg(count_text, 'count', 1, 1000)
  local base = int_arg(args[2], 'base_ms', 0)
  local max = int_arg(args[3], 'max_ms', 0)
  local seed = int_arg(args[4], 'jitter_seed', 0)
  local reaper = nonempty_arg(args[5], 'reaper')
  local now = now_ms()

  local expired = call('ZRANGE', k.leases, '-inf', int_text(now), 'BYSCORE', 'LIMIT', 0,
    count_text, 'WITHSCORES')
  local retried, buried = 0, 0
  if #expired > 0 then
    local ctx = new_ctx(k)
    ctx.now = now
    local stream = k.stream
    local groups = group_names(stream)
    local old_earliest = earliest_score(k.scheduled)
    local min_due = nil
    local gone, g = {}, 0
    for i = 1, #expired, 2 do
      local id, deadline = expired[i], tonumber_(expired[i + 1])
      local rec = call('HGET', k.tasks, id)
      local state, rtype, attempt, sid
      if rec then
        state, rtype, attempt, sid = parse_record(rec)
      end
      local owner = nil
      if state == 'queued' and rtype == k.type then
        owner = holder_of(stream, groups, sid)
      end
      local entry = owner and call('XRANGE', stream, sid, sid)
      if owner == nil then
        g = g + 1
        gone[g] = id -- not (or no longer) delivered: the lease means nothing
      elseif entry[1] == nil then
        -- pending but deleted from the stream: the body is lost; record it as a failure
        local message = 'lease expired at ' .. int_text(deadline) .. ' on consumer ' .. owner ..
            ' (stream entry ' .. sid .. ' was missing: body lost)'
        fail_entry(ctx, id, sid, groups, {}, attempt + 1, 'lease_expired', message, '', owner,
          reaper, 'active', base, max, 0)
        buried = buried + 1
      else
        local fv = entry[1][2]
        local v, reason = check_entry(fv)
        if v and v[2] == id then
          local message = 'lease expired at ' .. int_text(deadline) .. ' (' ..
              int_text(now - deadline) .. ' ms ago) on consumer ' .. owner
          local outcome, at = fail_entry(ctx, id, sid, groups, fields_by_name(v), attempt + 1,
            'lease_expired', message, '', owner, reaper, 'active', base, max,
            seeded_jitter(seed, (i + 1) / 2))
          if outcome == 'retry' then
            retried = retried + 1
            if min_due == nil or at < min_due then
              min_due = at
            end
          else
            buried = buried + 1
          end
        else
          reason = reason or ('entry id is not ' .. id)
          bury_malformed(ctx, sid, groups, fv, rec,
            'malformed stream entry ' .. sid .. ': ' .. reason, owner, reaper)
          call('ZREM', k.leases, id)
          buried = buried + 1
        end
      end
    end
    if g > 0 then
      call_many('ZREM', k.leases, gone)
    end
    wake_if_earlier(ctx, min_due, old_earliest)
    if ctx.died then
      cap_dead(ctx)
    end
  end
  local next_deadline = earliest_score(k.leases) or -1
  return { retried + buried, retried, buried, next_deadline, now }
end)
