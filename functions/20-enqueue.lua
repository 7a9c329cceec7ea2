
--[[
baton_enqueue: adds N tasks of one (NS, TYPE). Immediate ones go to the work stream, delayed ones
to the scheduled set. Every task is validated before anything is written.
  KEYS[1]  baton:{NS}:stream:TYPE
  KEYS[2]  baton:{NS}:scheduled:TYPE
  KEYS[3]  baton:{NS}:tasks
  KEYS[4]  baton:{NS}:bodies
  KEYS[5]  baton:{NS}:events
  KEYS[6]  baton:{NS}:types
  then per task i = 1..N:
  KEYS[5+2i]  baton:{NS}:done:ID_i
  KEYS[6+2i]  baton:{NS}:unique:KEY_i (or baton:{NS}:unique: when the task has none; untouched)
  ARGV[1]  TYPE
  ARGV[2]  events MAXLEN (entries; 0 = no events)
  ARGV[3]  N
  then 10 values per task:
    id; payload (JSON object text, <= 524288 bytes); max_retry (0..25); delay_seconds
    (0..31536000); created_at (Unix s); execution_timeout (s, 1..86400, or empty); extra (JSON
    object text or empty); run_at_ms (Unix ms; 0 = server now + delay_seconds * 1000);
    unique_key (empty = none); unique_ttl_s (s, >= 1; ignored without unique_key)
  Returns: N pairs {status, detail}: {'queued', SID}, {'scheduled', due_ms (integer)},
    {'duplicate', current_state} (live, or finished within the retention: nothing written),
    {'unique_conflict', holder_id}.
  Errors: BATON_INVALID <field>: <rule> (nothing written).
  Events: new -> queued, new -> scheduled (attempt 0).
  Publishes 'NS|TYPE|due_ms' on baton:wakeup when a scheduled task becomes the earliest of its set.
]]
register('baton_enqueue', function(keys, args)
  local stream, sched, tasks, bodies, events, types =
    keys[1], keys[2], keys[3], keys[4], keys[5], keys[6]
  local task_type, maxlen_text, n_text = args[1], args[2], args[3]

  if task_type == nil or not is_name(task_type) then
    invalid('task_type', 'must match ^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$')
  end
  local ctx = events_ctx(events, maxlen_text)
  local n = int_arg(n_text, 'N', 0)
  if #keys ~= 6 + 2 * n then
    invalid('KEYS', 'expected 6 + 2N = ' .. (6 + 2 * n) .. ' keys, got ' .. #keys)
  end
  if #args ~= 3 + 10 * n then
    invalid('ARGV', 'expected 3 + 10N = ' .. (3 + 10 * n) .. ' values, got ' .. #args)
  end
  if key_type(stream, 'stream', 1) ~= task_type then
    invalid('KEYS[1]', 'must be the stream of task type ' .. task_type)
  end
  local now = now_ms()

  -- Validate everything first. The common values take a table lookup or a string compare; the
  -- field label (with the task's index) is only built for an error.
  local function label(i, field)
    if n > 1 then
      return field .. ' (task ' .. i .. ')'
    end
    return field
  end
  local due = {} -- due time of each delayed task (nil: immediate)
  local ids = {}
  local done_keys = {}
  local created_ok = {} -- created_at texts already checked (a batch mostly shares one)
  local b = 3
  for i = 1, n do
    local id, payload, delay, created = args[b + 1], args[b + 2], args[b + 4], args[b + 5]
    if #id > 128 or not find(id, ID_PATTERN) then
      invalid(label(i, 'task_id'), ID_RULE)
    end
    if byte(payload, 1) ~= 123 or byte(payload, -1) ~= 125 or #payload > PAYLOAD_MAX_BYTES then
      object_arg(payload, label(i, 'payload'), PAYLOAD_MAX_BYTES)
    end
    local max_retry = SMALL_INTS[args[b + 3]]
    if max_retry == nil or max_retry > 25 then
      invalid(label(i, 'max_retry'), 'must be an integer 0..25')
    end
    local delay_s = 0
    if delay ~= '0' then
      delay_s = int_arg(delay, label(i, 'delay_seconds'), 0, 31536000)
    end
    if not created_ok[created] then
      local created_s = tonumber_(created)
      if created_s == nil or created_s < 946684800 or created_s > 4102444800 or
          not find(created, '^%d+$') then
        int_arg(created, label(i, 'created_at'), 946684800, 4102444800)
      end
      created_ok[created] = true
    end
    if args[b + 6] ~= '' then
      int_arg(args[b + 6], label(i, 'execution_timeout'), 1, 86400)
    end
    if args[b + 7] ~= '' then
      object_arg(args[b + 7], label(i, 'extra'))
    end
    local run_at = 0
    if args[b + 8] ~= '0' then
      run_at = int_arg(args[b + 8], label(i, 'run_at_ms'), 0)
    end
    if args[b + 9] ~= '' then
      int_arg(args[b + 10], label(i, 'unique_ttl_s'), 1)
    end
    if run_at > 0 then
      if run_at > now then
        due[i] = run_at
      end
    elseif delay_s > 0 then
      due[i] = now + delay_s * 1000
    end
    ids[i] = id
    done_keys[i] = keys[5 + 2 * i]
    b = b + 10
  end

  -- Duplicates: live records and done markers, one command each for the whole batch.
  local records = call_many('HMGET', tasks, ids)
  local markers = mget(done_keys)

  ctx.now = now
  local with_events = ctx.maxlen ~= 0
  local queued_prefix = 'queued|' .. task_type .. '|0|'
  local scheduled_record = 'scheduled|' .. task_type .. '|0|'
  local out = {}
  local new_records, r = {}, 0
  local seen = {} -- id -> state given earlier in this batch
  local old_earliest, looked, min_due = nil, false, nil
  b = 3
  for i = 1, n do
    local id = ids[i]
    if seen[id] then
      out[i] = { 'duplicate', seen[id] }
    elseif records[i] then
      out[i] = { 'duplicate', record_state(records[i]) }
    elseif markers[i] then
      out[i] = { 'duplicate', marker_state(markers[i]) }
    else
      local holder = nil
      if args[b + 9] ~= '' then
        local unique_key = keys[6 + 2 * i]
        if not call('SET', unique_key, id, 'NX', 'EX', args[b + 10]) then
          holder = call('GET', unique_key) or ''
        end
      end
      local due_i = due[i]
      if holder then
        out[i] = { 'unique_conflict', holder }
      elseif due_i == nil then
        local sid = call('XADD', stream, '*', 'id', id, 'payload', args[b + 2],
          'max_retry', args[b + 3], 'delay_seconds', args[b + 4], 'created_at', args[b + 5],
          'execution_timeout', args[b + 6], 'extra', args[b + 7], 'attempt', '0')
        new_records[r + 1] = id
        new_records[r + 2] = queued_prefix .. sid
        r = r + 2
        if with_events then -- emit(), inlined on the hot path
          call('XADD', events, '*', 'id', id, 'type', task_type, 'from', 'new', 'to', 'queued',
            'attempt', '0', 'worker', '', 'error', '')
          trim_ctx = ctx
        end
        seen[id] = 'queued'
        out[i] = { 'queued', sid }
      else
        if not looked then
          old_earliest, looked = earliest_due(sched), true
        end
        call('ZADD', sched, due_i, id)
        call('HSET', bodies, id, encode({
          payload = args[b + 2], max_retry = args[b + 3], delay_seconds = args[b + 4],
          created_at = args[b + 5], execution_timeout = args[b + 6], extra = args[b + 7],
        }))
        new_records[r + 1] = id
        new_records[r + 2] = scheduled_record
        r = r + 2
        emit(ctx, id, task_type, 'new', 'scheduled', '0', '', '')
        if min_due == nil or due_i < min_due then
          min_due = due_i
        end
        seen[id] = 'scheduled'
        out[i] = { 'scheduled', due_i }
      end
    end
    b = b + 10
  end
  if r > 0 then
    call_many('HSET', tasks, new_records)
    call('SADD', types, task_type)
  end
  wake_if_earlier(key_namespace(tasks), task_type, min_due, old_earliest)
  return out
end)
