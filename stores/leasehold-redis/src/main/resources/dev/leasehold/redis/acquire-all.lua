-- acquire-all: grant every lease of a batch to owner ARGV[1] for ARGV[2] ms, or none of them.
-- Lease i is KEYS[4i-3], its fence counter KEYS[4i-2] (kept until the clock is ARGV[3] ms past its
-- fence, fence.lua), its waiter queue KEYS[4i-1] and entries KEYS[4i] (queue.lua); on a cluster
-- every key of the batch is in one slot (the caller groups them).
--   IF some lease is held by another owner, or is free while a live waiter other than ARGV[1] is
--      queued for it (a batch never passes a queued waiter)
--                        -> {0, i, wait_ms} for the first such i (the holder's TTL, or the
--                           remaining place of the waiter); nothing is changed
--   ELSE each lease as acquire.lua grants one:
--     absent:           fence := max(counter + 1, floor); floor := fence + 1; counter := fence
--                       (fence.lua); lease := {owner, fence} with TTL ARGV[2]                    (new, 1)
--     held by ARGV[1]:  reset the TTL to ARGV[2]; keep the fence                               (re-entry, 0)
--                                          -> {1, time_s, time_us, fence_1, new_1, ..., fence_n, new_n}
-- Fences are the hybrid logical clock of fence.lua (fence_above): the floor starts at the server's
-- TIME in microseconds, read before the first write. It then passes each new fence, so the new
-- grants of one batch get distinct fences, increasing in the batch's order (a batch of n keys runs
-- about n microseconds ahead of the clock).
-- The queue is only read here (expired entries stay until a single acquire or a release drops
-- them): an expired entry is skipped, the first live one refuses the batch.
-- fence.lua and queue.lua are prepended to this script.
local now = false
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
      first_live(KEYS[4 * i - 1], KEYS[4 * i], tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000))
    if waiter ~= false and waiter ~= ARGV[1] then
      return {0, i, left}
    end
    queued[i] = true
  end
  owners[i] = owner
end
now = now or redis.call('TIME')
local clock = tonumber(now[1]) * 1000000 + tonumber(now[2])
local floor = clock
local reply = {1, tonumber(now[1]), tonumber(now[2])}
for i = 1, #KEYS / 4 do
  local lease = KEYS[4 * i - 3]
  if owners[i] == false then
    local fence, text = fence_above(KEYS[4 * i - 2], floor, clock, ARGV[3])
    floor = fence + 1
    if queued[i] then
      leave(KEYS[4 * i - 1], KEYS[4 * i], ARGV[1])
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
