-- acquire: grant KEYS[1] to owner ARGV[1] for ARGV[2] ms
--   IF the lease hash is absent (never taken, released, or removed by Redis at its PX expiry)
--     THEN fence := next value of KEYS[2]; lease := {owner, fence} with TTL ARGV[2]  -> granted
--   ELSE IF the lease's owner = ARGV[1]
--     THEN reset the TTL to ARGV[2]; keep the fence                                 -> granted (re-entry)
--   ELSE                                                                            -> busy, with the holder's TTL
--
-- KEYS[2], the fence counter, has no TTL and outlives every lease of the key. When INCR finds it
-- missing (it returns 1: first use, or data lost in a restart without persistence), the fence is
-- the server's TIME in milliseconds x 1000 + 1 instead, so a fence never goes backwards unless one
-- key was granted more than 1000 times per millisecond on average since its counter was created.
--
-- Returns {1, fence, ttl_ms, time_s, time_us} when granted, {0, holder_ttl_ms} when busy.
local owner = redis.call('HGET', KEYS[1], 'owner')
if owner == false then
  local now = redis.call('TIME')
  local fence = redis.call('INCR', KEYS[2])
  if fence == 1 then
    -- built as text: Lua would print a 16-digit number in exponent form
    local seeded = now[1] .. string.format('%03d', math.floor(tonumber(now[2]) / 1000)) .. '001'
    redis.call('SET', KEYS[2], seeded)
    fence = tonumber(seeded)
  end
  redis.call('HSET', KEYS[1], 'owner', ARGV[1], 'fence', string.format('%d', fence))
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return {1, fence, tonumber(ARGV[2]), tonumber(now[1]), tonumber(now[2])}
end
if owner == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  local now = redis.call('TIME')
  return {1, tonumber(redis.call('HGET', KEYS[1], 'fence')), tonumber(ARGV[2]), tonumber(now[1]), tonumber(now[2])}
end
return {0, redis.call('PTTL', KEYS[1])}
