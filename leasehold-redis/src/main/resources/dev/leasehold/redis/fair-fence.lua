-- next_fence: the fence of a new grant, as in acquire.lua: INCR of the counter KEYS[2]; a missing
-- counter (INCR returns 1: first use, or lost in a restart without persistence) starts at the
-- server's TIME in ms x 1000 + 1 instead. Prepended to the fair-mode scripts.
local function next_fence(counter, now)
  local fence = redis.call('INCR', counter)
  if fence == 1 then
    -- built as text: Lua would print a 16-digit number in exponent form
    local seeded = now[1] .. string.format('%03d', math.floor(tonumber(now[2]) / 1000)) .. '001'
    redis.call('SET', counter, seeded)
    fence = tonumber(seeded)
  end
  return fence
end
