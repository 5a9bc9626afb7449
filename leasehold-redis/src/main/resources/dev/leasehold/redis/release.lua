-- release: compare-and-delete, then wake waiters
--   IF the lease KEYS[1] exists AND its owner = ARGV[1]
--     THEN delete it; PUBLISH to channel ARGV[2]   -> 1
--   ELSE change nothing                            -> 0 (an expired holder never deletes the next holder's lease)
-- The fence counter is left alone: the next holder's fence must be larger.
if redis.call('HGET', KEYS[1], 'owner') == ARGV[1] then
  redis.call('DEL', KEYS[1])
  redis.call('PUBLISH', ARGV[2], 'released')
  return 1
end
return 0
