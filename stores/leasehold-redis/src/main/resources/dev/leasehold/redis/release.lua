-- release (default mode): compare-and-delete, then wake waiters, or hand the key to the first
-- live queued waiter (bounded barging, see acquire.lua)
--
-- KEYS as in acquire.lua: 1 lease hash, 2 fence counter, 3 queue ZSET, 4 queue entries HASH;
-- KEYS[5] the key's listening mark (set, with a TTL, by a store while it has subscribers of the key)
-- ARGV[1] owner, ARGV[2] how long the fence counter stays, ms, ARGV[3] PUBLISH, or SPUBLISH on a
-- cluster (the channel, and a waiter's wake channel there, shares the lease's slot)
-- The key's release channel is KEYS[1] .. ':released' (RedisKeys), named here, not sent.
--
--   IF the lease KEYS[1] exists AND its owner = ARGV[1]
--     THEN delete it;
--          IF a queue exists (EXISTS) with a live waiter: hand_off of queue.lua (the waiter's
--             grant, published to its wake channel only)                                    -> 1
--          ELSE IF the listening mark KEYS[5] exists: ARGV[3] 'r:<fence>' to the key's channel -> 1
--          (nobody listens: no PUBLISH; a waiter that subscribes asks again after it, and sees
--          this release then)
--   ELSE change nothing            -> 0 (an expired holder never deletes the next holder's lease)
--
-- Notices are sent with pcall: a node that cannot send them (an older node in a cluster being
-- upgraded) still releases; a lost notice costs a waiter at most its bounded poll.
-- The fence counter is left alone: the next holder's fence must be larger.
-- fence.lua and queue.lua are prepended to this script.
local lease = redis.call('HMGET', KEYS[1], 'owner', 'fence')
if lease[1] ~= ARGV[1] then
  return 0
end
if redis.call('EXISTS', KEYS[3]) == 1 then
  local now = redis.call('TIME') -- read before the first write (see acquire.lua)
  redis.call('DEL', KEYS[1])
  local now_ms = tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000)
  if hand_off(KEYS[1], KEYS[2], KEYS[3], KEYS[4], now, now_ms, lease[2], ARGV[2], ARGV[3], KEYS[1] .. ':released') then
    return 1
  end
else
  redis.call('DEL', KEYS[1])
end
if redis.call('EXISTS', KEYS[5]) == 1 then -- someone listens: see RedisNotices
  redis.pcall(ARGV[3], KEYS[1] .. ':released', 'r:' .. lease[2])
end
return 1
