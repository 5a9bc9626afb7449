-- acquire: grant KEYS[1] to owner ARGV[1] for ARGV[2] ms; KEYS[2] is the key's fence counter, kept ARGV[3] ms
--   IF the lease hash is absent (never taken, released, or removed by Redis at its PX expiry)
--     THEN fence := max(counter + 1, server TIME in microseconds)
--          counter := fence, with TTL ARGV[3]; lease := {owner, fence} with TTL ARGV[2]  -> granted (new)
--   ELSE IF the lease's owner = ARGV[1]
--     THEN reset the TTL to ARGV[2]; keep the fence                                  -> granted (re-entry)
--   ELSE                                                                             -> busy, with the holder's TTL
--
-- The fence is a hybrid logical clock. The counter orders grants within one microsecond; the
-- floor, the server's clock, is above every fence handed out before whenever the counter came back
-- older or not at all: a restart from an older RDB snapshot, an AOF that lost its last second, a
-- replica promoted before it received the last grants, the counter's own TTL. That holds as long as
-- the server's clock (of every server that may be promoted) does not go back, and because one
-- script takes longer than a microsecond, the counter never runs ahead of the clock for long.
-- TIME is read before the first write: Redis >= 5 replicates the script's effects, not the script.
-- Fences are exact up to 2^53 microseconds after 1970 (the year 2255): Lua numbers are doubles.
--
-- Returns {1, fence, ttl_ms, time_s, time_us, new (1) or re-entry (0)} when granted,
--         {0, holder_ttl_ms} when busy.
local owner = redis.call('HGET', KEYS[1], 'owner')
if owner == false then
  local now = redis.call('TIME')
  local fence = tonumber(now[1]) * 1000000 + tonumber(now[2])
  local counter = tonumber(redis.call('GET', KEYS[2]))
  if counter ~= nil and counter + 1 > fence then
    fence = counter + 1
  end
  -- %d, not tostring: Lua would print a 16-digit number in exponent form
  local text = string.format('%d', fence)
  redis.call('SET', KEYS[2], text, 'PX', ARGV[3])
  redis.call('HSET', KEYS[1], 'owner', ARGV[1], 'fence', text)
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return {1, fence, tonumber(ARGV[2]), tonumber(now[1]), tonumber(now[2]), 1}
end
if owner == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  local now = redis.call('TIME')
  return {1, tonumber(redis.call('HGET', KEYS[1], 'fence')), tonumber(ARGV[2]), tonumber(now[1]), tonumber(now[2]), 0}
end
return {0, redis.call('PTTL', KEYS[1])}
