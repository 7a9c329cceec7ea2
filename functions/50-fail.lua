
--[[
baton_fail: records a failed attempt; the task goes to retry with backoff or to the dead-letter
queue.
  KEYS[1]  baton:{NS}:stream:TYPE
  KEYS[2]  baton:{NS}:scheduled:TYPE
  KEYS[3]  baton:{NS}:dead:TYPE
  KEYS[4]  baton:{NS}:tasks
  KEYS[5]  baton:{NS}:bodies
  KEYS[6]  baton:{NS}:errors
  KEYS[7]  baton:{NS}:events
  ARGV[1]  group
  ARGV[2]  id
  ARGV[3]  SID (the stream entry the worker ran)
  ARGV[4]  consumer
  ARGV[5]  kind: error | timeout | non_retryable | malformed
  ARGV[6]  error message
  ARGV[7]  stack (may be empty)
  ARGV[8]  base_ms (retry backoff base, ms)
  ARGV[9]  max_ms (retry backoff cap, ms)
  ARGV[10] jitter, a number in [0, 1)
  ARGV[11] events MAXLEN (entries; 0 = no events)
  The entry leaves the stream and the PEL; the body goes to bodies and the attempt is appended to
  errors. non_retryable and malformed go to the dead-letter queue at once; otherwise the task
  retries (due = now + backoff) until it has run 1 + max_retry times.
  Returns: {'retry', due_ms, attempt}, {'dead', at_ms, attempt}, or {'stale', '', 0} when the
    entry is no longer this worker's (the lease expired and the task was taken back).
  Errors: BATON_INVALID <field>: <rule>.
  Events: active -> retry or active -> dead, with the error (worker = consumer).
  Publishes 'NS|TYPE|due_ms' on baton:wakeup when the retry becomes the earliest scheduled task.
]]
local FAIL_KINDS = { error = true, timeout = true, non_retryable = true, malformed = true }

register('baton_fail', function(keys, args)
  local stream, sched, dead, tasks, bodies, errors, events =
    keys[1], keys[2], keys[3], keys[4], keys[5], keys[6], keys[7]
  local group, id, sid, consumer, kind, message, stack =
    args[1], args[2], args[3], args[4], args[5], args[6], args[7]
  local base_text, max_text, jitter_text, maxlen_text = args[8], args[9], args[10], args[11]

  nonempty_arg(group, 'group')
  id_arg(id, 'id')
  stream_id_arg(sid, 'SID')
  nonempty_arg(consumer, 'consumer')
  if kind == nil or not FAIL_KINDS[kind] then
    invalid('kind', 'must be one of error, timeout, non_retryable, malformed')
  end
  if message == nil then
    invalid('error', 'is required')
  end
  if stack == nil then
    invalid('stack', 'is required (may be empty)')
  end
  local base = int_arg(base_text, 'base_ms', 0)
  local max = int_arg(max_text, 'max_ms', 0)
  local jitter = jitter_arg(jitter_text, 'jitter')
  local ctx = events_ctx(events, maxlen_text)
  local task_type = key_type(stream, 'stream', 1)

  local rec = call('HGET', tasks, id)
  local state, rtype, attempt, rsid
  if rec then
    state, rtype, attempt, rsid = parse_record(rec)
  end
  if state ~= 'queued' or rsid ~= sid then
    return { 'stale', '', 0 }
  end
  if rtype ~= task_type then
    invalid('KEYS[1]', 'task ' .. id .. ' has type ' .. rtype)
  end

  local entry = call('XRANGE', stream, sid, sid)
  local f = {}
  if entry[1] then
    f = fields_by_name(entry[1][2])
  else
    message = message .. ' (stream entry ' .. sid .. ' was missing: body lost)'
  end
  ctx.stream, ctx.sched, ctx.dead, ctx.tasks, ctx.bodies, ctx.errors =
    stream, sched, dead, tasks, bodies, errors
  ctx.group, ctx.type, ctx.now = group, task_type, now_ms()
  local old_earliest = earliest_due(sched)
  local outcome, at, n = fail_entry(ctx, id, sid, f, attempt + 1, kind, message, stack, consumer,
    consumer, 'active', base, max, jitter)
  if outcome == 'retry' then
    wake_if_earlier(key_namespace(tasks), task_type, at, old_earliest)
  end
  return { outcome, at, n }
end)
