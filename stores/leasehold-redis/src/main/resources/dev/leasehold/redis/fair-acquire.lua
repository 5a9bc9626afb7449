-- fair acquire: grant KEYS[1] to owner ARGV[1] for ARGV[2] ms in queue order, or keep its place
--
-- KEYS[1] lease hash {owner, fence}     KEYS[2] fence counter (its expiry: fence.lua)
-- KEYS[3] queue: ZSET owner -> arrival (server time in µs)
-- KEYS[4] queue entries: HASH owner -> '<expires_ms> <wake channel>'
-- ARGV[1] owner, ARGV[2] lease ms, ARGV[3] queue TTL ms, ARGV[4] the owner's wake channel,
-- ARGV[5] '1' to take (or keep) a place in the queue, '0' for a single try that takes no place
-- ARGV[6] the fence retention, ms: how long past this grant's fence the counter stays (fence.lua)
--
--   IF the lease is held by another owner AND ARGV[5] = '0' AND the owner has no place
--     THEN -> busy with the holder's TTL (a single try: nothing is read but the lease and the place)
--   IF the lease's owner = ARGV[1] (re-entry, or the grant a release handed to this waiter)
--     THEN reset the TTL to ARGV[2]; keep the fence; leave the queue
--          -> granted; new when it takes a hand-off (field 'handed', which it removes)
--   IF the lease is absent AND no queue (EXISTS: the only extra work while nobody waits)
--     THEN fence := next fence; lease := {owner, fence} with TTL ARGV[2]                  -> granted
--   Drop the queue's expired head entries (a waiter that stopped asking).
--   IF the lease is absent AND the first live entry is the owner's or there is none
--     THEN fence := next fence; lease := {owner, fence} with TTL ARGV[2]; leave the queue -> granted
--   ELSE IF ARGV[5] = '1' OR the owner already has a place
--     THEN keep its arrival (ZADD NX) and set its entry to expire in ARGV[3] ms   -> busy
--   ELSE                                                                          -> busy
--
-- Busy carries how long to wait at most before asking again: the holder's TTL, or, when the key is
-- free but others are ahead, the remaining life of the first entry.
--
-- Fences: next_fence of fence.lua; the queue: live_head, take_place and leave of queue.lua;
-- both are prepended to this script.
--
-- Returns {1, fence, ttl_ms, time_s, time_us, new (1) or re-entry (0)} when granted,
--         {0, wait_ms} when busy.
local owner = ARGV[1]
local holder = redis.call('HGET', KEYS[1], 'owner')
if holder ~= false and holder ~= owner and ARGV[5] ~= '1' and not redis.call('ZSCORE', KEYS[3], owner) then
  return {0, redis.call('PTTL', KEYS[1])} -- a single try of a held key: no write, no TIME
end
local now = redis.call('TIME') -- read before the first write (see fence.lua)
if holder == owner then
  local lease = redis.call('HMGET', KEYS[1], 'fence', 'handed')
  local new = 0
  if lease[2] then
    redis.call('HDEL', KEYS[1], 'handed')
    new = 1
  end
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  leave(KEYS[3], KEYS[4], owner)
  return {1, tonumber(lease[1]), tonumber(ARGV[2]), tonumber(now[1]), tonumber(now[2]), new}
end
if holder == false and redis.call('EXISTS', KEYS[3]) == 0 then
  -- nobody queued: the only extra work of the fair mode while the key is free
  local fence, text = next_fence(KEYS[2], now, ARGV[6])
  redis.call('HSET', KEYS[1], 'owner', owner, 'fence', text)
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return {1, fence, tonumber(ARGV[2]), tonumber(now[1]), tonumber(now[2]), 1}
end
local now_ms = tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000)
local head, head_left = live_head(KEYS[3], KEYS[4], now_ms)
if holder == false and (head == false or head == owner) then
  local fence, text = next_fence(KEYS[2], now, ARGV[6])
  redis.call('HSET', KEYS[1], 'owner', owner, 'fence', text)
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  leave(KEYS[3], KEYS[4], owner)
  return {1, fence, tonumber(ARGV[2]), tonumber(now[1]), tonumber(now[2]), 1}
end
if ARGV[5] == '1' or redis.call('ZSCORE', KEYS[3], owner) then
  take_place(KEYS[3], KEYS[4], owner, now, now_ms, tonumber(ARGV[3]), ARGV[4])
end
if holder == false then
  return {0, head_left}
end
return {0, redis.call('PTTL', KEYS[1])}
