-- The per-key waiter queue, shared by the fair mode and the bounded barging of the default mode.
-- Prepended (after fence.lua) to the scripts that use it, acquire-all.lua among them.
--
--   queue:   ZSET owner -> arrival (server time in µs)
--   entries: HASH owner -> '<expires_ms> <wake channel>'
--
-- live_head(queue, entries, now_ms): drops the expired entries at the head (waiters that stopped
-- asking) and returns the first live owner and how many ms its place has left, or false, 0.
local function live_head(queue, entries, now_ms)
  while true do
    local first = redis.call('ZRANGE', queue, 0, 0)
    if #first == 0 then
      return false, 0
    end
    local entry = redis.call('HGET', entries, first[1])
    local expires = entry and tonumber(string.match(entry, '^(%d+)')) or 0
    if expires > now_ms then
      return first[1], expires - now_ms
    end
    redis.call('ZREM', queue, first[1])
    redis.call('HDEL', entries, first[1])
  end
end

-- first_live(queue, entries, now_ms): live_head without writes: skips the expired entries and
-- returns the first live owner and how many ms its place has left, or false, 0.
local function first_live(queue, entries, now_ms)
  local at = 0
  while true do
    local waiter = redis.call('ZRANGE', queue, at, at)
    if #waiter == 0 then
      return false, 0
    end
    local entry = redis.call('HGET', entries, waiter[1])
    local expires = entry and tonumber(string.match(entry, '^(%d+)')) or 0
    if expires > now_ms then
      return waiter[1], expires - now_ms
    end
    at = at + 1
  end
end

-- take_place(queue, entries, owner, now, now_ms, ttl_ms, channel): keeps the owner's arrival (or
-- takes one at the tail) and sets its entry to expire in ttl_ms; the queue keys outlive their
-- last entry by one TTL, then vanish on their own.
local function take_place(queue, entries, owner, now, now_ms, ttl_ms, channel)
  redis.call('ZADD', queue, 'NX', tonumber(now[1]) * 1000000 + tonumber(now[2]), owner)
  redis.call('HSET', entries, owner, (now_ms + ttl_ms) .. ' ' .. channel)
  redis.call('PEXPIRE', queue, 2 * ttl_ms)
  redis.call('PEXPIRE', entries, 2 * ttl_ms)
end

-- leave(queue, entries, owner): the owner's place, if any, is given up (it got the key).
local function leave(queue, entries, owner)
  redis.call('ZREM', queue, owner)
  redis.call('HDEL', entries, owner)
end

-- hand_off(lease, counter, queue, entries, now, now_ms, old_fence, counter_ttl, publish, key_channel):
-- after the lease was deleted by its owner's release, grants it to the first live waiter:
-- fence := next fence; lease := {waiter, fence, handed} with TTL = the rest of the waiter's place
-- (a waiter that stopped asking holds the key no longer than its queue TTL allowed); its entry is
-- removed; `publish` '<key_channel> r:<old fence> <sha1(waiter)> <fence> <ttl_ms> <time_s> <time_us>'
-- to the waiter's own wake channel only (the grant travels with the wake-up, named by the SHA-1
-- of the waiter's token, never the token). Returns whether it handed the key over.
local function hand_off(lease, counter, queue, entries, now, now_ms, old_fence, counter_ttl, publish, key_channel)
  local waiter, left = live_head(queue, entries, now_ms)
  if waiter == false then
    return false
  end
  local channel = string.match(redis.call('HGET', entries, waiter), '^%d+ (.+)$')
  leave(queue, entries, waiter)
  local _, text = next_fence(counter, now, counter_ttl)
  redis.call('HSET', lease, 'owner', waiter, 'fence', text, 'handed', '1')
  redis.call('PEXPIRE', lease, left)
  redis.pcall(publish, channel, key_channel .. ' r:' .. old_fence .. ' ' .. redis.sha1hex(waiter) .. ' ' .. text
    .. ' ' .. left .. ' ' .. now[1] .. ' ' .. now[2])
  return true
end
