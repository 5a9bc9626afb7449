-- acquire-all: grant every lease of a batch to owner ARGV[1] for ARGV[2] ms, or none of them.
-- Lease i is KEYS[2i-1], its fence counter KEYS[2i] (kept ARGV[3] ms); on a cluster every key of
-- the batch is in one slot (the caller groups them).
--   IF some lease is held by another owner -> {0, i, holder_ttl_ms} for the first such i; nothing is changed
--   ELSE each lease as acquire.lua grants one:
--     absent:           fence := max(counter + 1, server TIME in microseconds); counter := fence, with TTL
--                       ARGV[3]; lease := {owner, fence} with TTL ARGV[2]                        (new, 1)
--     held by ARGV[1]:  reset the TTL to ARGV[2]; keep the fence                               (re-entry, 0)
--                                          -> {1, time_s, time_us, fence_1, new_1, ..., fence_n, new_n}
-- Fences are the hybrid logical clock of acquire.lua; TIME is read before the first write.
local owners = {}
for i = 1, #KEYS / 2 do
  local owner = redis.call('HGET', KEYS[2 * i - 1], 'owner')
  if owner ~= false and owner ~= ARGV[1] then
    return {0, i, redis.call('PTTL', KEYS[2 * i - 1])}
  end
  owners[i] = owner
end
local now = redis.call('TIME')
local floor = tonumber(now[1]) * 1000000 + tonumber(now[2])
local reply = {1, tonumber(now[1]), tonumber(now[2])}
for i = 1, #KEYS / 2 do
  local lease = KEYS[2 * i - 1]
  if owners[i] == false then
    local fence = floor
    local counter = tonumber(redis.call('GET', KEYS[2 * i]))
    if counter ~= nil and counter + 1 > fence then
      fence = counter + 1
    end
    -- %d, not tostring: Lua would print a 16-digit number in exponent form
    local text = string.format('%d', fence)
    redis.call('SET', KEYS[2 * i], text, 'PX', ARGV[3])
    redis.call('HSET', lease, 'owner', ARGV[1], 'fence', text)
    redis.call('PEXPIRE', lease, ARGV[2])
    reply[#reply + 1] = fence
    reply[#reply + 1] = 1
  else
    redis.call('PEXPIRE', lease, ARGV[2])
    reply[#reply + 1] = tonumber(redis.call('HGET', lease, 'fence'))
    reply[#reply + 1] = 0
  end
end
return reply
