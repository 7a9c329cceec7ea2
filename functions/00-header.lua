#!lua name=baton_v2
--[[
Baton functions library v2, shared part (00-header.lua).

The library is every functions/*.lua concatenated in file-name order and loaded with
FUNCTION LOAD REPLACE (docs/protocol.md, "Loading"). This file holds the library version, the
namespace defaults and the helpers every transition uses; each later file registers one function
(or two closely related ones). The contract of every function is in docs/protocol.md and
contract/protocol.json, the keys in docs/keyspace.md.

Library and function names carry the major version (baton_v2, baton_v2_enqueue, ...) so that v1
and v2 can be loaded side by side during a rolling upgrade (docs/upgrading.md); v2 keys start with
baton:v2: and never meet v1's.

Rules every function follows:
  - It touches only keys passed in KEYS, and checks every one of them against the namespace (and
    task type) of KEYS[1]: a wrong key is BATON_INVALID, never a write to a foreign key.
  - It reads the clock once (TIME, Unix ms of the Redis server) and passes `now` around.
  - Expected failures are error replies 'BATON_INVALID <field>: <rule>', 'BATON_NOT_FOUND <what>',
    'BATON_CONFLICT <what>' (contract/errors.json), returned before anything is written.
  - The payload is opaque text: it is never decoded (cjson would round numbers).
  - Namespace settings (events cap, done retention, dead-letter caps, default lease) come from
    baton:v2:{NS}:config, never from a caller's argument.
  - Events are per call and transition, not per task: emit() collects the ids, register() writes
    one events entry per (from, to, worker) at the end of the call and trims the stream once.

While the library loads only `redis.register_function` is reachable, so the standard library and
redis.call are bound into upvalues by init() at the first call (each global read costs a table
lookup through the library's environment; the bound functions never change while it is loaded).
]]

local VERSION = '2'

-- Namespace defaults (contract/protocol.json "namespace_config"; scripts/check_protocol.py keeps
-- the two equal). A namespace overrides them in baton:v2:{NS}:config (baton_v2_configure).
local DEFAULTS = {
  events_maxlen = 100000, -- events entries kept (approximate, MAXLEN ~); 0 = no events
  done_retention_s = 86400, -- how long a finished id stays a duplicate for enqueue
  dlq_max = 100000, -- dead tasks kept per task type; the oldest are dropped beyond
  dlq_retention_s = 2592000, -- dead tasks older than this are dropped (30 days)
  lease_ms = 30000, -- lease of a delivered task when the worker asks for none
}
-- Allowed range of each setting.
local CONFIG_RANGES = {
  events_maxlen = { 0, 100000000 },
  done_retention_s = { 1, 31536000 },
  dlq_max = { 1, 100000000 },
  dlq_retention_s = { 1, 315360000 },
  lease_ms = { 1000, 86400000 },
}
local CONFIG_FIELDS = { 'events_maxlen', 'done_retention_s', 'dlq_max', 'dlq_retention_s',
  'lease_ms' }

local WAKEUP_CHANNEL = 'baton:v2:wakeup'
local TYPES_CHANNEL = 'baton:v2:types'
local PAYLOAD_MAX_BYTES = 524288
local CHUNK = 512 -- arguments per variadic command (unpack is limited by the Lua C stack)
-- Records in baton:v2:{NS}:tasks past which enqueue makes sure the hash is a hash table: Redis
-- keeps a small hash as a listpack (up to hash-max-listpack-entries, 512 by default), where every
-- HMGET, HSET and HDEL scans the entries, so a backlog of a few hundred tasks would cost every
-- transition thousands of instructions per task.
local TASKS_LISTPACK_MAX = 64
-- A value longer than any hash-max-listpack-value default (64 bytes): writing it converts the hash.
local TASKS_CONVERT_VALUE = 'baton: converts this hash to a hash table (O(1) lookups); never kept'
local TASKS_CHECK_EVERY = 16
-- Calls since the last size check, by tasks key: derived data only, lost with the Lua state (a
-- restart, FUNCTION LOAD), which only makes the next check come sooner.
local size_checks = {}
local size_checks_count = 0
local function remember_size_check(key, due)
  if size_checks[key] == nil then
    if size_checks_count >= 4096 then
      size_checks, size_checks_count = {}, 0
    end
    size_checks_count = size_checks_count + 1
  end
  size_checks[key] = due
end
local TRIM_BATCH = 256 -- expired done markers / dead tasks dropped per call at most
local ERRORS_KEPT = 50 -- failures kept per task in errors (the newest; see append_error)

-- A work stream entry has two fields (docs/keyspace.md): 'task' holds
-- 'ID|MAX_RETRY|DELAY_SECONDS|CREATED_AT|EXECUTION_TIMEOUT|ATTEMPT|EXTRA' and 'payload' the
-- payload bytes. Two fields, not one per value: every field is a string converted between Redis
-- and Lua on each XADD and XREADGROUP of the hot path, which costs more than one string.match.
-- ENTRY_TASK_STRICT is the common, valid case; ENTRY_TASK_PARTS splits anything with six '|'.
local ENTRY_TASK_STRICT = '^([^|]+)|(%d+)|(%d+)|(%d+)|(%d*)|(%d+)|(.*)$'
local ENTRY_TASK_PARTS = '^([^|]*)|([^|]*)|([^|]*)|([^|]*)|([^|]*)|([^|]*)|(.*)$'
local ENTRY_TASK_FORMAT = 'ID|MAX_RETRY|DELAY_SECONDS|CREATED_AT|EXECUTION_TIMEOUT|ATTEMPT|EXTRA'

-- '0'..'99' -> number: the hot path checks small integer fields with one table lookup.
-- NEXT_TEXT: '0'..'98' -> the next integer as text ('0' -> '1'). Attempts stay text on the hot
-- path: a Lua number turned into a string goes through sprintf('%.14g'), which costs more than the
-- table lookup by far.
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
local NAME_RULE = 'must match ^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$'
-- The namespace part of a key: a namespace, or partition P (1..MAX_PARTITION) of one as NS:P
-- (docs/cluster.md, "Partitions"); partition 0 is NS itself.
local NS_RULE = NAME_RULE .. ', optionally followed by :P (a partition, 1..1023, no leading 0)'
local MAX_PARTITION = 1023

local call, pcall_redis, find, sub, match, byte, fmt, floor, unpack_, tonumber_, type_, encode,
  decode, concat

-- The events context of the running call once it has emitted an event (see emit), else nil.
local event_ctx = nil

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
  concat = table.concat
end

-- Raises an error reply; register() turns it into the function's reply.
local function raise(code, message)
  error(code .. ' ' .. message, 0)
end

local function invalid(field, rule)
  raise('BATON_INVALID', field .. ': ' .. rule)
end

-- Integer as decimal text (Lua's own tostring switches to exponent notation past 14 digits).
local function int_text(n)
  return fmt('%d', n)
end

-- Writes the events a call collected: one entry per (from, to, worker) group, ids and attempts
-- space-separated in the order they happened; a failure (with its error) is an entry of its own.
-- Each XADD trims the stream to about events_maxlen (MAXLEN ~: whole nodes only, cheap).
local function flush_events(ctx)
  local groups = ctx.event_groups
  local events, maxlen = ctx.keys.events, ctx.config.events_maxlen
  for g = 1, #groups do
    local e = groups[g]
    if #e.ids > 0 then
      call('XADD', events, 'MAXLEN', '~', maxlen, '*', 'type', e.type, 'from', e.from, 'to',
        e.to, 'worker', e.worker, 'ids', concat(e.ids, ' '), 'attempts', concat(e.attempts, ' '),
        'error', e.error)
    end
  end
end

-- Wraps a transition: binds the helpers, writes the collected events, and returns raised error
-- replies (and Redis' own errors, e.g. OOM) as the reply without the script-location suffix.
local function register(name, body, flags)
  local wrapped = function(keys, args)
    if call == nil then
      init()
    end
    event_ctx = nil
    local ok, result = pcall(body, keys, args)
    if ok and event_ctx then
      flush_events(event_ctx)
    end
    event_ctx = nil
    if ok then
      return result
    end
    -- Raised errors reach here as text (Redis turns an error table into its message). Returned
    -- as an error reply, they keep their own first word as the code (BATON_INVALID, OOM,
    -- READONLY, ...) and get no script-location suffix.
    if type(result) == 'table' then
      result = result.err or tostring(result)
    end
    return redis.error_reply(tostring(result))
  end
  redis.register_function({ function_name = name, callback = wrapped, flags = flags })
end

-- Server time in Unix ms. Call once per invocation.
local function now_ms()
  local t = call('TIME')
  return tonumber_(t[1]) * 1000 + floor(tonumber_(t[2]) / 1000)
end

-- ctx.now, read from the server at the first use (a call that never needs the clock, e.g. an
-- enqueue of immediate new tasks, skips TIME).
local function ctx_now(ctx)
  local now = ctx.now
  if now == nil then
    now = now_ms()
    ctx.now = now
  end
  return now
end

---------------------------------------------------------------------------------------------------
-- Argument checks (raise BATON_INVALID naming the field and the rule)

local function is_uint(v)
  return v ~= nil and #v > 0 and #v <= 15 and find(v, '^%d+$') ~= nil
end

local function range_rule(lo, hi)
  if hi then
    return 'must be an integer ' .. int_text(lo) .. '..' .. int_text(hi)
  end
  return 'must be an integer >= ' .. int_text(lo)
end

-- Non-negative integer argument in [lo, hi] (hi optional).
local function int_arg(v, field, lo, hi)
  if not is_uint(v) then
    invalid(field, range_rule(lo, hi))
  end
  local n = tonumber_(v)
  if n < lo or (hi and n > hi) then
    invalid(field, range_rule(lo, hi))
  end
  return n
end

local function is_task_id(id)
  return #id <= 128 and find(id, ID_PATTERN) ~= nil
end

local function is_name(name)
  return #name <= 64 and find(name, '^[A-Za-z0-9][A-Za-z0-9_.%-]*$') ~= nil
end

-- A namespace, or a partition NS:P of one (NS_RULE).
local function is_key_namespace(ns)
  if is_name(ns) then
    return true
  end
  local base, p = match(ns, '^([^:]+):([1-9]%d?%d?%d?)$')
  return base ~= nil and is_name(base) and tonumber_(p) <= MAX_PARTITION
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
  -- 'nan' converts too (strtod) and compares false with everything: test for the range itself
  if j == nil or not (j >= 0 and j < 1) then
    invalid(field, 'must be a number in [0, 1)')
  end
  return j
end

-- A lease_ms argument: 1000..86400000 ms, or '0' for the namespace's setting (returned as 0).
local function lease_arg(v)
  if v == '0' then
    return 0
  end
  return int_arg(v, 'lease_ms', 1000, 86400000)
end

-- Redis reads each part of a stream id as an unsigned 64-bit integer (leading zeros allowed):
-- a larger part would make the stream command fail after the call may have written.
local U64_MAX = '18446744073709551615'
local function is_u64(digits)
  digits = match(digits, '^0*(%d*)$')
  return #digits < #U64_MAX or (#digits == #U64_MAX and digits <= U64_MAX)
end

local function is_stream_id(v)
  local ms, seq = match(v, '^(%d+)%-(%d+)$')
  return ms ~= nil and is_u64(ms) and is_u64(seq)
end

local function stream_id_arg(v, field)
  if v == nil or not is_stream_id(v) then
    invalid(field, 'must be a stream id like 1722489600123-0 (two integers 0..' .. U64_MAX .. ')')
  end
  return v
end

-- The exact argument count a function takes (fixed part + per-item values).
local function argc(args, expected, what)
  if #args ~= expected then
    invalid('ARGV', 'expected ' .. what .. ' = ' .. expected .. ' values, got ' .. #args)
  end
end

---------------------------------------------------------------------------------------------------
-- Keys: every key of a call is checked against the namespace (and type) of KEYS[1].

-- Key kinds that carry the task type (baton:v2:{NS}:<kind>:TYPE); the others are
-- baton:v2:{NS}:<kind>.
local TYPED = { stream = true, scheduled = true, dead = true, leases = true, rescue = true }

-- Bound keys of earlier calls: spec -> KEYS[1] -> the table bind_keys returned, so that a call on
-- keys seen before only compares its KEYS with them (Lua strings are interned: each compare is a
-- pointer compare). Derived data only; emptied when it grows past BOUND_KEYS_MAX entries.
local BOUND_KEYS_MAX = 4096
local bound_keys = {}
local bound_keys_count = 0

-- keys: KEYS; spec: the kinds in KEYS order, spec[1] typed (its TYPE is the call's type) or not.
-- Returns a table kind -> key name, with .ns, .type (nil for an untyped first key) and .prefix
-- (shared between calls: read it, never change it). Raises BATON_INVALID KEYS[i] for a key that
-- is not the expected one, and KEYS when there are too few keys (or, with `exact`, another number
-- than the spec's).
local function bind_keys(keys, spec, exact)
  if exact and #keys ~= #spec then
    invalid('KEYS', 'expected ' .. #spec .. ' keys (' .. concat(spec, ', ') .. '), got ' .. #keys)
  end
  if #keys < #spec then
    invalid('KEYS', 'expected at least ' .. #spec .. ' keys (' .. concat(spec, ', ') .. '), got ' ..
      #keys)
  end
  local first = keys[1]
  local by_first = bound_keys[spec]
  local known = by_first and by_first[first]
  if known then
    for i = 2, #spec do
      if keys[i] ~= known[spec[i]] then
        invalid('KEYS[' .. i .. ']', 'must be ' .. known[spec[i]])
      end
    end
    return known
  end
  local ns, task_type
  if TYPED[spec[1]] then
    ns, task_type = match(first, '^baton:v2:{([^}]*)}:' .. spec[1] .. ':(.+)$')
    if ns == nil or not is_key_namespace(ns) or not is_name(task_type) then
      invalid('KEYS[1]', 'must be baton:v2:{NS}:' .. spec[1] .. ':TYPE with TYPE that ' ..
        NAME_RULE .. ' and NS that ' .. NS_RULE)
    end
  else
    ns = match(first, '^baton:v2:{([^}]*)}:' .. spec[1] .. '$')
    if ns == nil or not is_key_namespace(ns) then
      invalid('KEYS[1]', 'must be baton:v2:{NS}:' .. spec[1] .. ' with NS that ' .. NS_RULE)
    end
  end
  local prefix = 'baton:v2:{' .. ns .. '}:'
  local k = { ns = ns, type = task_type, prefix = prefix }
  for i = 1, #spec do
    local kind = spec[i]
    local want
    if TYPED[kind] then
      want = prefix .. kind .. ':' .. task_type
    else
      want = prefix .. kind
    end
    if keys[i] ~= want then
      invalid('KEYS[' .. i .. ']', 'must be ' .. want)
    end
    k[kind] = want
  end
  if bound_keys_count >= BOUND_KEYS_MAX then
    bound_keys, bound_keys_count = {}, 0
  end
  if bound_keys[spec] == nil then
    bound_keys[spec] = {}
  end
  bound_keys[spec][first] = k
  bound_keys_count = bound_keys_count + 1
  return k
end

-- The unique-key lock of a unique key (enqueue passes them after the fixed keys).
local function unique_key_name(k, unique_key)
  return k.prefix .. 'unique:' .. unique_key
end

---------------------------------------------------------------------------------------------------
-- Namespace settings (baton:v2:{NS}:config)

-- Settings parsed by earlier calls: config key -> the raw values and what they gave. Every call
-- still reads the hash (a hand edit counts at once) but parses only values it has not seen.
local parsed_config = {}
local parsed_config_count = 0

-- Reads the settings once per call. A missing or out-of-range value (e.g. written by hand) falls
-- back to the default. Values stay text where they are passed on to Redis. The table returned is
-- shared between calls: read it, never change it.
local function read_config(config_key)
  -- HGETALL, not HMGET of the five names: an unconfigured namespace (the usual case) is one
  -- argument and an empty reply, and every argument and reply value crosses into Lua at a cost.
  local raw = call('HGETALL', config_key)
  local seen = parsed_config[config_key]
  if seen and #seen.raw == #raw then
    local same = true
    for i = 1, #raw do
      if raw[i] ~= seen.raw[i] then
        same = false
        break
      end
    end
    if same then
      return seen.config
    end
  end
  local v = {}
  for i = 1, #raw - 1, 2 do
    v[raw[i]] = raw[i + 1]
  end
  local c = {}
  for i = 1, #CONFIG_FIELDS do
    local f = CONFIG_FIELDS[i]
    local n = v[f] and is_uint(v[f]) and tonumber_(v[f]) or nil
    local r = CONFIG_RANGES[f]
    if n == nil or n < r[1] or n > r[2] then
      n = DEFAULTS[f]
    end
    c[f] = n
  end
  c.events_maxlen = int_text(c.events_maxlen)
  c.with_events = c.events_maxlen ~= '0'
  if seen == nil then
    if parsed_config_count >= BOUND_KEYS_MAX then
      parsed_config, parsed_config_count = {}, 0
    end
    parsed_config_count = parsed_config_count + 1
  end
  parsed_config[config_key] = { raw = raw, config = c }
  return c
end

-- Common call context: keys, settings and the clock.
local function new_ctx(k)
  return { keys = k, type = k.type, config = read_config(k.config), event_groups = {},
    event_index = {} }
end

---------------------------------------------------------------------------------------------------
-- Leases (baton:v2:{NS}:leases:TYPE: a HASH consumer -> lease_ms)
--
-- A delivered task's lease ends at its delivery time in the consumer group's pending entries list
-- (set by XREADGROUP, reset by baton_v2_extend's XCLAIM) plus the lease length its consumer asked
-- for in its last baton_v2_dequeue / baton_v2_extend. Nothing is written per task: the PEL
-- already holds the delivery time.

-- Records the lease length of `consumer` when it changed (one HGET per call otherwise).
local function set_consumer_lease(k, consumer, lease_text)
  if call('HGET', k.leases, consumer) ~= lease_text then
    call('HSET', k.leases, consumer, lease_text)
  end
end

-- The lease length (ms) of a consumer from its stored text; `default` when missing or out of
-- range (e.g. written by hand).
local function lease_of(text, default)
  local n = text and is_uint(text) and tonumber_(text) or nil
  if n == nil or n < CONFIG_RANGES.lease_ms[1] or n > CONFIG_RANGES.lease_ms[2] then
    return default
  end
  return n
end

---------------------------------------------------------------------------------------------------
-- Variadic commands over many items, in chunks. Returns the concatenated array replies.

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

-- A command with two leading arguments (e.g. XACK stream group, ZADD key XX) over many items.
local function call_many2(cmd, key, arg, items)
  local n = #items
  for s = 1, n, CHUNK do
    local e = s + CHUNK - 1
    if e > n then
      e = n
    end
    call(cmd, key, arg, unpack_(items, s, e))
  end
end

---------------------------------------------------------------------------------------------------
-- Task record 'STATE|TYPE|ATTEMPT|SID' (baton:v2:{NS}:tasks)

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

local function record_state(rec)
  return match(rec, '^(%a+)|') or 'unknown'
end

---------------------------------------------------------------------------------------------------
-- Final states: baton:v2:{NS}:done (ZSET id -> finished ms, every final state, trimmed by time)
-- and baton:v2:{NS}:ended (HASH id -> 'STATE|TYPE|ATTEMPTS|WORKER' for the final states other
-- than done: cancelled, deleted, dropped). A plain success costs one ZADD member.

-- Marks ids final at `now`. ended_values: flat id, value pairs for the non-done ones (or nil).
local function mark_final(ctx, ids, ended_values)
  local n = #ids
  if n > 0 then
    local now_text = int_text(ctx.now)
    local args, a = {}, 0
    for i = 1, n do
      args[a + 1] = now_text
      args[a + 2] = ids[i]
      a = a + 2
    end
    call_many('ZADD', ctx.keys.done, args)
  end
  if ended_values and #ended_values > 0 then
    call_many('HSET', ctx.keys.ended, ended_values)
  end
end

-- Drops final states older than the retention (at most TRIM_BATCH per call; every call that
-- finishes tasks trims, so the set follows the rate of finishing).
local function trim_final(ctx)
  local cutoff = ctx.now - ctx.config.done_retention_s * 1000
  local old = call('ZRANGE', ctx.keys.done, '-inf', int_text(cutoff), 'BYSCORE', 'LIMIT', 0,
    TRIM_BATCH)
  if #old > 0 then
    call_many('ZREM', ctx.keys.done, old)
    call_many('HDEL', ctx.keys.ended, old)
  end
end

-- The final state of ids that have no live record: a list of state-or-false, by index. A final
-- state older than the retention no longer counts, even before trim_final removed it.
local function final_states(ctx, ids)
  local scores = call_many('ZMSCORE', ctx.keys.done, ids)
  local cutoff = nil -- read the clock only when some id has a final state
  local out, look, l = {}, {}, 0
  for i = 1, #ids do
    if scores[i] and cutoff == nil then
      cutoff = ctx_now(ctx) - ctx.config.done_retention_s * 1000
    end
    if scores[i] and tonumber_(scores[i]) > cutoff then
      l = l + 1
      look[l] = i
      out[i] = 'done'
    else
      out[i] = false
    end
  end
  if l > 0 then
    local names = {}
    for j = 1, l do
      names[j] = ids[look[j]]
    end
    local vals = call_many('HMGET', ctx.keys.ended, names)
    for j = 1, l do
      if vals[j] then
        out[look[j]] = match(vals[j], '^(%a+)|') or 'done'
      end
    end
  end
  return out
end

---------------------------------------------------------------------------------------------------
-- JSON text built by hand (the hot path avoids cjson)

local function json_string(s)
  if find(s, '[%c"\\]') then
    return encode(s)
  end
  return '"' .. s .. '"'
end

---------------------------------------------------------------------------------------------------
-- Bodies (baton:v2:{NS}:bodies): a JSON object of strings, so the payload bytes survive exactly.

-- f: the entry's values by name (any may be missing); f.raw, for a malformed entry, its raw fields
-- by name, kept under "raw" so an operator sees what the foreign writer sent.
local function encode_body(f)
  return encode({
    payload = f.payload or '',
    max_retry = f.max_retry or '',
    delay_seconds = f.delay_seconds or '',
    created_at = f.created_at or '',
    execution_timeout = f.execution_timeout or '',
    extra = f.extra or '',
    raw = f.raw,
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
-- baton_v2_dequeue then sends to the dead-letter queue as malformed (never silently dropped).
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

-- The 'task' field of a work stream entry (f: the values by name, attempt: text).
local function entry_task_text(id, f, attempt)
  return id .. '|' .. f.max_retry .. '|' .. f.delay_seconds .. '|' .. f.created_at .. '|' ..
      f.execution_timeout .. '|' .. attempt .. '|' .. f.extra
end

-- XADD of a work stream entry. Returns the SID.
local function add_entry(stream, id, f, attempt)
  return call('XADD', stream, '*', 'task', entry_task_text(id, f, attempt), 'payload', f.payload)
end

---------------------------------------------------------------------------------------------------
-- Stream entry checks (baton_v2_dequeue, baton_v2_reclaim, baton_v2_fail)

local function fields_by_name(fv)
  local f = {}
  for j = 1, #fv - 1, 2 do
    f[fv[j]] = fv[j + 1]
  end
  return f
end

-- The parts of a 'task' field by name (id, max_retry, delay_seconds, created_at,
-- execution_timeout, attempt, extra), unchecked; nil when it has fewer than six '|'.
local function task_parts(task)
  local id, max_retry, delay, created, timeout, attempt, extra = match(task, ENTRY_TASK_PARTS)
  if id == nil then
    return nil
  end
  return { id = id, max_retry = max_retry, delay_seconds = delay, created_at = created,
    execution_timeout = timeout, attempt = attempt, extra = extra }
end

-- fv: the flat field/value array of an entry. Returns its values by name (id, payload, max_retry,
-- delay_seconds, created_at, execution_timeout, extra, attempt) and nil, or nil and the reason
-- the entry is malformed. The id is not checked here: an entry is only delivered when a task
-- record points at it, and baton_v2_enqueue never writes a record for an invalid id.
local function parse_entry(fv)
  local task, payload
  if #fv == 4 and fv[1] == 'task' and fv[3] == 'payload' then
    task, payload = fv[2], fv[4]
  else
    local byname = fields_by_name(fv)
    task, payload = byname.task, byname.payload
    if task == nil then
      return nil, 'missing field task'
    end
    if payload == nil then
      return nil, 'missing field payload'
    end
  end
  local e = task_parts(task)
  if e == nil then
    return nil, 'field task is not ' .. ENTRY_TASK_FORMAT
  end
  if not is_uint(e.max_retry) then
    return nil, 'max_retry is not an integer'
  end
  if not is_uint(e.delay_seconds) then
    return nil, 'delay_seconds is not an integer'
  end
  if not is_uint(e.created_at) then
    return nil, 'created_at is not an integer'
  end
  if e.execution_timeout ~= '' and not is_uint(e.execution_timeout) then
    return nil, 'execution_timeout is not an integer'
  end
  if not is_uint(e.attempt) or #e.attempt > 9 then
    return nil, 'attempt is not an integer'
  end
  e.payload = payload
  return e, nil
end

-- Why an entry that passed parse_entry but has no task record is malformed.
local function no_record_reason(id)
  if not is_task_id(id) then
    return 'id is not a valid task id'
  end
  return 'no task record for id ' .. id
end

-- The values of a malformed entry that can be kept in its dead-letter body: the known ones from
-- its task field when it splits, else none; every raw field is kept too (see encode_body).
local function malformed_fields(fv)
  local raw = fields_by_name(fv)
  local f = raw.task and task_parts(raw.task) or {}
  f.payload = raw.payload
  f.raw = raw
  return f
end

-- The entry's own id when it is a valid task id, else nil.
local function raw_entry_id(fv)
  for j = 1, #fv - 1, 2 do
    if fv[j] == 'task' then
      local id = match(fv[j + 1], '^([^|]*)|')
      if id and is_task_id(id) then
        return id
      end
      return nil
    end
  end
  return nil
end

---------------------------------------------------------------------------------------------------
-- Events (baton:v2:{NS}:events), skipped when the namespace's events_maxlen is 0

-- Records that task `id` went from `from` to `to` in its attempt `attempt` (text). Tasks of one
-- call with the same (from, to, worker) share one events entry; a failure (err ~= '') gets its
-- own entry, since it carries its error.
local function emit(ctx, id, from, to, attempt, worker, err)
  if not ctx.config.with_events then
    return
  end
  event_ctx = ctx
  local groups = ctx.event_groups
  if err ~= '' then
    groups[#groups + 1] = { type = ctx.type, from = from, to = to, worker = worker, ids = { id },
      attempts = { attempt }, error = err }
    return
  end
  local key = from .. '>' .. to .. '>' .. worker
  local g = ctx.event_index[key]
  if g == nil then
    g = { type = ctx.type, from = from, to = to, worker = worker, ids = {}, attempts = {},
      error = '' }
    groups[#groups + 1] = g
    ctx.event_index[key] = g
  end
  local n = #g.ids + 1
  g.ids[n] = id
  g.attempts[n] = attempt
end

-- Opens the events entry of a batch (the hot paths' emit()) at this point of the call's events:
-- the caller appends to its ids and attempts lists. false when the namespace keeps no events.
local function open_batch(ctx, from, to, worker)
  if not ctx.config.with_events then
    return false
  end
  event_ctx = ctx
  local g = { type = ctx.type, from = from, to = to, worker = worker, ids = {}, attempts = {},
    error = '' }
  local groups = ctx.event_groups
  groups[#groups + 1] = g
  return g
end

-- Adds one task to a batch entry (nil: not opened yet, it opens here); returns the batch.
local function add_to_batch(ctx, batch, from, to, worker, id, attempt)
  if batch == nil then
    batch = open_batch(ctx, from, to, worker)
  end
  if batch then
    local n = #batch.ids + 1
    batch.ids[n] = id
    batch.attempts[n] = attempt
  end
  return batch
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

-- Due time of the earliest member of a sorted set, or nil when it is empty.
local function earliest_score(zset)
  local first = call('ZRANGE', zset, 0, 0, 'WITHSCORES')
  if first[2] then
    return tonumber_(first[2])
  end
  return nil
end

-- Publishes 'NS|TYPE|due_ms' on baton:v2:wakeup when `due` is earlier than `old_earliest` (the
-- earliest due time before the call added anything; nil when the set was empty).
local function wake_if_earlier(ctx, due, old_earliest)
  if due and (old_earliest == nil or due < old_earliest) then
    call('PUBLISH', WAKEUP_CHANNEL, ctx.keys.ns .. '|' .. ctx.type .. '|' .. int_text(due))
  end
end

-- Registers the call's task type in baton:v2:{NS}:types; a type new to its namespace is announced
-- on baton:v2:types ('NS|TYPE'), so batond serves it without a restart or a registration step.
local function register_type(ctx)
  if call('SADD', ctx.keys.types, ctx.type) == 1 then
    call('PUBLISH', TYPES_CHANNEL, ctx.keys.ns .. '|' .. ctx.type)
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
-- Error history (baton:v2:{NS}:errors, docs/keyspace.md): one field per failure, so recording one
-- reads and rewrites nothing that exists. Field ID holds N, the sequence number of the task's
-- newest recorded failure; field ID|K the JSON object of failure K (1..N). Only the newest
-- ERRORS_KEPT are kept: ID|max(1, N-ERRORS_KEPT+1) .. ID|N. Ids never contain '|', so ID|K never
-- meets another task's field. The count goes on across dlq_replay (the history stays).

local function append_error(ctx, id, attempt, kind, message, stack, worker)
  local e = '{"attempt":' .. attempt .. ',"kind":' .. json_string(kind) .. ',"error":' ..
      json_string(message) .. ',"stack":' .. json_string(stack) .. ',"worker":' ..
      json_string(worker) .. ',"at_ms":' .. int_text(ctx.now) .. '}'
  local errors = ctx.keys.errors
  local n = pcall_redis('HINCRBY', errors, id, 1)
  if type_(n) ~= 'number' then
    -- the counter is not an integer (written by hand): the history starts again
    n = 1
    call('HSET', errors, id, '1')
  end
  call('HSET', errors, id .. '|' .. int_text(n), e)
  if n > ERRORS_KEPT then
    call('HDEL', errors, id .. '|' .. int_text(n - ERRORS_KEPT))
  end
end

-- Removes the whole error history of ids: their counters (one HMGET), then one HDEL (in chunks of
-- CHUNK arguments) of each ID and every ID|K still kept.
local function delete_errors(errors, ids)
  local counts = call_many('HMGET', errors, ids)
  local fields, f = {}, 0
  for i = 1, #ids do
    local c = counts[i]
    if c then
      local id = ids[i]
      f = f + 1
      fields[f] = id
      if is_uint(c) then
        local n = tonumber_(c)
        local first = n - ERRORS_KEPT + 1
        if first < 1 then
          first = 1
        end
        for j = first, n do
          f = f + 1
          fields[f] = id .. '|' .. int_text(j)
        end
      end
    end
  end
  call_many('HDEL', errors, fields)
end

---------------------------------------------------------------------------------------------------
-- The dead-letter queue's caps (dlq_max per type, dlq_retention_s): run after a task died.

-- Drops the given dead ids for good: final state 'dropped', event dead -> dropped.
local function drop_dead(ctx, ids, reason)
  if #ids == 0 then
    return
  end
  local records = call_many('HMGET', ctx.keys.tasks, ids)
  local ended, e = {}, 0
  for i = 1, #ids do
    local _, rtype, attempt = nil, ctx.type, 0
    if records[i] then
      local s, t, a = parse_record(records[i])
      if s then
        rtype, attempt = t, a
      end
    end
    ended[e + 1] = ids[i]
    ended[e + 2] = 'dropped|' .. rtype .. '|' .. attempt .. '|'
    e = e + 2
    emit(ctx, ids[i], 'dead', 'dropped', int_text(attempt), '', '')
  end
  call_many('ZREM', ctx.keys.dead, ids)
  call_many('HDEL', ctx.keys.tasks, ids)
  call_many('HDEL', ctx.keys.bodies, ids)
  delete_errors(ctx.keys.errors, ids)
  mark_final(ctx, ids, ended)
  if ctx.config.with_events then
    -- the reason rides on the group's entry: one entry per reason and call
    local g = ctx.event_index['dead>dropped>']
    if g then
      g.error = reason
    end
  end
end

local function cap_dead(ctx)
  local cutoff = ctx.now - ctx.config.dlq_retention_s * 1000
  drop_dead(ctx, call('ZRANGE', ctx.keys.dead, '-inf', int_text(cutoff), 'BYSCORE', 'LIMIT', 0,
    TRIM_BATCH), 'dead-letter retention of ' .. ctx.config.dlq_retention_s .. ' s passed')
  local over = call('ZCARD', ctx.keys.dead) - ctx.config.dlq_max
  if over > 0 then
    if over > TRIM_BATCH then
      over = TRIM_BATCH
    end
    drop_dead(ctx, call('ZRANGE', ctx.keys.dead, 0, over - 1),
      'dead-letter queue over its cap of ' .. ctx.config.dlq_max .. ' tasks')
  end
end

---------------------------------------------------------------------------------------------------
-- Failing one delivered entry (baton_v2_fail, baton_v2_reclaim, the malformed paths)

-- ctx.keys: stream, scheduled, dead, tasks, bodies, errors, ...; ctx.now set.
-- groups: the consumer groups to ack the entry in. f: the entry's values by name (any may be
-- missing). attempt: the number of the failed attempt. The entry leaves the stream and the PEL
-- (which ends its lease); the body goes to bodies, the error to errors; the task goes to retry
-- (scheduled set, due after the backoff) or dead (dead-letter queue).
-- Returns 'retry' or 'dead', the due / death time in ms, and the attempt.
local function fail_entry(ctx, id, sid, groups, f, attempt, kind, message, stack, worker,
                          event_worker, from, base, max, jitter)
  local k = ctx.keys
  if sid ~= '' then
    for g = 1, #groups do
      call('XACK', k.stream, groups[g], sid)
    end
    call('XDEL', k.stream, sid)
  end
  call('HSET', k.bodies, id, encode_body(f))
  append_error(ctx, id, attempt, kind, message, stack, worker)
  local retry = false
  if kind ~= 'non_retryable' and kind ~= 'malformed' and is_uint(f.max_retry) then
    retry = attempt < 1 + tonumber_(f.max_retry)
  end
  local attempt_text = int_text(attempt)
  if retry then
    local due = ctx.now + backoff_ms(attempt, base, max, jitter)
    call('ZADD', k.scheduled, due, id)
    call('HSET', k.tasks, id, make_record('retry', ctx.type, attempt_text, ''))
    emit(ctx, id, from, 'retry', attempt_text, event_worker, message)
    return 'retry', due, attempt
  end
  call('ZADD', k.dead, ctx.now, id)
  call('HSET', k.tasks, id, make_record('dead', ctx.type, attempt_text, ''))
  emit(ctx, id, from, 'dead', attempt_text, event_worker, message)
  ctx.died = true
  return 'dead', ctx.now, attempt
end

-- Sends a malformed stream entry to the dead-letter queue (baton_v2_dequeue, baton_v2_reclaim).
-- rec: the task record of the entry's id (or false). The task id is the entry's id when valid and
-- not owned by another live copy, else 'malformed-SID'. Returns the id used.
local function bury_malformed(ctx, sid, groups, fv, rec, reason, worker, event_worker)
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
  local f = malformed_fields(fv)
  local attempt = 1
  if is_uint(f.attempt) and #f.attempt <= 9 then
    attempt = tonumber_(f.attempt) + 1
  end
  fail_entry(ctx, id, sid, groups, f, attempt, 'malformed', reason, '', worker, event_worker,
    'queued', 0, 0, 0)
  return id
end

-- Drops a stale copy: an entry whose task record points at another SID or state.
local function drop_stale(ctx, id, sid, groups, attempt, worker)
  for g = 1, #groups do
    call('XACK', ctx.keys.stream, groups[g], sid)
  end
  call('XDEL', ctx.keys.stream, sid)
  emit(ctx, id, 'queued', 'deleted', attempt, worker, 'stale copy ' .. sid)
end

-- The names of every consumer group of a stream ({} when it has none or does not exist).
local function group_names(stream)
  local groups = pcall_redis('XINFO', 'GROUPS', stream)
  local names = {}
  if type_(groups) == 'table' and not groups.err then
    for g = 1, #groups do
      local info = groups[g]
      for j = 1, #info - 1, 2 do
        if info[j] == 'name' then
          names[#names + 1] = info[j + 1]
        end
      end
    end
  end
  return names
end

-- Removes acked entries (their SIDs checked) from the stream, one XDEL. (XTRIM MINID up to the
-- oldest entry a group still needs was cheaper, but also removed entries a group skipped and never
-- delivered, e.g. those `baton rescue finish --force` leaves behind: they are still queued.)
local function delete_acked(stream, sids)
  call_many('XDEL', stream, sids)
end

-- The consumer holding `sid` in any of `groups` (and that group), or nil.
local function holder_of(stream, groups, sid)
  for g = 1, #groups do
    local p = call('XPENDING', stream, groups[g], sid, sid, 1)
    if p[1] then
      return p[1][2], groups[g]
    end
  end
  return nil
end
