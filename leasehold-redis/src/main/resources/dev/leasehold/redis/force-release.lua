-- force-release: delete the lease KEYS[1] whoever holds it; PUBLISH to channel ARGV[1] -> number deleted (0 or 1)
-- The fence counter is left alone: the next holder's fence must be larger.
local deleted = redis.call('DEL', KEYS[1])
redis.call('PUBLISH', ARGV[1], 'released')
return deleted
