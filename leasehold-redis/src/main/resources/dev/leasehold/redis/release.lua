-- release: compare-and-delete, then wake waiters
--   IF the lease KEYS[1] exists AND its owner = ARGV[1]
--     THEN delete it; PUBLISH 'r:<fence>' to channel ARGV[2]   -> 1
--   ELSE change nothing                                        -> 0 (an expired holder never deletes the next holder's lease)
-- The fence counter is left alone: the next holder's fence must be larger.
local lease = redis.call('HMGET', KEYS[1], 'owner', 'fence')
if lease[1] == ARGV[1] then
  redis.call('DEL', KEYS[1])
  redis.call('PUBLISH', ARGV[2], 'r:' .. lease[2])
  return 1
end
return 0
