-- acquire-all: grant every lease of a batch to owner ARGV[1] for ARGV[2] ms, or none of them.
-- Lease i is KEYS[4i-3], its fence counter KEYS[4i-2] (kept ARGV[3] ms), its waiter queue
-- KEYS[4i-1] and entries KEYS[4i] (queue.lua); on a cluster every key of the batch is in one slot
-- (the caller groups them).
--   IF some lease is held by another owner, or is free while a live waiter other than ARGV[1] is
--      queued for it (a batch never passes a queued waiter)
--                        -> {0, i, wait_ms} for the first such i (the holder's TTL, or the
--                           remaining place of the waiter); nothing is changed
--   ELSE each lease as acquire.lua grants one:
--     absent:           fence := max(counter + 1, floor); floor := fence + 1; counter := fence, with TTL
--                       ARGV[3]; lease := {owner, fence} with TTL ARGV[2]                        (new, 1)
--     held by ARGV[1]:  reset the TTL to ARGV[2]; keep the fence                               (re-entry, 0)
--                                          -> {1, time_s, time_us, fence_1, new_1, ..., fence_n, new_n}
-- Fences are the hybrid logical clock of acquire.lua: the floor starts at the server's TIME in
-- microseconds, read before the first write. It then passes each new fence, so the new grants of
-- one batch get distinct fences, increasing in the batch's order (a batch of n keys runs about n
-- microseconds ahead of the clock).
-- The queue is only read here (expired entries stay until a single acquire or a release drops
-- them): an expired entry is skipped, the first live one refuses the batch.
local now = false
local function live_waiter(queue, entries, now_ms)
  local at = 0
  while true do
    local waiter = redis.call('ZRANGE', queue, at, at)
    if #waiter == 0 then
      return false, 0
    end
    local entry = redis.call('HGET', entries, waiter[1])
    local expires = entry and tonumber(string.match(entry, '^(%d+)')) or 0
    if expires > now_ms then
      return waiter[1], expires - now_ms
    end
    at = at + 1
  end
end
local owners = {}
local queued = {}
for i = 1, #KEYS / 4 do
  local owner = redis.call('HGET', KEYS[4 * i - 3], 'owner')
  if owner ~= false and owner ~= ARGV[1] then
    return {0, i, redis.call('PTTL', KEYS[4 * i - 3])}
  end
  if owner == false and redis.call('EXISTS', KEYS[4 * i - 1]) == 1 then
    now = now or redis.call('TIME')
    local waiter, left =
      live_waiter(KEYS[4 * i - 1], KEYS[4 * i], tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000))
    if waiter ~= false and waiter ~= ARGV[1] then
      return {0, i, left}
    end
    queued[i] = true
  end
  owners[i] = owner
end
now = now or redis.call('TIME')
local floor = tonumber(now[1]) * 1000000 + tonumber(now[2])
local reply = {1, tonumber(now[1]), tonumber(now[2])}
for i = 1, #KEYS / 4 do
  local lease = KEYS[4 * i - 3]
  if owners[i] == false then
    local fence = floor
    local counter = tonumber(redis.call('GET', KEYS[4 * i - 2]))
    if counter ~= nil and counter + 1 > fence then
      fence = counter + 1
    end
    floor = fence + 1
    -- %d, not tostring: Lua would print a 16-digit number in exponent form
    local text = string.format('%d', fence)
    redis.call('SET', KEYS[4 * i - 2], text, 'PX', ARGV[3])
    if queued[i] then
      redis.call('ZREM', KEYS[4 * i - 1], ARGV[1])
      redis.call('HDEL', KEYS[4 * i], ARGV[1])
    end
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
