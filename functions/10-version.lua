
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
