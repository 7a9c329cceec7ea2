
--[[
baton_v2_version (read-only): the version of this functions library.
  KEYS: none.
  ARGV: none.
  Returns: bulk string, the library version ("2", contract/protocol.json).
  Errors: none. Events: none.
Clients call FCALL_RO baton_v2_version 0 on every (re)connect and refuse to run on a mismatch.
]]
register('baton_v2_version', function(keys, args)
  return VERSION
end, { 'no-writes' })

--[[
baton_v2_configure: reads and changes the settings of one namespace.
  KEYS[1]  baton:v2:{NS}:config
  ARGV     pairs: setting, value ("" = back to the default). No pairs: read only.
  Settings: events_maxlen (0..100000000; 0 = no events), done_retention_s (1..31536000),
    dlq_max (1..100000000, per task type), dlq_retention_s (1..315360000), lease_ms
    (1000..86400000, the lease of a task whose worker asks for none).
  Returns: flat array setting, effective value (integer) for every setting, in the order above.
  Errors: BATON_INVALID <setting>: <rule> (nothing written).
  Events: none.
]]
register('baton_v2_configure', function(keys, args)
  local k = bind_keys(keys, { 'config' }, true)
  if #args % 2 ~= 0 then
    invalid('ARGV', 'expected setting, value pairs, got ' .. #args .. ' values')
  end
  local sets, dels = {}, {}
  for i = 1, #args, 2 do
    local field, value = args[i], args[i + 1]
    local r = CONFIG_RANGES[field]
    if r == nil then
      -- the name as sent, quoted when it holds a control character (a NUL would end the reply)
      invalid(find(field, '%c') and json_string(field) or field,
        'is not a setting (' .. concat(CONFIG_FIELDS, ', ') .. ')')
    end
    if value == '' then
      dels[#dels + 1] = field
    else
      int_arg(value, field, r[1], r[2])
      sets[#sets + 1] = field
      sets[#sets + 1] = value
    end
  end
  if #sets > 0 then
    call('HSET', k.config, unpack_(sets))
  end
  if #dels > 0 then
    call('HDEL', k.config, unpack_(dels))
  end
  local c = read_config(k.config)
  local out = {}
  for i = 1, #CONFIG_FIELDS do
    out[2 * i - 1] = CONFIG_FIELDS[i]
    out[2 * i] = tonumber_(c[CONFIG_FIELDS[i]])
  end
  return out
end)

--[[
baton_v2_cron_mark: moves a cron job's "last tick handled" forward, never backwards (a
compare-and-set that any number of batond instances may race on).
  KEYS[1]  baton:cron:state
  ARGV[1]  job name (non-empty)
  ARGV[2]  tick (Unix seconds, integer >= 0)
  Returns: 1 when the state moved to tick, 0 when it already was at or past it.
  Errors: BATON_INVALID <field>: <rule>.
  Events: none.
]]
register('baton_v2_cron_mark', function(keys, args)
  if keys[1] ~= 'baton:cron:state' or #keys ~= 1 then
    invalid('KEYS[1]', 'must be baton:cron:state')
  end
  argc(args, 2, 'job, tick')
  nonempty_arg(args[1], 'job')
  local tick = int_arg(args[2], 'tick', 0)
  local cur = tonumber_(call('HGET', keys[1], args[1]))
  if cur == nil or cur < tick then
    call('HSET', keys[1], args[1], args[2])
    return 1
  end
  return 0
end)
