-- inspect: read the lease KEYS[1] in one step
--   IF it exists -> {owner, fence, ttl_ms, time_s, time_us}
--   ELSE         -> {}
local lease = redis.call('HMGET', KEYS[1], 'owner', 'fence')
if lease[1] == false then
  return {}
end
local now = redis.call('TIME')
return {lease[1], tonumber(lease[2]), redis.call('PTTL', KEYS[1]), tonumber(now[1]), tonumber(now[2])}
