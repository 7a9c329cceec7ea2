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
