-- renew-all: compare-and-PEXPIRE for every lease of a batch (all in one slot)
--   ARGV[1..n] = the owners, ARGV[n+1..2n] = the lease times in ms, for KEYS[1..n]
--   FOR EACH i: IF the lease KEYS[i] exists AND its owner = ARGV[i]
--                 THEN reset its TTL to ARGV[n+i] ms, answer its fence
--               ELSE change nothing, answer -1 (expired, released, or held by another owner)
--   -> {time_s, time_us, answer_1, ..., answer_n}
local n = #KEYS
local now = redis.call('TIME')
local reply = {tonumber(now[1]), tonumber(now[2])}
for i = 1, n do
  local lease = redis.call('HMGET', KEYS[i], 'owner', 'fence')
  if lease[1] == ARGV[i] then
    redis.call('PEXPIRE', KEYS[i], ARGV[n + i])
    reply[i + 2] = tonumber(lease[2])
  else
    reply[i + 2] = -1
  end
end
return reply
