
--[[
baton_v2_fail: records a failed attempt; the task goes to retry with backoff or to the dead-letter
queue.
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
  ARGV[3]  id
  ARGV[4]  SID (the stream entry the worker ran)
  ARGV[5]  kind: error | timeout | non_retryable | malformed
  ARGV[6]  error message
  ARGV[7]  stack (may be empty)
  ARGV[8]  base_ms (retry backoff base, ms)
  ARGV[9]  max_ms (retry backoff cap, ms)
  ARGV[10] jitter, a number in [0, 1)
  The entry leaves the stream and the PEL (its lease ends); the body goes to bodies and the attempt
  becomes the task's next failure in errors (field ID|N, N counted in field ID; the newest 50 are
  kept, docs/keyspace.md). non_retryable and malformed go to the dead-letter queue at once;
  otherwise the task retries (due = now + backoff) until it has run 1 + max_retry times. A death
  applies the dead-letter caps (dlq_max, dlq_retention_s).
  Returns: {'retry', due_ms, attempt}, {'dead', at_ms, attempt}, or {'stale', '', 0} when the
    entry is no longer this worker's (the lease expired and the task was taken back).
  Errors: BATON_INVALID <field>: <rule>.
  Events: active -> retry or active -> dead, with the error (worker = consumer); dead -> dropped
    when a cap drops old dead tasks.
  Publishes 'NS|TYPE|due_ms' on baton:v2:wakeup when the retry becomes the earliest scheduled task.
]]
local FAIL_KINDS = { error = true, timeout = true, non_retryable = true, malformed = true }
local FAIL_KEYS = { 'stream', 'scheduled', 'dead', 'tasks', 'bodies', 'errors', 'events', 'done',
  'ended', 'config' }
register('baton_v2_fail', function(keys, args)
  local k = bind_keys(keys, FAIL_KEYS, true)
  argc(args, 10, 'group, consumer, id, SID, kind, error, stack, base_ms, max_ms, jitter')
  local group, consumer, id, sid, kind, message, stack =
    args[1], args[2], args[3], args[4], args[5], args[6], args[7]
  nonempty_arg(group, 'group')
  nonempty_arg(consumer, 'consumer')
  id_arg(id, 'id')
  stream_id_arg(sid, 'SID')
  if not FAIL_KINDS[kind] then
    invalid('kind', 'must be one of error, timeout, non_retryable, malformed')
  end
  local base = int_arg(args[8], 'base_ms', 0)
  local max = int_arg(args[9], 'max_ms', 0)
  local jitter = jitter_arg(args[10], 'jitter')

  local rec = call('HGET', k.tasks, id)
  local state, rtype, attempt, rsid
  if rec then
    state, rtype, attempt, rsid = parse_record(rec)
  end
  if state ~= 'queued' or rsid ~= sid then
    return { 'stale', '', 0 }
  end
  if rtype ~= k.type then
    invalid('KEYS[1]', 'task ' .. id .. ' has type ' .. rtype)
  end
  local entry = call('XRANGE', k.stream, sid, sid)
  local f = {}
  if entry[1] then
    f = parse_entry(entry[1][2]) or malformed_fields(entry[1][2])
  else
    message = message .. ' (stream entry ' .. sid .. ' was missing: body lost)'
  end
  local ctx = new_ctx(k)
  ctx.now = now_ms()
  local old_earliest = earliest_score(k.scheduled)
  local outcome, at, n = fail_entry(ctx, id, sid, { group }, f, attempt + 1, kind, message, stack,
    consumer, consumer, 'active', base, max, jitter)
  if outcome == 'retry' then
    wake_if_earlier(ctx, at, old_earliest)
  else
    cap_dead(ctx)
  end
  return { outcome, at, n }
end)
