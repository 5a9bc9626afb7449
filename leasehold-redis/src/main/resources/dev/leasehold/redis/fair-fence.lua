-- next_fence: the fence of a new grant, as in acquire.lua: a hybrid logical clock,
-- max(counter + 1, server TIME in microseconds); the counter keeps it with TTL counter_ttl ms.
-- `now` is the script's TIME, read before its first write. Prepended to the fair-mode scripts.
local function next_fence(counter, now, counter_ttl)
  local fence = tonumber(now[1]) * 1000000 + tonumber(now[2])
  local last = tonumber(redis.call('GET', counter))
  if last ~= nil and last + 1 > fence then
    fence = last + 1
  end
  -- %d, not tostring: Lua would print a 16-digit number in exponent form
  local text = string.format('%d', fence)
  redis.call('SET', counter, text, 'PX', counter_ttl)
  return fence, text
end
