-- release: compare-and-delete, then wake waiters
--   IF the lease KEYS[1] exists AND its owner = ARGV[1]
--     THEN delete it; ARGV[3] 'r:<fence>' to channel ARGV[2]   -> 1
--   ELSE change nothing                                        -> 0 (an expired holder never deletes the next holder's lease)
-- ARGV[3] is PUBLISH, or SPUBLISH on a cluster (the channel shares the lease's slot). The notice is
-- sent with pcall: a node that cannot send it (an older node in a cluster being upgraded) still
-- releases; a lost notice costs a waiter at most its bounded poll.
-- The fence counter is left alone: the next holder's fence must be larger.
local lease = redis.call('HMGET', KEYS[1], 'owner', 'fence')
if lease[1] == ARGV[1] then
  redis.call('DEL', KEYS[1])
  redis.pcall(ARGV[3], ARGV[2], 'r:' .. lease[2])
  return 1
end
return 0
