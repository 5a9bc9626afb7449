-- fair release: compare-and-delete, then hand the key to the first live waiter in the same step
--
-- KEYS as in fair-acquire.lua: 1 lease hash, 2 fence counter, 3 queue ZSET, 4 queue entries HASH;
-- KEYS[5] the key's listening mark (see release.lua)
-- ARGV[1] owner, ARGV[2] how long the fence counter stays, ms, ARGV[3] PUBLISH, or SPUBLISH with
-- sharded pub/sub (a waiter's wake channel is then the key's channel, in the lease's slot); sent
-- with pcall, as in release.lua. The key's channel is KEYS[1] .. ':released' (RedisKeys).
--
--   IF the lease KEYS[1] exists AND its owner = ARGV[1]
--     THEN delete it; IF a queue exists (EXISTS), from the head of the queue, drop expired entries; for the first live one:
--          fence := next fence; lease := {waiter, fence, handed} with TTL = the rest of the waiter's queue TTL
--          (a waiter that stopped asking holds the key no longer than its queue TTL allowed); remove
--          its entry; ARGV[3] '<channel> r:<old fence> <sha1(waiter)> <fence> <ttl_ms> <time_s> <time_us>'
--          to the waiter's own wake channel only                                                  -> 1
--          With no live waiter, IF the listening mark KEYS[5] exists, ARGV[3] 'r:<old fence>' to the
--          key's channel                                                                         -> 1
--   ELSE change nothing                                                                            -> 0
--
-- The waiter takes the handed-off lease with its next acquire (owner = itself: the TTL becomes its
-- lease time). Fences: next_fence of fence.lua; the hand-off: hand_off of queue.lua; both are
-- prepended to this script.
local lease = redis.call('HMGET', KEYS[1], 'owner', 'fence')
if lease[1] ~= ARGV[1] then
  return 0
end
if redis.call('EXISTS', KEYS[3]) == 1 then
  local now = redis.call('TIME') -- read before the first write (see fence.lua)
  redis.call('DEL', KEYS[1])
  local now_ms = tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000)
  if hand_off(KEYS[1], KEYS[2], KEYS[3], KEYS[4], now, now_ms, lease[2], ARGV[2], ARGV[3], KEYS[1] .. ':released') then
    return 1
  end
else
  redis.call('DEL', KEYS[1]) -- nobody queued: no TIME, no queue read
end
if redis.call('EXISTS', KEYS[5]) == 1 then -- someone listens: see RedisNotices
  redis.pcall(ARGV[3], KEYS[1] .. ':released', 'r:' .. lease[2])
end
return 1
