-- force-release: delete the lease KEYS[1] whoever holds it                 -> number deleted (0 or 1)
--   PUBLISH 'f:<fence>' to the key's channel ARGV[1] (wakes its waiters), and
--   PUBLISH '<fence>:<rendered key ARGV[3]>' to the store-wide channel ARGV[2], so the holder, in
--   whatever process, learns that this grant (named by its fence, never its token) was removed.
--   <fence> is 0 when the key was already free.
-- The fence counter is left alone: the next holder's fence must be larger.
local fence = redis.call('HGET', KEYS[1], 'fence')
if fence == false then
  fence = '0'
end
local deleted = redis.call('DEL', KEYS[1])
redis.call('PUBLISH', ARGV[1], 'f:' .. fence)
redis.call('PUBLISH', ARGV[2], fence .. ':' .. ARGV[3])
return deleted
