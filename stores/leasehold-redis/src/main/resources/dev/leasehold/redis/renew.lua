-- renew: compare-and-PEXPIRE
--   IF the lease KEYS[1] exists AND its owner = ARGV[1]
--     THEN reset its TTL to ARGV[2] ms   -> {fence, ttl_ms, time_s, time_us}
--   ELSE change nothing                  -> {} (expired, released, or held by another owner)
if redis.call('HGET', KEYS[1], 'owner') == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  local now = redis.call('TIME')
  return {tonumber(redis.call('HGET', KEYS[1], 'fence')), tonumber(ARGV[2]), tonumber(now[1]), tonumber(now[2])}
end
return {}
