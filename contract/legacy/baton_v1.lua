#!lua name=baton
--[[
Baton functions library, shared part (00-header.lua).

The library is every functions/*.lua concatenated in file-name order and loaded with
FUNCTION LOAD REPLACE (docs/protocol.md, "Loading"). This file holds the library version and the
helpers every transition uses; each later file registers one function. The contract of every
function is in docs/protocol.md, the keys in docs/keyspace.md.

Rules every function follows:
  - It touches only keys passed in KEYS (Redis Cluster: all keys of a call share the {NS} slot).
  - It reads the clock once (TIME, Unix ms of the Redis server) and passes `now` around.
  - Expected failures are error replies 'BATON_INVALID <field>: <rule>', 'BATON_NOT_FOUND <what>',
    'BATON_CONFLICT <what>' (contract/errors.json), returned before anything is written.
  - The payload is opaque text: it is never decoded (cjson would round numbers).
  - Events are added without a cap; the wrapper of register() trims the events stream once at the
    end of every call that emitted (XTRIM MAXLEN ~ N).

While the library loads only `redis.register_function` is reachable, so the standard library and
redis.call are bound into upvalues by init() at the start of every call.
]]

local VERSION = '1'

local WAKEUP_CHANNEL = 'baton:wakeup'
local PAYLOAD_MAX_BYTES = 524288
local CHUNK = 512 -- arguments per variadic command (unpack is limited by the Lua C stack)

-- Stream entry fields, in the fixed order of docs/keyspace.md.
local ENTRY_FIELDS = { 'id', 'payload', 'max_retry', 'delay_seconds', 'created_at',
  'execution_timeout', 'extra', 'attempt' }

-- '0'..'99' -> number: the hot path checks small integer fields with one table lookup.
-- NEXT_TEXT: '0'..'98' -> the next integer as text ('0' -> '1'). Attempts stay text on the hot
-- path: a Lua number turned into a string (concatenation, or an argument of redis.call) goes
-- through sprintf('%.14g'), which costs more than the table lookup by far.
local SMALL_INTS = {}
local NEXT_TEXT = {}
for i = 0, 99 do
  SMALL_INTS[i .. ''] = i
  if i > 0 then
    NEXT_TEXT[(i - 1) .. ''] = i .. ''
  end
end

-- The same sets as ID_RULE, digits and lower case first: Lua tries a class's items in order, and
-- most ids (UUIDs) are digits, lower-case hex and '-'.
local ID_PATTERN = '^[0-9a-zA-Z][0-9a-z%-A-Z_.:]*$'
local ID_RULE = 'must match ^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$'

local call, pcall_redis, find, sub, match, byte, fmt, floor, unpack_, tonumber_, type_, encode,
  decode

-- The events context of the running call once it has emitted an event (see emit), else nil.
local trim_ctx = nil

local function init()
  call = redis.call
  pcall_redis = redis.pcall
  find = string.find
  sub = string.sub
  match = string.match
  byte = string.byte
  fmt = string.format
  floor = math.floor
  unpack_ = unpack
  tonumber_ = tonumber
  type_ = type
  encode = cjson.encode
  decode = cjson.decode
end

-- Raises an error reply; register() turns it into the function's reply.
local function raise(code, message)
  error({ err = code .. ' ' .. message })
end

local function invalid(field, rule)
  raise('BATON_INVALID', field .. ': ' .. rule)
end

-- Wraps a transition: binds the helpers, and returns raised error replies as the reply instead of
-- letting Redis append the script location to them.
local function register(name, body, flags)
  local wrapped = function(keys, args)
    init()
    trim_ctx = nil
    local ok, result = pcall(body, keys, args)
    if trim_ctx then
      call('XTRIM', trim_ctx.events, 'MAXLEN', '~', trim_ctx.maxlen_text)
      trim_ctx = nil
    end
    if ok then
      return result
    end
    if type(result) == 'table' and result.err then
      return result
    end
    error(result, 0)
  end
  redis.register_function({ function_name = name, callback = wrapped, flags = flags })
end

-- Server time in Unix ms. Call once per invocation.
local function now_ms()
  local t = call('TIME')
  return tonumber_(t[1]) * 1000 + floor(tonumber_(t[2]) / 1000)
end

-- Integer as decimal text (Lua's own tostring switches to exponent notation past 14 digits).
local function int_text(n)
  return fmt('%d', n)
end

---------------------------------------------------------------------------------------------------
-- Argument checks (raise BATON_INVALID naming the field and the rule)

local function is_uint(v)
  return v ~= nil and #v > 0 and #v <= 15 and find(v, '^%d+$') ~= nil
end

-- Non-negative integer argument in [lo, hi] (hi optional).
local function int_arg(v, field, lo, hi)
  if not is_uint(v) then
    if hi then
      invalid(field, 'must be an integer ' .. lo .. '..' .. int_text(hi))
    end
    invalid(field, 'must be an integer >= ' .. lo)
  end
  local n = tonumber_(v)
  if n < lo or (hi and n > hi) then
    if hi then
      invalid(field, 'must be an integer ' .. lo .. '..' .. int_text(hi))
    end
    invalid(field, 'must be an integer >= ' .. lo)
  end
  return n
end

local function is_task_id(id)
  return #id <= 128 and find(id, ID_PATTERN) ~= nil
end

local function is_name(name)
  return #name <= 64 and find(name, '^[A-Za-z0-9][A-Za-z0-9_.%-]*$') ~= nil
end

local function id_arg(id, field)
  if id == nil or not is_task_id(id) then
    invalid(field, ID_RULE)
  end
  return id
end

local function nonempty_arg(v, field)
  if v == nil or v == '' then
    invalid(field, 'must not be empty')
  end
  return v
end

-- A JSON object text: checked cheaply by its first and last non-blank characters (the payload is
-- never decoded here; SDKs validate it fully before sending).
local function object_arg(v, field, max_bytes)
  if v == nil or ((byte(v, 1) ~= 123 or byte(v, -1) ~= 125) and
      (not find(v, '^%s*{') or not find(v, '}%s*$'))) then
    invalid(field, 'must be a JSON object')
  end
  if max_bytes and #v > max_bytes then
    invalid(field, 'must be at most ' .. max_bytes .. ' bytes')
  end
  return v
end

local function jitter_arg(v, field)
  local j = tonumber_(v)
  if j == nil or j < 0 or j >= 1 then
    invalid(field, 'must be a number in [0, 1)')
  end
  return j
end

local function stream_id_arg(v, field)
  if v == nil or not find(v, '^%d+%-%d+$') then
    invalid(field, 'must be a stream id like 1722489600123-0')
  end
  return v
end

---------------------------------------------------------------------------------------------------
-- Keys

-- The namespace of a key 'baton:{NS}:...'.
local function key_namespace(key)
  return match(key, '^baton:{([^}]*)}:') or ''
end

-- The task type of a key 'baton:{NS}:<kind>:TYPE', checked to be a valid name.
local function key_type(key, kind, index)
  local t = match(key, '^baton:{[^}]*}:' .. kind .. ':(.+)$')
  if t == nil or not is_name(t) then
    invalid('KEYS[' .. index .. ']', "must be baton:{NS}:" .. kind .. ':TYPE')
  end
  return t
end

---------------------------------------------------------------------------------------------------
-- Variadic commands over many items, in chunks. Returns the concatenated array replies.

-- One chunk items[s..e] of a variadic command, after `key` when there is one.
local function call_chunk(cmd, key, items, s, e)
  if key then
    return call(cmd, key, unpack_(items, s, e))
  end
  return call(cmd, unpack_(items, s, e))
end

local function call_many(cmd, key, items)
  local n = #items
  if n == 0 then
    return {}
  end
  if n <= CHUNK then
    return call_chunk(cmd, key, items, 1, n)
  end
  local out, k = {}, 0
  for s = 1, n, CHUNK do
    local e = s + CHUNK - 1
    if e > n then
      e = n
    end
    local r = call_chunk(cmd, key, items, s, e)
    if type_(r) == 'table' then
      for j = 1, #r do
        k = k + 1
        out[k] = r[j]
      end
    end
  end
  return out
end

-- XACK of many SIDs.
local function xack_many(stream, group, sids)
  local n = #sids
  for s = 1, n, CHUNK do
    local e = s + CHUNK - 1
    if e > n then
      e = n
    end
    call('XACK', stream, group, unpack_(sids, s, e))
  end
end

-- MGET over keys (no leading key argument).
local function mget(keys)
  return call_many('MGET', nil, keys)
end

---------------------------------------------------------------------------------------------------
-- Task record 'STATE|TYPE|ATTEMPT|SID' (baton:{NS}:tasks)

local function make_record(state, task_type, attempt, sid)
  return state .. '|' .. task_type .. '|' .. attempt .. '|' .. sid
end

-- Returns state, type, attempt (number), sid; nil when the record is not in the format.
local function parse_record(rec)
  local state, task_type, attempt, sid = match(rec, '^(%a+)|([^|]*)|(%d+)|(.*)$')
  if state == nil then
    return nil
  end
  return state, task_type, tonumber_(attempt), sid
end

-- The state a duplicate enqueue reports: the record's state or the final state of a done marker.
local function record_state(rec)
  return match(rec, '^(%a+)|') or 'unknown'
end

local function marker_state(marker)
  return match(marker, '"state":"(%a+)"') or 'done'
end

---------------------------------------------------------------------------------------------------
-- JSON text built by hand (the hot path avoids cjson)

local function json_string(s)
  if find(s, '[%c"\\]') then
    return encode(s)
  end
  return '"' .. s .. '"'
end

-- Final record in baton:{NS}:done:ID.
local function final_record(state, task_type, attempts, now, worker)
  return '{"state":"' .. state .. '","type":"' .. task_type .. '","attempts":' .. attempts ..
      ',"finished_ms":' .. int_text(now) .. ',"worker":' .. json_string(worker) .. '}'
end

---------------------------------------------------------------------------------------------------
-- Bodies (baton:{NS}:bodies): a JSON object of strings, so the payload bytes survive exactly.

-- f: stream entry fields by name (any may be missing).
local function encode_body(f)
  return encode({
    payload = f.payload or '',
    max_retry = f.max_retry or '',
    delay_seconds = f.delay_seconds or '',
    created_at = f.created_at or '',
    execution_timeout = f.execution_timeout or '',
    extra = f.extra or '',
  })
end

local function as_text(v)
  if type_(v) == 'string' then
    return v
  end
  if v == nil or v == cjson.null or type_(v) == 'table' then
    return ''
  end
  return tostring(v)
end

-- Returns the body's fields by name; a missing or corrupt body gives empty fields, which the next
-- baton_dequeue then sends to the dead-letter queue as malformed (never silently dropped).
local function decode_body(text)
  local b = {}
  if text then
    local ok, t = pcall(decode, text)
    if ok and type_(t) == 'table' then
      b = t
    end
  end
  return {
    payload = as_text(b.payload),
    max_retry = as_text(b.max_retry),
    delay_seconds = as_text(b.delay_seconds),
    created_at = as_text(b.created_at),
    execution_timeout = as_text(b.execution_timeout),
    extra = as_text(b.extra),
  }
end

-- XADD of a work stream entry, fields in the fixed order. Returns the SID.
local function add_entry(stream, id, f, attempt)
  return call('XADD', stream, '*', 'id', id, 'payload', f.payload, 'max_retry', f.max_retry,
    'delay_seconds', f.delay_seconds, 'created_at', f.created_at,
    'execution_timeout', f.execution_timeout, 'extra', f.extra, 'attempt', attempt)
end

---------------------------------------------------------------------------------------------------
-- Stream entry checks (baton_dequeue, baton_reclaim)

-- fv: the flat field/value array of an entry. Returns the entry as a flat array in the fixed
-- field order (fv itself when it already is; values at 2, 4, ..., 16: id, payload, max_retry,
-- delay_seconds, created_at, execution_timeout, extra, attempt) and nil, or nil and the reason the
-- entry is malformed. The id is not checked here: an entry is only delivered when a task record
-- points at it, and baton_enqueue never writes a record for an invalid id (no_record_reason says
-- why an entry without a record is malformed).
local function check_entry(fv)
  if not (#fv == 16 and fv[1] == 'id' and fv[3] == 'payload' and fv[5] == 'max_retry' and
      fv[7] == 'delay_seconds' and fv[9] == 'created_at' and fv[11] == 'execution_timeout' and
      fv[13] == 'extra' and fv[15] == 'attempt') then
    local byname = {}
    for j = 1, #fv - 1, 2 do
      byname[fv[j]] = fv[j + 1]
    end
    local v = {}
    for j = 1, 8 do
      local x = byname[ENTRY_FIELDS[j]]
      if x == nil then
        return nil, 'missing field ' .. ENTRY_FIELDS[j]
      end
      v[2 * j - 1] = ENTRY_FIELDS[j]
      v[2 * j] = x
    end
    fv = v
  end
  if SMALL_INTS[fv[6]] == nil and not is_uint(fv[6]) then
    return nil, 'max_retry is not an integer'
  end
  if fv[8] ~= '0' and not is_uint(fv[8]) then
    return nil, 'delay_seconds is not an integer'
  end
  if not find(fv[10], '^%d+$') or #fv[10] > 15 then
    return nil, 'created_at is not an integer'
  end
  if fv[12] ~= '' and not is_uint(fv[12]) then
    return nil, 'execution_timeout is not an integer'
  end
  if SMALL_INTS[fv[16]] == nil and not is_uint(fv[16]) then
    return nil, 'attempt is not an integer'
  end
  return fv, nil
end

-- Why an entry that passed check_entry but has no task record is malformed.
local function no_record_reason(id)
  if not is_task_id(id) then
    return 'id is not a valid task id'
  end
  return 'no task record for id ' .. id
end

-- Fields by name of a raw entry (for the body of a malformed one).
local function fields_by_name(fv)
  local f = {}
  for j = 1, #fv - 1, 2 do
    f[fv[j]] = fv[j + 1]
  end
  return f
end

-- The entry's own id when it is a valid task id, else nil.
local function raw_entry_id(fv)
  for j = 1, #fv - 1, 2 do
    if fv[j] == 'id' then
      if is_task_id(fv[j + 1]) then
        return fv[j + 1]
      end
      return nil
    end
  end
  return nil
end

---------------------------------------------------------------------------------------------------
-- Events (baton:{NS}:events), skipped when maxlen is 0

-- Entries are added without a MAXLEN each; register() trims the stream once at the end of every
-- call that emitted (one XTRIM MAXLEN ~ per call instead of a trim check per entry). The cap
-- holds after every call, and a call is atomic, so nobody sees the stream in between.
local function emit(ctx, id, task_type, from, to, attempt, worker, err)
  if ctx.maxlen ~= 0 then
    call('XADD', ctx.events, '*', 'id', id, 'type', task_type, 'from', from, 'to', to,
      'attempt', attempt, 'worker', worker, 'error', err)
    trim_ctx = ctx
  end
end

---------------------------------------------------------------------------------------------------
-- Scheduling

-- Retry delay after the n-th failed attempt (docs/protocol.md, Conventions).
local function backoff_ms(n, base, max, jitter)
  local exp = base * 2 ^ (n - 1)
  if exp > max then
    exp = max
  end
  return exp + floor(jitter * exp / 4)
end

-- Due time of the earliest member of a scheduled set, or nil when it is empty.
local function earliest_due(sched)
  local first = call('ZRANGE', sched, 0, 0, 'WITHSCORES')
  if first[2] then
    return tonumber_(first[2])
  end
  return nil
end

-- Publishes 'NS|TYPE|due_ms' on baton:wakeup when `due` is earlier than `old_earliest` (the
-- earliest due time before the call added anything; nil when the set was empty).
local function wake_if_earlier(ns, task_type, due, old_earliest)
  if due and (old_earliest == nil or due < old_earliest) then
    call('PUBLISH', WAKEUP_CHANNEL, ns .. '|' .. task_type .. '|' .. int_text(due))
  end
end

-- Pseudo-random jitter in [0, 1) for the i-th entry of a reclaim call (Park-Miller, exact in
-- doubles), so a batch of retries does not come due at the same millisecond.
local function seeded_jitter(seed, i)
  local x = (seed + i * 7919) % 2147483646 + 1
  x = (x * 16807) % 2147483647
  x = (x * 16807) % 2147483647
  return (x - 1) / 2147483646
end

---------------------------------------------------------------------------------------------------
-- Error history (baton:{NS}:errors): a JSON array, appended to as text.

local function append_error(ctx, id, attempt, kind, message, stack, worker)
  local e = '{"attempt":' .. attempt .. ',"kind":' .. json_string(kind) .. ',"error":' ..
      json_string(message) .. ',"stack":' .. json_string(stack) .. ',"worker":' ..
      json_string(worker) .. ',"at_ms":' .. int_text(ctx.now) .. '}'
  local old = call('HGET', ctx.errors, id)
  local new
  if old and #old > 2 and sub(old, -1) == ']' then
    new = sub(old, 1, -2) .. ',' .. e .. ']'
  else
    new = '[' .. e .. ']'
  end
  call('HSET', ctx.errors, id, new)
end

---------------------------------------------------------------------------------------------------
-- Failing one delivered entry (baton_fail, baton_reclaim, baton_dequeue's malformed path)

-- ctx: stream, sched, dead, tasks, bodies, errors, events, maxlen, maxlen_text, group, now, type.
-- f: the entry's fields by name (any may be missing). attempt: the number of the failed attempt.
-- The entry leaves the stream and the group's PEL; the body goes to bodies, the error to errors;
-- the task goes to retry (scheduled set, due after the backoff) or dead (dead-letter queue).
-- Returns 'retry' or 'dead', the due / death time in ms, and the attempt.
local function fail_entry(ctx, id, sid, f, attempt, kind, message, stack, worker, event_worker,
                          from, base, max, jitter)
  if sid ~= '' then
    call('XACK', ctx.stream, ctx.group, sid)
    call('XDEL', ctx.stream, sid)
  end
  call('HSET', ctx.bodies, id, encode_body(f))
  append_error(ctx, id, attempt, kind, message, stack, worker)
  local retry = false
  if kind ~= 'non_retryable' and kind ~= 'malformed' and is_uint(f.max_retry) then
    retry = attempt < 1 + tonumber_(f.max_retry)
  end
  if retry then
    local due = ctx.now + backoff_ms(attempt, base, max, jitter)
    call('ZADD', ctx.sched, due, id)
    call('HSET', ctx.tasks, id, make_record('retry', ctx.type, attempt, ''))
    emit(ctx, id, ctx.type, from, 'retry', attempt, event_worker, message)
    return 'retry', due, attempt
  end
  call('ZADD', ctx.dead, ctx.now, id)
  call('HSET', ctx.tasks, id, make_record('dead', ctx.type, attempt, ''))
  emit(ctx, id, ctx.type, from, 'dead', attempt, event_worker, message)
  return 'dead', ctx.now, attempt
end

-- Sends a malformed stream entry to the dead-letter queue (baton_dequeue, baton_reclaim).
-- rec: the task record of the entry's id (or false). The task id is the entry's id when valid and
-- not owned by another live copy, else 'malformed-SID'. Returns the id used.
local function bury_malformed(ctx, sid, fv, rec, reason, worker, event_worker)
  local id = raw_entry_id(fv)
  if id and rec then
    local _, _, _, rsid = parse_record(rec)
    if rsid ~= sid then
      id = nil -- the id belongs to another task copy: do not overwrite it
    end
  end
  if id == nil then
    id = 'malformed-' .. sid
  end
  local f = fields_by_name(fv)
  local attempt = 1
  if is_uint(f.attempt) then
    attempt = tonumber_(f.attempt) + 1
  end
  fail_entry(ctx, id, sid, f, attempt, 'malformed', reason, '', worker, event_worker, 'queued',
    0, 0, 0)
  return id
end

-- Drops a stale copy: an entry whose task record points at another SID or state.
local function drop_stale(ctx, id, sid, attempt, worker)
  call('XACK', ctx.stream, ctx.group, sid)
  call('XDEL', ctx.stream, sid)
  emit(ctx, id, ctx.type, 'queued', 'deleted', attempt, worker, 'stale copy ' .. sid)
end

-- Common context of the functions that use fail_entry.
local function events_ctx(events, maxlen_text)
  local maxlen = int_arg(maxlen_text, 'events_maxlen', 0)
  return { events = events, maxlen = maxlen, maxlen_text = maxlen_text }
end

--[[
baton_version (read-only): the version of this functions library.
  KEYS: none.
  ARGV: none.
  Returns: bulk string, the library version ("1", contract/protocol.json).
  Errors: none. Events: none.
Clients call FCALL_RO baton_version 0 on connect and refuse to run on a mismatch.
]]
register('baton_version', function(keys, args)
  return VERSION
end, { 'no-writes' })

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

--[[
baton_dequeue: delivers up to `count` new entries of one work stream to one consumer, checking each.
  KEYS[1]  baton:{NS}:stream:TYPE
  KEYS[2]  baton:{NS}:tasks
  KEYS[3]  baton:{NS}:events
  KEYS[4]  baton:{NS}:bodies
  KEYS[5]  baton:{NS}:errors
  KEYS[6]  baton:{NS}:dead:TYPE
  ARGV[1]  group (consumer group; created at id 0 when missing, so it sees the whole backlog)
  ARGV[2]  consumer
  ARGV[3]  count (entries, >= 1)
  ARGV[4]  events MAXLEN (entries; 0 = no events)
  Returns: {entries, last_id}. entries is flat, 9 values per delivered task: SID, id, payload,
    max_retry, delay_seconds, created_at, execution_timeout, extra, attempt (attempts made before
    this delivery). When nothing was delivered, last_id is an id to block after with
    XREAD BLOCK ms STREAMS stream last_id: the stream's last entry (or 0-0) when nothing was read,
    or the last entry read when every entry read was dropped. Otherwise last_id is "".
  Checks per entry: the eight fields present, integer fields integers, a valid id, and a task
  record queued at this SID. A malformed entry (or one no baton_enqueue wrote) is acked, deleted
  and put in the dead-letter queue with kind 'malformed' and the reason, under its id or
  'malformed-SID'. An entry whose record points at another SID is a stale copy: acked, deleted.
  Errors: BATON_INVALID <field>: <rule>.
  Events: queued -> active (attempt = entry attempt + 1, worker = consumer); queued -> dead for
    malformed entries; queued -> deleted for stale copies.
]]
register('baton_dequeue', function(keys, args)
  local stream, tasks, events, bodies, errors, dead =
    keys[1], keys[2], keys[3], keys[4], keys[5], keys[6]
  local group, consumer, count_text, maxlen_text = args[1], args[2], args[3], args[4]

  nonempty_arg(group, 'group')
  nonempty_arg(consumer, 'consumer')
  int_arg(count_text, 'count', 1)
  local ctx = events_ctx(events, maxlen_text)
  local task_type = key_type(stream, 'stream', 1)

  local read = pcall_redis('XREADGROUP', 'GROUP', group, consumer, 'COUNT', count_text,
    'STREAMS', stream, '>')
  if type_(read) == 'table' and read.err then
    if not find(read.err, 'NOGROUP', 1, true) then
      return read
    end
    call('XGROUP', 'CREATE', stream, group, '0', 'MKSTREAM')
    read = call('XREADGROUP', 'GROUP', group, consumer, 'COUNT', count_text, 'STREAMS', stream,
      '>')
  end
  if not read then
    local last = call('XREVRANGE', stream, '+', '-', 'COUNT', 1)
    if last[1] then
      return { {}, last[1][1] }
    end
    return { {}, '0-0' }
  end

  local list = read[1][2]
  local n = #list
  local checked, reasons = {}, {}
  local lookup_ids, m = {}, 0
  local lookup_index = nil -- entry -> index in lookup_ids, once an entry had no id (else equal)
  local created_ok = {} -- created_at texts already checked (a batch mostly shares a few)
  for i = 1, n do
    local fv = list[i][2]
    -- The common entry (fields in order, small integers, a created_at already checked) is
    -- checked inline; any other goes through check_entry, which also names what is wrong.
    local v, reason = fv, nil
    if not (#fv == 16 and fv[1] == 'id' and fv[3] == 'payload' and fv[5] == 'max_retry' and
        fv[7] == 'delay_seconds' and fv[9] == 'created_at' and fv[11] == 'execution_timeout' and
        fv[13] == 'extra' and fv[15] == 'attempt' and SMALL_INTS[fv[6]] and
        (fv[8] == '0' or is_uint(fv[8])) and created_ok[fv[10]] and
        (fv[12] == '' or is_uint(fv[12])) and NEXT_TEXT[fv[16]]) then
      v, reason = check_entry(fv)
      if v then
        created_ok[v[10]] = true
      end
    end
    local id
    if v then
      checked[i], id = v, v[2]
    else
      reasons[i], id = reason, raw_entry_id(fv)
    end
    if id then
      m = m + 1
      lookup_ids[m] = id
      if lookup_index then
        lookup_index[i] = m
      end
    elseif not lookup_index then
      lookup_index = {}
      for j = 1, i - 1 do
        lookup_index[j] = j
      end
    end
  end
  local records = call_many('HMGET', tasks, lookup_ids)

  ctx.stream, ctx.tasks, ctx.bodies, ctx.errors, ctx.dead = stream, tasks, bodies, errors, dead
  ctx.group, ctx.type, ctx.now = group, task_type, nil
  local expected_prefix = 'queued|' .. task_type .. '|'
  local with_events = ctx.maxlen ~= 0
  local out, k = {}, 0
  for i = 1, n do
    local sid = list[i][1]
    local v = checked[i]
    local rec
    if lookup_index then
      rec = lookup_index[i] and records[lookup_index[i]] or false
    else
      rec = records[i]
    end
    local deliver = false
    if v and rec then
      if rec == expected_prefix .. v[16] .. '|' .. sid then
        deliver = true
      else
        local state, _, _, rsid = parse_record(rec)
        deliver = state == 'queued' and rsid == sid
      end
    end
    if deliver then
      out[k + 1] = sid
      out[k + 2] = v[2]
      out[k + 3] = v[4]
      out[k + 4] = v[6]
      out[k + 5] = v[8]
      out[k + 6] = v[10]
      out[k + 7] = v[12]
      out[k + 8] = v[14]
      out[k + 9] = v[16]
      k = k + 9
      if with_events then -- emit(), inlined on the hot path
        call('XADD', events, '*', 'id', v[2], 'type', task_type, 'from', 'queued', 'to', 'active',
          'attempt', NEXT_TEXT[v[16]] or int_text(tonumber_(v[16]) + 1), 'worker', consumer,
          'error', '')
        trim_ctx = ctx
      end
    elseif v and rec then
      drop_stale(ctx, v[2], sid, v[16], consumer)
    else
      if ctx.now == nil then
        ctx.now = now_ms()
      end
      local reason = reasons[i] or no_record_reason(v[2])
      bury_malformed(ctx, sid, list[i][2], rec, 'malformed stream entry ' .. sid .. ': ' .. reason,
        consumer, consumer)
    end
  end
  if k == 0 then
    return { out, list[n][1] }
  end
  return { out, '' }
end)

--[[
baton_ack: records success for N tasks of one (NS, TYPE) and writes their done markers, atomically.
  KEYS[1]  baton:{NS}:stream:TYPE
  KEYS[2]  baton:{NS}:scheduled:TYPE
  KEYS[3]  baton:{NS}:tasks
  KEYS[4]  baton:{NS}:events
  KEYS[5]  baton:{NS}:errors
  KEYS[6]  baton:{NS}:bodies
  KEYS[6+i]  baton:{NS}:done:ID_i, i = 1..N
  ARGV[1]  group
  ARGV[2]  retention_s (done marker TTL, seconds, >= 1)
  ARGV[3]  events MAXLEN (entries; 0 = no events)
  ARGV[4]  N
  then 2 values per task: id, SID (the stream entry the worker ran)
  then ARGV[5+2N]  consumer
  Per task: XACK and XDEL of the SID; the record, body and error history leave their hashes;
  done:ID is set to {"state":"done",...} with the TTL. A stale ack (the lease had expired and the
  task was taken back) still counts as success: a waiting retry (scheduled set, or a newer stream
  copy) is removed; a redelivery that already started may still run (at-least-once).
  Returns: N statuses: 'done', 'stale_done' (success recorded after the lease was lost) or 'gone'
    (no live task: already finished, cancelled or deleted; or dead, which stays in the
    dead-letter queue since baton_ack does not get its key).
  Errors: BATON_INVALID <field>: <rule>.
  Events: active -> done (attempt = the run that succeeded, worker = consumer); for a stale ack
    the from state is the record's (retry, scheduled or queued).
]]
register('baton_ack', function(keys, args)
  local stream, sched, tasks, events, errors, bodies =
    keys[1], keys[2], keys[3], keys[4], keys[5], keys[6]
  local group, retention_text, maxlen_text, n_text = args[1], args[2], args[3], args[4]

  nonempty_arg(group, 'group')
  int_arg(retention_text, 'retention_s', 1)
  local ctx = events_ctx(events, maxlen_text)
  local n = int_arg(n_text, 'N', 0)
  if #keys ~= 6 + n then
    invalid('KEYS', 'expected 6 + N = ' .. (6 + n) .. ' keys, got ' .. #keys)
  end
  if #args ~= 5 + 2 * n then
    invalid('ARGV', 'expected 5 + 2N = ' .. (5 + 2 * n) .. ' values, got ' .. #args)
  end
  local consumer = args[5 + 2 * n]
  local task_type = key_type(stream, 'stream', 1)
  if n == 0 then
    return {}
  end
  local ids, sids = {}, {}
  for i = 1, n do
    ids[i] = args[3 + 2 * i]
    sids[i] = args[4 + 2 * i]
  end
  -- The records are read before anything is checked or written. A task whose record is queued at
  -- the given SID with attempt 0 (the common case: first run) is 'fresh': its id and SID are the
  -- record's, so they need no check. Every other id and SID is checked, in argument order,
  -- before the first write. Ids are not pattern-checked: an id without a live record is 'gone'.
  local records = call_many('HMGET', tasks, ids)
  local fresh_prefix = 'queued|' .. task_type .. '|0|'
  local fresh = {}
  for i = 1, n do
    local rec = records[i]
    if rec and rec == fresh_prefix .. sids[i] then
      fresh[i] = true
    else
      nonempty_arg(ids[i], 'id')
      if not find(sids[i], '^%d+%-%d+$') then
        stream_id_arg(sids[i], 'SID')
      end
    end
  end

  local now = now_ms()
  -- The done marker of a normal ack is prefix .. attempts .. suffix.
  local done_prefix = '{"state":"done","type":"' .. task_type .. '","attempts":'
  local done_suffix = ',"finished_ms":' .. int_text(now) .. ',"worker":' .. json_string(consumer) ..
      '}'
  local fresh_marker = done_prefix .. '1' .. done_suffix
  local with_events = ctx.maxlen ~= 0

  xack_many(stream, group, sids)
  call_many('XDEL', stream, sids)

  local out = {}
  local finished, f = {}, 0 -- ids leaving tasks / bodies / errors
  local newer_sids, s = {}, 0 -- stream copies of a waiting retry (stale ack)
  local seen = {} -- ids already acked in this call: a repeat is 'gone'
  for i = 1, n do
    local id = ids[i]
    if fresh[i] and not seen[id] then
      seen[id] = true
      out[i] = 'done'
      f = f + 1
      finished[f] = id
      call('SET', keys[6 + i], fresh_marker, 'EX', retention_text)
      if with_events then -- emit(), inlined on the hot path
        call('XADD', events, '*', 'id', id, 'type', task_type, 'from', 'active', 'to', 'done',
          'attempt', '1', 'worker', consumer, 'error', '')
        trim_ctx = ctx
      end
    else
      local sid, rec = sids[i], records[i]
      local state, rtype, attempt, rsid
      if rec and not seen[id] then
        state, rtype, attempt, rsid = match(rec, '^(%a+)|([^|]*)|(%d+)|(.*)$')
      end
      seen[id] = true
      if state == nil or state == 'dead' then
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
          else
            call('ZREM', sched, id)
            call('HDEL', bodies, id)
          end
        end
        f = f + 1
        finished[f] = id
        local marker
        if rtype == task_type then
          marker = done_prefix .. attempts .. done_suffix
        else
          marker = final_record('done', rtype, attempts, now, consumer)
        end
        call('SET', keys[6 + i], marker, 'EX', retention_text)
        if with_events then
          emit(ctx, id, rtype, from, 'done', attempts, consumer, '')
        end
      end
    end
  end
  if f > 0 then
    call_many('HDEL', tasks, finished)
    call_many('HDEL', errors, finished)
  end
  if s > 0 then
    call_many('XDEL', stream, newer_sids)
  end
  return out
end)

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

--[[
baton_extend: heartbeat. Resets the idle time (the lease) of the entries this consumer still holds.
  KEYS[1]  baton:{NS}:stream:TYPE
  ARGV[1]  group
  ARGV[2]  consumer
  ARGV[3..] SIDs the consumer is working on
  Returns: the SIDs still held, in argument order; a SID missing from the answer was taken back
    (or deleted from the stream): stop working on it. Entries held by another consumer are never
    taken over.
  Errors: BATON_INVALID <field>: <rule>.
  Events: none.
]]
register('baton_extend', function(keys, args)
  local stream = keys[1]
  local group, consumer = args[1], args[2]

  nonempty_arg(group, 'group')
  nonempty_arg(consumer, 'consumer')
  for i = 3, #args do
    stream_id_arg(args[i], 'SID')
  end
  local held, k = {}, 0
  for i = 3, #args do
    local sid = args[i]
    local p = pcall_redis('XPENDING', stream, group, sid, sid, 1, consumer)
    if type_(p) == 'table' and p.err then
      if find(p.err, 'NOGROUP', 1, true) then
        return {}
      end
      return p
    end
    if p[1] then
      k = k + 1
      held[k] = sid
    end
  end
  if k == 0 then
    return {}
  end
  -- XCLAIM to the same consumer with min-idle 0 resets the idle time; JUSTID keeps the delivery
  -- count. Entries deleted from the stream are dropped from the PEL and left out of the reply.
  local out, o = {}, 0
  for s = 1, k, CHUNK do
    local e = s + CHUNK - 1
    if e > k then
      e = k
    end
    local argv, a = { stream, group, consumer, 0 }, 4
    for j = s, e do
      a = a + 1
      argv[a] = held[j]
    end
    argv[a + 1] = 'JUSTID'
    local r = call('XCLAIM', unpack_(argv))
    for j = 1, #r do
      o = o + 1
      out[o] = r[j]
    end
  end
  return out
end)

--[[
baton_promote: moves due scheduled (delayed or retrying) tasks of one (NS, TYPE) into the stream.
Atomic: any number of promoters may call it at once; nothing is promoted twice or lost.
  KEYS[1]  baton:{NS}:scheduled:TYPE
  KEYS[2]  baton:{NS}:stream:TYPE
  KEYS[3]  baton:{NS}:tasks
  KEYS[4]  baton:{NS}:bodies
  KEYS[5]  baton:{NS}:events
  ARGV[1]  limit (tasks per call, >= 1)
  ARGV[2]  events MAXLEN (entries; 0 = no events)
  Each due task gets a stream entry (its body, attempt = the record's attempt), its record becomes
  queued at the new SID and its body leaves bodies. A member without a scheduled/retry record is
  removed from the set. A missing or corrupt body still gives an entry (with empty fields), which
  the next baton_dequeue sends to the dead-letter queue as malformed.
  Returns: {promoted, next_due_ms, now_ms}; next_due_ms is -1 when the set is empty (it is <= now
    when more tasks are due than the limit allowed: call again).
  Errors: BATON_INVALID <field>: <rule>.
  Events: scheduled -> queued, retry -> queued.
]]
register('baton_promote', function(keys, args)
  local sched, stream, tasks, bodies, events = keys[1], keys[2], keys[3], keys[4], keys[5]
  local limit_text, maxlen_text = args[1], args[2]

  int_arg(limit_text, 'limit', 1)
  local ctx = events_ctx(events, maxlen_text)
  local task_type = key_type(sched, 'scheduled', 1)
  if key_type(stream, 'stream', 2) ~= task_type then
    invalid('KEYS[2]', 'must be the stream of task type ' .. task_type)
  end
  local now = now_ms()

  local ids = call('ZRANGE', sched, '-inf', now, 'BYSCORE', 'LIMIT', 0, limit_text)
  local promoted = 0
  if #ids > 0 then
    local records = call_many('HMGET', tasks, ids)
    local texts = call_many('HMGET', bodies, ids)
    local new_records, r = {}, 0
    local moved = {}
    for i = 1, #ids do
      local id, rec = ids[i], records[i]
      local state, _, attempt
      if rec then
        state, _, attempt = parse_record(rec)
      end
      if state == 'scheduled' or state == 'retry' then
        local sid = add_entry(stream, id, decode_body(texts[i]), attempt)
        new_records[r + 1] = id
        new_records[r + 2] = make_record('queued', task_type, attempt, sid)
        r = r + 2
        emit(ctx, id, task_type, state, 'queued', attempt, '', '')
        promoted = promoted + 1
        moved[promoted] = id
      end
    end
    call_many('ZREM', sched, ids)
    call_many('HDEL', bodies, moved)
    if r > 0 then
      call_many('HSET', tasks, new_records)
    end
  end
  local next_due = earliest_due(sched) or -1
  return { promoted, next_due, now }
end)

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

--[[
baton_dlq_replay: puts a dead task back into its stream with a fresh retry budget (attempt 0),
optionally with a new payload. The error history stays in errors.
  KEYS[1]  baton:{NS}:dead:TYPE
  KEYS[2]  baton:{NS}:stream:TYPE
  KEYS[3]  baton:{NS}:tasks
  KEYS[4]  baton:{NS}:bodies
  KEYS[5]  baton:{NS}:events
  ARGV[1]  id
  ARGV[2]  new payload (JSON object text, <= 524288 bytes; empty = keep the old one)
  ARGV[3]  events MAXLEN (entries; 0 = no events)
  Returns: the new SID.
  Errors: BATON_NOT_FOUND dead task ID; BATON_INVALID <field>: <rule>.
  Events: dead -> queued (attempt 0).
]]
register('baton_dlq_replay', function(keys, args)
  local dead, stream, tasks, bodies, events = keys[1], keys[2], keys[3], keys[4], keys[5]
  local id, payload, maxlen_text = args[1], args[2], args[3]

  id_arg(id, 'id')
  if payload == nil then
    invalid('payload', 'is required (empty = keep)')
  end
  if payload ~= '' then
    object_arg(payload, 'payload', PAYLOAD_MAX_BYTES)
  end
  local ctx = events_ctx(events, maxlen_text)
  local task_type = key_type(dead, 'dead', 1)
  if key_type(stream, 'stream', 2) ~= task_type then
    invalid('KEYS[2]', 'must be the stream of task type ' .. task_type)
  end

  local rec = call('HGET', tasks, id)
  local state, rtype
  if rec then
    state, rtype = parse_record(rec)
  end
  if state ~= 'dead' or rtype ~= task_type then
    raise('BATON_NOT_FOUND', 'dead task ' .. id .. ' of type ' .. task_type)
  end
  local body = decode_body(call('HGET', bodies, id))
  if payload ~= '' then
    body.payload = payload
  end
  local sid = add_entry(stream, id, body, '0')
  call('HSET', tasks, id, make_record('queued', task_type, 0, sid))
  call('HDEL', bodies, id)
  call('ZREM', dead, id)
  emit(ctx, id, task_type, 'dead', 'queued', '0', '', '')
  return sid
end)

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
