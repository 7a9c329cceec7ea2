
--[[
baton_v2_enqueue: adds N tasks of one (NS, TYPE). Immediate ones go to the work stream, delayed
ones to the scheduled set. Every task is validated before anything is written.
  KEYS[1]  baton:v2:{NS}:stream:TYPE
  KEYS[2]  baton:v2:{NS}:scheduled:TYPE
  KEYS[3]  baton:v2:{NS}:tasks
  KEYS[4]  baton:v2:{NS}:bodies
  KEYS[5]  baton:v2:{NS}:events
  KEYS[6]  baton:v2:{NS}:types
  KEYS[7]  baton:v2:{NS}:done
  KEYS[8]  baton:v2:{NS}:ended
  KEYS[9]  baton:v2:{NS}:config
  then, for each task that has a unique key, in task order: baton:v2:{NS}:unique:KEY
  ARGV[1]  N
  then 10 values per task:
    id; payload (JSON object text, <= 524288 bytes); max_retry (0..25); delay_seconds
    (0..31536000); created_at (Unix s); execution_timeout (s, 1..86400, or empty); extra (JSON
    object text or empty); run_at_ms (Unix ms; 0 = server now + delay_seconds * 1000);
    unique_key (empty = none); unique_ttl_s (s, >= 1; ignored without unique_key)
  Returns: a flat array of 2N values, status then detail for each task in order: 'queued', SID;
    'scheduled', due_ms (integer); 'duplicate', current_state (live, or final within the
    retention: nothing written); 'unique_conflict', holder_id. (Flat, not N pairs: a nested
    array costs Redis a table per task to build and convert.)
  Errors: BATON_INVALID <field>: <rule> (nothing written).
  Events: new -> queued, new -> scheduled (attempt 0; one entry per call and target state).
  Publishes 'NS|TYPE|due_ms' on baton:v2:wakeup when a scheduled task becomes the earliest of its
  set, and 'NS|TYPE' on baton:v2:types when TYPE is new to the namespace.
]]
local ENQUEUE_KEYS = { 'stream', 'scheduled', 'tasks', 'bodies', 'events', 'types', 'done',
  'ended', 'config' }
