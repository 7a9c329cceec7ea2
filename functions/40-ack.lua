
--[[
baton_v2_ack: records success for N tasks of one (NS, TYPE), atomically.
  KEYS[1]  baton:v2:{NS}:stream:TYPE
  KEYS[2]  baton:v2:{NS}:scheduled:TYPE
  KEYS[3]  baton:v2:{NS}:dead:TYPE
  KEYS[4]  baton:v2:{NS}:tasks
  KEYS[5]  baton:v2:{NS}:bodies
  KEYS[6]  baton:v2:{NS}:errors
  KEYS[7]  baton:v2:{NS}:events
  KEYS[8]  baton:v2:{NS}:done
  KEYS[9]  baton:v2:{NS}:ended
  KEYS[10] baton:v2:{NS}:config
  ARGV[1]  group
  ARGV[2]  consumer
  ARGV[3]  N
  then 2 values per task: id, SID (the stream entry the worker ran)
  Per task: XACK of the SID (which ends the lease), and the entry leaves the stream
  (XDEL); the record, body and error history go; the id joins baton:v2:{NS}:done (a
  duplicate for enqueue during the namespace's done_retention_s). A stale ack (the lease had
  expired and the task was taken back, or it even died since) still counts as success: a waiting
  retry (scheduled set, or a newer stream copy) is removed, a dead task leaves the dead-letter
  queue (a replay must not rerun a task that succeeded); a redelivery that already
  started may still run (at-least-once).
  Returns: N statuses: 'done', 'stale_done' (success recorded after the lease was lost) or 'gone'
    (no live task of this type: already finished, cancelled or deleted, or an id repeated in
    the call).
  Errors: BATON_INVALID <field>: <rule>.
  Events: active -> done (one entry; attempt = the run that succeeded, worker = consumer); for a
    stale ack the from state is the record's (retry, scheduled, queued or dead).
]]
local ACK_KEYS = { 'stream', 'scheduled', 'dead', 'tasks', 'bodies', 'errors', 'events', 'done',
  'ended', 'config' }
register('baton_v2_ack', function(keys, args)
  local k = bind_keys(keys, ACK_KEYS, true)
  local group, consumer = args[1], args[2]
  nonempty_arg(group, 'group')
  nonempty_arg(consumer, 'consumer')
  local n = int_arg(args[3], 'N', 0)
  argc(args, 3 + 2 * n, '3 + 2N')
  if n == 0 then
    return {}
  end
  local stream = k.stream
  local ids, sids = {}, {}
  for i = 1, n do
    ids[i] = args[2 + 2 * i]
    sids[i] = args[3 + 2 * i]
  end
  -- The records are read before anything is checked or written. A task whose record is queued at
  -- the given SID with attempt 0 (the common case: first run) is 'fresh': its id and SID are the
  -- record's, so they need no check. Every other id and SID is checked, in argument order,
  -- before the first write. Ids are not pattern-checked: an id without a live record is 'gone'.
  local records = call_many('HMGET', k.tasks, ids)
  local fresh_prefix = 'queued|' .. k.type .. '|0|'
  local fresh = {}
  for i = 1, n do
    local rec = records[i]
    if rec and rec == fresh_prefix .. sids[i] then
      fresh[i] = true
    else
      nonempty_arg(ids[i], 'id')
      stream_id_arg(sids[i], 'SID')
    end
  end

  local ctx = new_ctx(k)
  ctx.now = now_ms()
  call_many2('XACK', stream, group, sids)
  delete_acked(stream, sids)

  local out = {}
  local finished, f = {}, 0 -- ids leaving tasks / errors
  local newer_sids, s = {}, 0 -- stream copies of a waiting retry (stale ack)
  local seen = {} -- ids already acked in this call: a repeat is 'gone'
  local with_errors = false -- a task that failed before may have an error history
  local batch = nil -- the active -> done events entry, opened at the first success
  for i = 1, n do
    local id = ids[i]
    if fresh[i] and not seen[id] then
      seen[id] = true
      out[i] = 'done'
      f = f + 1
      finished[f] = id
      batch = add_to_batch(ctx, batch, 'active', 'done', consumer, id, '1')
    else
      local sid, rec = sids[i], records[i]
      local state, rtype, attempt, rsid
      if rec and not seen[id] then
        state, rtype, attempt, rsid = match(rec, '^(%a+)|([^|]*)|(%d+)|(.*)$')
      end
      seen[id] = true
      if state == nil or rtype ~= k.type then
        out[i] = 'gone'
      else
        local attempts, from
        if state == 'queued' and rsid == sid then
          out[i] = 'done'
          attempts, from = NEXT_TEXT[attempt] or int_text(tonumber_(attempt) + 1), 'active'
        else
          out[i] = 'stale_done'
          attempts, from = attempt, state
          if state == 'queued' then
            s = s + 1
            newer_sids[s] = rsid
          elseif state == 'dead' then
            call('ZREM', k.dead, id)
            call('HDEL', k.bodies, id)
          else
            call('ZREM', k.scheduled, id)
            call('HDEL', k.bodies, id)
          end
        end
        if attempt ~= '0' then
          with_errors = true
        end
        f = f + 1
        finished[f] = id
        if from == 'active' then
          batch = add_to_batch(ctx, batch, 'active', 'done', consumer, id, attempts)
        else
          emit(ctx, id, from, 'done', attempts, consumer, '')
        end
      end
    end
  end
  if f > 0 then
    call_many('HDEL', k.tasks, finished)
    -- A first-run success has no error history unless a replay reset its attempt: skip the
    -- errors entirely when the hash is empty.
    if with_errors or call('HLEN', k.errors) > 0 then
      delete_errors(k.errors, finished)
    end
    mark_final(ctx, finished, nil)
    trim_final(ctx)
  end
  if s > 0 then
    call_many('XDEL', stream, newer_sids)
  end
  return out
end)
