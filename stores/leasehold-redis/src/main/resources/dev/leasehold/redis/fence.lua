-- The fence of a new grant: a hybrid logical clock, max(counter + 1, floor), where the floor is the
-- server's TIME in microseconds. Prepended to every script that grants.
--
-- The counter orders grants within one microsecond; the floor, the server's clock, is above every
-- fence handed out before whenever the counter came back older or not at all: a restart from an
-- older RDB snapshot, an AOF that lost its last second, a replica promoted before it received the
-- last grants, the counter's own expiry. That holds as long as the server's clock (of every server
-- that may be promoted) does not go back, and because one script takes longer than a microsecond,
-- the counter never runs ahead of the clock for long. TIME is read before the first write: Redis
-- >= 5 replicates the script's effects, not the script. Fences are exact up to 2^53 microseconds
-- after 1970 (the year 2255): Lua numbers are doubles.
--
-- The counter's expiry: it is kept for the retention (counter_ttl ms) plus its lead over the clock
-- (fence - clock, rounded up to ms), so it expires only once this server's clock has passed the
-- fence by the retention: a grant after that reads a TIME above every fence of the key, and a
-- counter ahead of the clock (the fences of a clock that went back) stays until the clock has
-- caught up. The retention covers the clock difference of a replica that applies the relative TTL
-- (Redis < 7 replicates PX, not an absolute time) and is at least 1 s, above the millisecond
-- rounding.
--
-- fence_above(counter, floor, clock, counter_ttl): fence := max(counter + 1, floor), floor >= clock,
-- the script's TIME in µs; the counter keeps it with TTL counter_ttl ms + the fence's lead over the
-- clock. Returns the fence and its text.
local function fence_above(counter, floor, clock, counter_ttl)
  local fence = floor
  local last = tonumber(redis.call('GET', counter))
  if last ~= nil and last + 1 > fence then
    fence = last + 1
  end
  -- %d, not tostring: Lua would print a 16-digit number in exponent form
  local text = string.format('%d', fence)
  local ttl = tonumber(counter_ttl) + math.ceil((fence - clock) / 1000)
  redis.call('SET', counter, text, 'PX', string.format('%d', ttl))
  return fence, text
end

-- next_fence(counter, now, counter_ttl): fence_above with the floor at `now`, the script's TIME.
local function next_fence(counter, now, counter_ttl)
  local clock = tonumber(now[1]) * 1000000 + tonumber(now[2])
  return fence_above(counter, clock, clock, counter_ttl)
end
