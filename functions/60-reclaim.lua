
--[[
baton_v2_reclaim: takes back tasks whose lease ran out (their worker crashed, hung or lost Redis
and stopped heartbeating). Each counts as a failed attempt of kind 'lease_expired' and follows
the retry policy. Only the holder's own lease decides: a task's lease ends at its delivery time
in the group's pending entries list (renewed by baton_v2_extend) plus the lease length its
consumer asked for (leases:TYPE; the namespace's lease_ms when it stored none). Whoever calls
this, with whatever settings, never takes a task from a live, heartbeating worker.
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
  Consumers that hold nothing and have not read for PRUNE_IDLE_LEASES x the namespace's lease_ms
  (10 x 30 s by default) are gone workers (each process has its own consumer name): up to
  PRUNE_PER_CALL of them per call are deleted from the group (XGROUP DELCONSUMER) with their
  leases:TYPE entry, so neither grows with every restart. A live worker that was merely idle that
  long loses nothing: its next read recreates the consumer and its next delivery its lease entry.
  A pending entry whose task is no longer queued at it (a stale copy) is acked and deleted; one
  whose stream entry is gone (trimmed by hand: its task id is unknown) is acked; a malformed one
  goes to the dead-letter queue (kind malformed). An entry that another group delivered again
  (baton rescue's, docs/rescue.md) is held there: while that holder's lease lives, the expired
  entry is only acked in its own group (the lease passed to the new holder; nothing fails).
  Returns: {reclaimed, retried, dead, next_deadline_ms, now_ms} (reclaimed = retried + dead;
    next_deadline_ms = the earliest lease end left, -1 when nothing is pending; <= now_ms when
    more leases had run out than count allowed: call again).
  Errors: BATON_INVALID <field>: <rule>.
  Events: active -> retry / active -> dead, error 'lease expired at <deadline_ms> (N ms ago) on
    consumer C' (the error history records C as the worker); queued -> dead for malformed entries;
    queued -> deleted for stale copies.
  Publishes 'NS|TYPE|due_ms' on baton:v2:wakeup when a retry becomes the earliest scheduled task.
]]
-- Pending entries read per consumer to find its earliest lease end; past this many, the next
-- check is at most MIN_LEASE_MS away (an entry not read may be the next to run out).
local PEEK = 1000
local MIN_LEASE_MS = CONFIG_RANGES.lease_ms[1]
local PRUNE_IDLE_LEASES = 10 -- idle this many namespace leases with nothing pending: gone
local PRUNE_PER_CALL = 16
local RECLAIM_KEYS = { 'stream', 'scheduled', 'leases', 'dead', 'tasks', 'bodies', 'errors',
  'events', 'done', 'ended', 'config' }

-- The pending entries of every consumer of every group whose lease ran out, at most `count`
-- ({sid, group, consumer, lease end ms} each), and the earliest lease end among the others
-- (nil when nothing else is pending; `now` when `count` cut the list short). Deletes the consumers
-- that hold nothing and have been idle longer than prune_idle_ms (at most PRUNE_PER_CALL).
local function expired_leases(k, groups, count, now, default_lease)
  local expired, x = {}, 0
  local next_deadline = nil
  local lease_texts = nil -- consumer -> stored lease length, read once something is pending
  local prune_idle_ms, pruned = PRUNE_IDLE_LEASES * default_lease, {}
  local holding = {} -- consumer names that hold something in some group: their lease entry stays
  for g = 1, #groups do
    local group = groups[g]
    local consumers = call('XINFO', 'CONSUMERS', k.stream, group)
    for c = 1, #consumers do
      local info = fields_by_name(consumers[c])
      local pending = tonumber_(info.pending) or 0
      if pending == 0 then
        if #pruned < PRUNE_PER_CALL and (tonumber_(info.idle) or 0) > prune_idle_ms then
          call('XGROUP', 'DELCONSUMER', k.stream, group, info.name)
          pruned[#pruned + 1] = info.name
        end
      else
        holding[info.name] = true
        if lease_texts == nil then
          lease_texts = fields_by_name(call('HGETALL', k.leases))
        end
        local name = info.name
        local lease = lease_of(lease_texts[name], default_lease)
        local found = 0
        if x < count then
          local rows = call('XPENDING', k.stream, group, 'IDLE', lease, '-', '+', count - x, name)
          found = #rows
          for j = 1, found do
            x = x + 1
            expired[x] = { rows[j][1], group, name, now - rows[j][3] + lease }
          end
        end
        if x >= count then
          next_deadline = now
        elseif pending > found then
          local rows = call('XPENDING', k.stream, group, '-', '+', PEEK, name)
          for j = 1, #rows do
            local idle = rows[j][3]
            if idle < lease then
              local ends = now - idle + lease
              if next_deadline == nil or ends < next_deadline then
                next_deadline = ends
              end
            end
          end
          if pending > PEEK and (next_deadline == nil or next_deadline > now + MIN_LEASE_MS) then
            next_deadline = now + MIN_LEASE_MS
          end
        end
      end
    end
  end
  for i = 1, #pruned do
    if not holding[pruned[i]] then
      call('HDEL', k.leases, pruned[i])
    end
  end
  return expired, x, next_deadline
end

-- True when `sid` is pending in a group other than `group` with a lease that has not run out:
-- a rescue group delivered the task again, so its lease is that holder's now.
local function held_live_elsewhere(k, groups, group, sid, default_lease)
  for g = 1, #groups do
    if groups[g] ~= group then
      local p = call('XPENDING', k.stream, groups[g], sid, sid, 1)
      if p[1] and p[1][3] < lease_of(call('HGET', k.leases, p[1][2]), default_lease) then
        return true
      end
    end
  end
  return false
end

register('baton_v2_reclaim', function(keys, args)
  local k = bind_keys(keys, RECLAIM_KEYS, true)
  argc(args, 5, 'count, base_ms, max_ms, jitter_seed, reaper')
  local count = int_arg(args[1], 'count', 1, 1000)
  local base = int_arg(args[2], 'base_ms', 0)
  local max = int_arg(args[3], 'max_ms', 0)
  local seed = int_arg(args[4], 'jitter_seed', 0)
  local reaper = nonempty_arg(args[5], 'reaper')
  local ctx = new_ctx(k)
  local now = now_ms()
  ctx.now = now
  local stream = k.stream
  local groups = group_names(stream)
  local expired, x, next_deadline = expired_leases(k, groups, count, now, ctx.config.lease_ms)

  local retried, buried = 0, 0
  if x > 0 then
    local old_earliest = earliest_score(k.scheduled)
    local min_due = nil
    for i = 1, x do
      local sid, owner, deadline = expired[i][1], expired[i][3], expired[i][4]
      local entry = call('XRANGE', stream, sid, sid)
      if entry[1] == nil then
        for g = 1, #groups do
          call('XACK', stream, groups[g], sid)
        end
      else
        local fv = entry[1][2]
        local e, reason = parse_entry(fv)
        local rec = e and call('HGET', k.tasks, e.id)
        local state, rtype, attempt, rsid
        if rec then
          state, rtype, attempt, rsid = parse_record(rec)
        end
        if e and state == 'queued' and rtype == k.type and rsid == sid and #groups > 1 and
            held_live_elsewhere(k, groups, expired[i][2], sid, ctx.config.lease_ms) then
          call('XACK', stream, expired[i][2], sid)
        elseif e and state == 'queued' and rtype == k.type and rsid == sid then
          local message = 'lease expired at ' .. int_text(deadline) .. ' (' ..
              int_text(now - deadline) .. ' ms ago) on consumer ' .. owner
          local outcome, at = fail_entry(ctx, e.id, sid, groups, e, attempt + 1,
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
        elseif e and rec then
          drop_stale(ctx, e.id, sid, groups, e.attempt, reaper)
        else
          reason = reason or no_record_reason(e.id)
          bury_malformed(ctx, sid, groups, fv, rec,
            'malformed stream entry ' .. sid .. ': ' .. reason, owner, reaper)
          buried = buried + 1
        end
      end
    end
    wake_if_earlier(ctx, min_due, old_earliest)
    if ctx.died then
      cap_dead(ctx)
    end
  end
  return { retried + buried, retried, buried, next_deadline or -1, now }
end)