register('baton_v2_enqueue', function(keys, args)
  local k = bind_keys(keys, ENQUEUE_KEYS)
  local n = int_arg(args[1], 'N', 0)
  argc(args, 1 + 10 * n, '1 + 10N')
  local task_type = k.type
  local now = nil -- server clock, read only for a delayed task (duplicates: ctx_now)

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
  local unique_keys = {} -- task index -> its lock key (KEYS)
  local unique_ttls = {} -- task index -> its lock's TTL (s, decimal text)
  local next_unique = 10
  local created_ok = {} -- created_at texts already checked (a batch mostly shares one)
  local b = 1
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
      -- the number, not the text: SET EX refuses '010', after earlier tasks were written
      unique_ttls[i] = int_text(int_arg(args[b + 10], label(i, 'unique_ttl_s'), 1))
      local want = unique_key_name(k, args[b + 9])
      if keys[next_unique] ~= want then
        invalid('KEYS[' .. next_unique .. ']', 'must be ' .. want)
      end
      unique_keys[i] = want
      next_unique = next_unique + 1
    end
    if run_at > 0 or delay_s > 0 then
      if now == nil then
        now = now_ms()
      end
      if run_at == 0 then
        due[i] = now + delay_s * 1000
      elseif run_at > now then
        due[i] = run_at
      end
    end
    ids[i] = id
    b = b + 10
  end
  if #keys ~= next_unique - 1 then
    invalid('KEYS', 'expected 9 + ' .. (next_unique - 10) .. ' keys (one per unique key), got ' ..
      #keys)
  end

  local ctx = new_ctx(k)
  ctx.now = now
  -- Duplicates: live records, then the final states of the others, one command each per batch.
  local records = call_many('HMGET', k.tasks, ids)
  local finals = nil
  local unknown, u = {}, 0
  for i = 1, n do
    if not records[i] then
      u = u + 1
      unknown[u] = ids[i]
    end
  end
  if u > 0 then
    local states = final_states(ctx, unknown)
    finals, u = {}, 0
    for i = 1, n do
      if not records[i] then
        u = u + 1
        finals[i] = states[u]
      end
    end
  end

  local stream = k.stream
  local with_events = ctx.config.with_events
  local queued_prefix = 'queued|' .. task_type .. '|0|'
  local scheduled_record = 'scheduled|' .. task_type .. '|0|'
  local out = {}
  local new_records, r = {}, 0
  local batch = nil -- the new -> queued events entry, opened at the first queued task
  local seen = {} -- id -> state given earlier in this batch
  local old_earliest, looked, min_due = nil, false, nil
  b = 1
  for i = 1, n do
    local id = ids[i]
    if seen[id] then
      out[2 * i - 1], out[2 * i] = 'duplicate', seen[id]
    elseif records[i] then
      out[2 * i - 1], out[2 * i] = 'duplicate', record_state(records[i])
    elseif finals and finals[i] then
      out[2 * i - 1], out[2 * i] = 'duplicate', finals[i]
    else
      local holder = nil
      local unique_key = unique_keys[i]
      if unique_key then
        if not call('SET', unique_key, id, 'NX', 'EX', unique_ttls[i]) then
          holder = call('GET', unique_key) or ''
        end
      end
      local due_i = due[i]
      if holder then
        out[2 * i - 1], out[2 * i] = 'unique_conflict', holder
      elseif due_i == nil then
        local sid = call('XADD', stream, '*', 'task', id .. '|' .. args[b + 3] .. '|' ..
          args[b + 4] .. '|' .. args[b + 5] .. '|' .. args[b + 6] .. '|0|' .. args[b + 7],
          'payload', args[b + 2])
        new_records[r + 1] = id
        new_records[r + 2] = queued_prefix .. sid
        r = r + 2
        batch = add_to_batch(ctx, batch, 'new', 'queued', '', id, '0')
        seen[id] = 'queued'
        out[2 * i - 1], out[2 * i] = 'queued', sid
      else
        if not looked then
          old_earliest, looked = earliest_score(k.scheduled), true
        end
        call('ZADD', k.scheduled, due_i, id)
        call('HSET', k.bodies, id, encode({
          payload = args[b + 2], max_retry = args[b + 3], delay_seconds = args[b + 4],
          created_at = args[b + 5], execution_timeout = args[b + 6], extra = args[b + 7],
        }))
        new_records[r + 1] = id
        new_records[r + 2] = scheduled_record
        r = r + 2
        emit(ctx, id, 'new', 'scheduled', '0', '', '')
        if min_due == nil or due_i < min_due then
          min_due = due_i
        end
        seen[id] = 'scheduled'
        out[2 * i - 1], out[2 * i] = 'scheduled', due_i
      end
    end
    b = b + 10
  end
  if r > 0 then
    call_many('HSET', k.tasks, new_records)
    -- The field '' is no task id: written and deleted at once, it only leaves the encoding.
    -- Small calls look at the size only every TASKS_CHECK_EVERY calls per namespace (HLEN is a
    -- tenth of a one-task enqueue), so a backlog converts at most that many calls late.
    local due = (size_checks[k.tasks] or 0) + 1
    local check = r / 2 > TASKS_LISTPACK_MAX or due >= TASKS_CHECK_EVERY
    if check then
      due = 0
    end
    remember_size_check(k.tasks, due)
    if check and (r / 2 > TASKS_LISTPACK_MAX or call('HLEN', k.tasks) > TASKS_LISTPACK_MAX) then
      if call('OBJECT', 'ENCODING', k.tasks) ~= 'hashtable' then
        call('HSET', k.tasks, '', TASKS_CONVERT_VALUE)
        call('HDEL', k.tasks, '')
      end
    end
    register_type(ctx)
  end

  wake_if_earlier(ctx, min_due, old_earliest)
  return out
end)
