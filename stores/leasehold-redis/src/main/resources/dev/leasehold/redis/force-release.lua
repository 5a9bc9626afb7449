-- force-release: delete the lease KEYS[1] whoever holds it                 -> number deleted (0 or 1)
--   ARGV[4] 'f:<fence>' to the key's channel ARGV[1] (wakes its waiters), and
--   PUBLISH '<fence>:<rendered key ARGV[3]>' to the store-wide channel ARGV[2], so the holder, in
--   whatever process, learns that this grant (named by its fence, never its token) was removed.
--   <fence> is 0 when the key was already free.
-- ARGV[4] is PUBLISH, or SPUBLISH on a cluster (the key's channel shares the lease's slot); the
-- store-wide channel is classic pub/sub everywhere, since its subscribers may be on any node and its
-- slot is not the lease's. Notices are sent with pcall, as in release.lua.
-- The fence counter is left alone: the next holder's fence must be larger.
local fence = redis.call('HGET', KEYS[1], 'fence')
if fence == false then
  fence = '0'
end
local deleted = redis.call('DEL', KEYS[1])
redis.pcall(ARGV[4], ARGV[1], 'f:' .. fence)
redis.pcall('PUBLISH', ARGV[2], fence .. ':' .. ARGV[3])
return deleted
