-- acquire (default mode, bounded barging): grant KEYS[1] to owner ARGV[1] for ARGV[2] ms
--
-- KEYS[1] lease hash {owner, fence}     KEYS[2] fence counter, kept ARGV[3] ms past a grant's fence (fence.lua)
-- KEYS[3], KEYS[4] the key's waiter queue (queue.lua): waiters refused for longer than the
-- store's barging bound, in arrival order
-- ARGV[4] '1' to take (or keep) a place in the queue: the caller has been refused for longer than
-- the bound; ARGV[5] queue TTL ms; ARGV[6] the caller's wake channel
--
--   IF the lease hash is absent (never taken, released, or removed by Redis at its PX expiry)
--     IF no queue (EXISTS: the only extra work while nobody waits beyond the bound)
--       OR its first live entry is the owner's, or it has none
--       THEN fence := next fence; lease := {owner, fence} with TTL ARGV[2]; leave the queue -> granted (new)
--   ELSE IF the lease's owner = ARGV[1] (re-entry, or the grant a release handed to this waiter)
--     THEN reset the TTL to ARGV[2]; keep the fence       -> granted (new when it takes a hand-off)
--   IF ARGV[4] = '1' THEN keep the caller's place (or take one at the tail)
--                                            -> busy, with the holder's TTL or the head's place
--
-- The fence is the hybrid logical clock of fence.lua (next_fence): max(counter + 1, server TIME
-- in microseconds).
-- fence.lua and queue.lua are prepended to this script.
--
-- Returns {1, fence, ttl_ms, time_s, time_us, new (1) or re-entry (0)} when granted,
--         {0, wait_ms} when busy.
local owner = ARGV[1]
local holder = redis.call('HGET', KEYS[1], 'owner')
if holder == owner then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  local now = redis.call('TIME')
  local lease = redis.call('HMGET', KEYS[1], 'fence', 'handed')
  local new = 0
  if lease[2] then
    redis.call('HDEL', KEYS[1], 'handed')
    new = 1
  end
  return {1, tonumber(lease[1]), tonumber(ARGV[2]), tonumber(now[1]), tonumber(now[2]), new}
end
if holder == false and redis.call('EXISTS', KEYS[3]) == 0 then
  local now = redis.call('TIME')
  local fence, text = next_fence(KEYS[2], now, ARGV[3])
  redis.call('HSET', KEYS[1], 'owner', owner, 'fence', text)
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return {1, fence, tonumber(ARGV[2]), tonumber(now[1]), tonumber(now[2]), 1}
end
if holder ~= false and ARGV[4] ~= '1' then
  return {0, redis.call('PTTL', KEYS[1])} -- busy, as cheap as without a queue
end
local now = redis.call('TIME')
local now_ms = tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000)
local wait = 0
if holder == false then
  local head, head_left = live_head(KEYS[3], KEYS[4], now_ms)
  if head == false or head == owner then
    local fence, text = next_fence(KEYS[2], now, ARGV[3])
    redis.call('HSET', KEYS[1], 'owner', owner, 'fence', text)
    redis.call('PEXPIRE', KEYS[1], ARGV[2])
    leave(KEYS[3], KEYS[4], owner)
    return {1, fence, tonumber(ARGV[2]), tonumber(now[1]), tonumber(now[2]), 1}
  end
  wait = head_left
else
  wait = redis.call('PTTL', KEYS[1])
end
if ARGV[4] == '1' then
  take_place(KEYS[3], KEYS[4], owner, now, now_ms, tonumber(ARGV[5]), ARGV[6])
end
return {0, wait}
