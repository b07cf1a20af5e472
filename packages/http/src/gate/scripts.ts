import { createHash } from 'node:crypto';

export interface LuaScript {
  name: string;
  source: string;
  sha: string;
}

function script(name: string, source: string): LuaScript {
  return { name, source, sha: createHash('sha1').update(source).digest('hex') };
}

/**
 * Shared prologue: the clock is Redis's (`TIME`), never a client's, so replicas with skewed
 * clocks still agree on one schedule. Times are integer epoch milliseconds.
 */
const prologue = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local function num(v, default) local n = tonumber(v) if n == nil then return default end return n end
`;

/**
 * Keeps idle sites from leaving keys behind: the state outlives the latest time it mentions
 * (schedule tail, cooldown, open breaker) by `idle` ms; the lease and reservation sets outlive
 * their newest member.
 */
const touch = `
local function touch(tail, cooldown, openUntil, idle, grace)
  if redis.call('EXISTS', KEYS[1]) == 1 then
    redis.call('PEXPIRE', KEYS[1], math.floor(math.max(tail, cooldown, openUntil, now) - now + idle))
  end
  local newestLease = redis.call('ZRANGE', KEYS[2], -1, -1, 'WITHSCORES')
  if newestLease[2] then redis.call('PEXPIRE', KEYS[2], math.floor(tonumber(newestLease[2]) - now + 1000)) end
  local latestSlot = redis.call('ZRANGE', KEYS[3], -1, -1, 'WITHSCORES')
  if latestSlot[2] then redis.call('PEXPIRE', KEYS[3], math.floor(tonumber(latestSlot[2]) - now + grace + 1000)) end
end
`;

/**
 * acquire — KEYS: state (hash), leases (zset: lease id → expiry), reservations (zset: holder → slot),
 * failed holders (zset: holder → time of its latest failure; only release uses it).
 * ARGV: leaseId, holder ('' = none), rpsIntervalMs, crawlDelayMs, minPauseMs, maxPauseMs,
 *       maxConcurrency, leaseTtlMs, random [0,1), horizonMs, reservationGraceMs, idleTtlMs,
 *       concurrencyRetryMs, halfOpenRetryMs, startWithinMs.
 * Returns {granted 0|1, start|retryAt, reason, now, probe 0|1}.
 *
 * Order of checks: cooldown → breaker → schedule (reservation) → hard spacing floor → concurrency.
 *
 * Schedule: `tail` is the start time of the latest scheduled request. A newcomer draws a spacing
 * (max of 1000/rps, Crawl-delay and a random pause in [min, max], times the post-cooldown
 * slowdown) and takes slot max(now, tail + spacing). A future slot is reserved for its holder
 * (the BullMQ job id), so a backlog of N jobs gets N distinct wake-up times instead of N jobs
 * waking together, N-1 being turned away, and so on (O(N²) delays). A holder that comes back
 * at or after its slot is granted. Reservations further than the horizon are not made (the
 * caller is told to come back later), so jobs deleted while delayed waste at most a horizon.
 *
 * Floor: whatever the schedule says, two starts are never closer than max(1000/rps, Crawl-delay,
 * min pause) × slowdown — a holder that comes back late must not land right before the next one.
 * (`rpsIntervalMs` and `crawlDelayMs` arrive already widened by the start skew, site-gate.ts.)
 *
 * Timed grants: a caller that accepts a start up to `startWithinMs` ahead is granted the start
 * time itself (its slot, or the floor after the latest grant) instead of being refused until it,
 * and waits for it on its own clock. `last` and `tail` then record the granted start, not the
 * moment of the call, so the next grant is spaced from when this request goes out and lateness
 * does not pile up from one grant to the next. The lease counts towards the concurrency limit
 * from the grant on; when every concurrency slot is taken, a caller whose start is still ahead
 * keeps (or gets) a reservation at it and is told to come back then.
 */
export const acquireScript = script(
  'gate-acquire',
  `${prologue}${touch}
local leaseId, holder = ARGV[1], ARGV[2]
local rpsInterval, crawlDelay = num(ARGV[3], 0), num(ARGV[4], 0)
local minPause, maxPause = num(ARGV[5], 0), num(ARGV[6], 0)
local maxConc, leaseTtl = num(ARGV[7], 1), num(ARGV[8], 60000)
local r = num(ARGV[9], 0)
local horizon, grace, idle = num(ARGV[10], 600000), num(ARGV[11], 300000), num(ARGV[12], 3600000)
local concRetry, halfOpenRetry = num(ARGV[13], 1000), num(ARGV[14], 5000)
local within = num(ARGV[15], 0)

redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', '(' .. (now - grace))

local s = redis.call('HMGET', KEYS[1], 'tail', 'last', 'slow', 'cooldown', 'breaker', 'openUntil', 'probe')
local tail, last, slow = num(s[1], 0), num(s[2], 0), num(s[3], 1)
local cooldown, breaker, openUntil, probe = num(s[4], 0), s[5] or 'closed', num(s[6], 0), s[7] or ''

local function deny(retryAt, reason)
  touch(tail, cooldown, openUntil, idle, grace)
  return {0, math.floor(retryAt), reason, now, 0}
end

local function reserve(slot)
  redis.call('ZADD', KEYS[3], slot, holder)
  if slot > tail then
    tail = slot
    redis.call('HSET', KEYS[1], 'tail', tail)
  end
end

if cooldown > now then return deny(cooldown, 'cooldown') end

local isProbe = false
if breaker == 'open' then
  if openUntil > now then return deny(openUntil, 'circuit-open') end
  breaker, probe = 'half-open', ''
  redis.call('HSET', KEYS[1], 'breaker', breaker, 'probe', '')
end
if breaker == 'half-open' then
  -- One probe at a time; a probe whose lease expired (its worker died) frees the slot.
  if probe ~= '' and redis.call('ZSCORE', KEYS[2], probe) then
    return deny(now + halfOpenRetry * (1 + r), 'circuit-half-open')
  end
  isProbe = true
end

local floor = math.max(rpsInterval, crawlDelay, minPause) * slow
local spacing = math.max(rpsInterval, crawlDelay, minPause + r * (maxPause - minPause)) * slow

local start = now
local reserved = false
if not isProbe then
  local slot = nil
  if holder ~= '' then slot = tonumber(redis.call('ZSCORE', KEYS[3], holder)) end
  if slot == nil then
    local candidate = math.floor(math.max(now, tail + spacing))
    if candidate > now + within then
      if candidate - now > horizon then
        return deny(candidate - horizon + r * horizon / 4, 'schedule-full')
      end
      if holder ~= '' then reserve(candidate) end
      return deny(candidate, 'rate')
    end
    start = candidate
  else
    if slot > now + within then return deny(slot, 'rate') end
    start = math.max(now, slot)
    reserved = true
  end
end

start = math.max(start, math.ceil(last + floor))
if start > now + within then
  -- The floor after the latest grant is beyond what the caller accepts: holders that came back
  -- late (their slots taken meanwhile) arrive together, and would all be told the same start.
  -- Each is given a slot of its own at the end of the schedule instead, so that they come back
  -- one by one rather than crowding the floor again.
  if holder ~= '' and not isProbe then
    local slot = math.floor(math.max(start, tail + spacing))
    reserve(slot)
    return deny(slot, 'rate')
  end
  return deny(start, 'rate')
end
if redis.call('ZCARD', KEYS[2]) >= maxConc then
  if start > now then
    if holder ~= '' and not reserved and not isProbe then reserve(start) end
    return deny(start, 'rate')
  end
  return deny(now + concRetry * (1 + r), 'concurrency')
end

if holder ~= '' then redis.call('ZREM', KEYS[3], holder) end
redis.call('ZADD', KEYS[2], start + leaseTtl, leaseId)
if tail < start then tail = start end
-- 'prev' and 'lastLease' let a grant that is given back unused rewind 'last' (see giveBack).
redis.call('HSET', KEYS[1], 'tail', tail, 'last', start, 'prev', last, 'lastLease', leaseId)
if isProbe then redis.call('HSET', KEYS[1], 'probe', leaseId) end
touch(tail, cooldown, openUntil, idle, grace)
if isProbe then return {1, start, 'probe', now, 1} end
return {1, start, 'granted', now, 0}
`,
);

/**
 * release — KEYS as acquire. ARGV: leaseId, status (0 = none), retryAfterMs (-1 = none),
 * failed 0|1, cooldownBaseMs, cooldownMaxMs, maxRetryAfterMs, failureThreshold, openMs,
 * openMaxMs, maxSlowdown, recoverAfter, idleTtlMs, reservationGraceMs, holder ('' = none),
 * failureMemoryMs.
 * Returns {now, cooldownUntil, breaker, slowdown}.
 *
 * Outcomes: 429 and 503 are "slow down" — a cooldown of max(Retry-After, exponential backoff),
 * every reservation dropped (they were computed for a site that is now refusing) and the
 * spacing doubled (up to maxSlowdown), halved again after each `recoverAfter` successes.
 * 5xx (503 included) and network failures count towards the breaker; `failureThreshold`
 * consecutive ones open it for `openMs`, doubling on each failed probe. Any answer below 500
 * other than 429 resets the count: a 404 is a healthy site. An outcome with neither status nor
 * `failed` (our own refusal, a body cap) changes nothing but the lease.
 *
 * Repeat failures: while the breaker is closed, a failure of a holder that already failed within
 * `failureMemoryMs` (a retry of the same posting) neither counts nor resets the count. Only
 * distinct pages failing in a row say the site is down; one bad page's retries say nothing new,
 * and a handful of them coming back to back at the end of a run, once every good page is done,
 * would otherwise open the breaker. A holder's success forgets its failure. A probe's failure
 * always reopens the breaker.
 */
export const releaseScript = script(
  'gate-release',
  `${prologue}${touch}
local leaseId = ARGV[1]
local status, retryAfter, failed = num(ARGV[2], 0), num(ARGV[3], -1), ARGV[4] == '1'
local cooldownBase, cooldownMax, maxRetryAfter = num(ARGV[5], 2000), num(ARGV[6], 600000), num(ARGV[7], 3600000)
local threshold, openMs, openMax = num(ARGV[8], 5), num(ARGV[9], 30000), num(ARGV[10], 600000)
local maxSlow, recoverAfter, idle, grace = num(ARGV[11], 8), num(ARGV[12], 5), num(ARGV[13], 3600000), num(ARGV[14], 300000)
local holder, memory = ARGV[15] or '', num(ARGV[16], 600000)

redis.call('ZREM', KEYS[2], leaseId)

local s = redis.call('HMGET', KEYS[1], 'tail', 'slow', 'okrun', 'cooldown', 'cdstreak', 'breaker', 'openUntil', 'probe', 'fails', 'opens')
local tail, slow, okrun = num(s[1], 0), num(s[2], 1), num(s[3], 0)
local cooldown, cdstreak = num(s[4], 0), num(s[5], 0)
local breaker, openUntil, probe = s[6] or 'closed', num(s[7], 0), s[8] or ''
local fails, opens = num(s[9], 0), num(s[10], 0)

local throttled = status == 429 or status == 503
local failure = failed or status >= 500
local success = (not failure) and (not throttled) and status > 0

local failedBefore = false
if holder ~= '' and (failure or success) then
  local at = tonumber(redis.call('ZSCORE', KEYS[4], holder))
  failedBefore = at ~= nil and at > now - memory
  if failure then
    redis.call('ZADD', KEYS[4], now, holder)
    redis.call('ZREMRANGEBYSCORE', KEYS[4], '-inf', now - memory)
    redis.call('PEXPIRE', KEYS[4], memory)
  elseif at ~= nil then
    redis.call('ZREM', KEYS[4], holder)
  end
end

if throttled then
  cdstreak = cdstreak + 1
  local backoff = math.min(cooldownBase * 2 ^ (cdstreak - 1), cooldownMax)
  local wait = math.max(math.min(retryAfter, maxRetryAfter), backoff)
  cooldown = math.max(cooldown, math.floor(now + wait))
  slow = math.min(slow * 2, maxSlow)
  okrun = 0
  tail = math.max(tail, cooldown)
  redis.call('DEL', KEYS[3])
end

if breaker == 'half-open' and probe ~= '' and probe == leaseId then
  if failure then
    opens = opens + 1
    openUntil = math.floor(now + math.min(openMs * 2 ^ (opens - 1), openMax))
    breaker, probe = 'open', ''
    tail = math.max(tail, openUntil)
    redis.call('DEL', KEYS[3])
  elseif success or throttled then
    breaker, probe, fails, opens = 'closed', '', 0, 0
  else
    probe = '' -- inconclusive: let another request probe
  end
elseif breaker == 'closed' then
  if failure and failedBefore then
    -- a retry of a page that already failed: nothing new about the site
  elseif failure then
    fails = fails + 1
    if fails >= threshold then
      opens = 1
      openUntil = math.floor(now + openMs)
      breaker, fails = 'open', 0
      tail = math.max(tail, openUntil)
      redis.call('DEL', KEYS[3])
    end
  elseif success or throttled then
    fails = 0
  end
end

if success and slow > 1 then
  okrun = okrun + 1
  if okrun >= recoverAfter then
    slow, okrun = math.max(1, slow / 2), 0
  end
end
if success and slow <= 1 then cdstreak = 0 end

redis.call('HSET', KEYS[1], 'tail', tail, 'slow', slow, 'okrun', okrun, 'cooldown', cooldown, 'cdstreak', cdstreak,
  'breaker', breaker, 'openUntil', openUntil, 'probe', probe, 'fails', fails, 'opens', opens)
touch(tail, cooldown, openUntil, idle, grace)
return {now, cooldown, breaker, tostring(slow)}
`,
);

/**
 * giveBack — KEYS as acquire. ARGV: leaseId, holder ('' = none), grantedAt, idleTtlMs,
 * reservationGraceMs. Returns {now, rewound 0|1}.
 *
 * The lease's request never went out (it could not start within its deadline). Its lease is
 * dropped; if it is still the latest grant, 'last' goes back to the grant before it, so the site
 * loses no interval to a request it never received. Its holder gets a reservation at the granted
 * time (already due), so it is granted again as soon as the floor allows instead of queueing
 * behind every slot booked since — unless a cooldown has started meanwhile, which dropped all
 * reservations. A probe given back frees the half-open breaker for another probe.
 */
export const giveBackScript = script(
  'gate-give-back',
  `${prologue}${touch}
local leaseId, holder, grantedAt = ARGV[1], ARGV[2], num(ARGV[3], 0)
local idle, grace = num(ARGV[4], 3600000), num(ARGV[5], 300000)

redis.call('ZREM', KEYS[2], leaseId)

local s = redis.call('HMGET', KEYS[1], 'tail', 'prev', 'lastLease', 'cooldown', 'openUntil', 'probe')
local tail, prev, lastLease = num(s[1], 0), num(s[2], 0), s[3] or ''
local cooldown, openUntil, probe = num(s[4], 0), num(s[5], 0), s[6] or ''

local rewound = 0
if lastLease == leaseId then
  redis.call('HSET', KEYS[1], 'last', prev, 'lastLease', '')
  rewound = 1
end
if probe == leaseId then redis.call('HSET', KEYS[1], 'probe', '') end
if holder ~= '' and cooldown <= now then redis.call('ZADD', KEYS[3], grantedAt, holder) end
touch(tail, cooldown, openUntil, idle, grace)
return {now, rewound}
`,
);

/**
 * renew — KEYS as acquire. ARGV: leaseId, leaseTtlMs. Returns 1 when the lease was still held
 * (it now expires `leaseTtlMs` from now), 0 when it had expired or been settled.
 *
 * A lease is kept while its holder lives: the holder renews it every third of its TTL, so a
 * worker that dies mid-fetch frees its slot within one TTL instead of holding it for the
 * longest fetch it might have made.
 */
export const renewScript = script(
  'gate-renew',
  `${prologue}
local leaseId, ttl = ARGV[1], num(ARGV[2], 60000)
if not redis.call('ZSCORE', KEYS[2], leaseId) then return 0 end
redis.call('ZADD', KEYS[2], 'XX', now + ttl, leaseId)
local newest = redis.call('ZRANGE', KEYS[2], -1, -1, 'WITHSCORES')
redis.call('PEXPIRE', KEYS[2], math.floor(tonumber(newest[2]) - now + 1000))
return 1
`,
);

/**
 * reserve — KEYS as acquire. ARGV: rpsIntervalMs, crawlDelayMs, minPauseMs, maxPauseMs,
 * horizonMs, reservationGraceMs, idleTtlMs, count, then `count` randoms in [0, 1), then `count`
 * holders. Returns {now, slot₁, …, slotₙ}: each holder's reserved start (epoch ms), an existing
 * reservation kept as it is, or -1 where none was made (beyond the horizon, or the site is
 * cooling down or its breaker is not closed, which its acquire will tell the holder).
 *
 * Booking ahead for work that is about to be queued: the holders get the slots the acquire
 * script would give them one by one on their first visit (same spacing, same tail), without
 * that visit. A holder coming back to its slot is then granted as in acquire.
 */
export const reserveScript = script(
  'gate-reserve',
  `${prologue}${touch}
local rpsInterval, crawlDelay = num(ARGV[1], 0), num(ARGV[2], 0)
local minPause, maxPause = num(ARGV[3], 0), num(ARGV[4], 0)
local horizon, grace, idle = num(ARGV[5], 600000), num(ARGV[6], 300000), num(ARGV[7], 3600000)
local count = num(ARGV[8], 0)

redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', '(' .. (now - grace))

local s = redis.call('HMGET', KEYS[1], 'tail', 'slow', 'cooldown', 'breaker', 'openUntil')
local tail, slow = num(s[1], 0), num(s[2], 1)
local cooldown, breaker, openUntil = num(s[3], 0), s[4] or 'closed', num(s[5], 0)

local result = {now}
local open = cooldown > now or breaker ~= 'closed'
for i = 1, count do
  local r, holder = num(ARGV[8 + i], 0), ARGV[8 + count + i]
  local slot = tonumber(redis.call('ZSCORE', KEYS[3], holder))
  if slot == nil and not open then
    local spacing = math.max(rpsInterval, crawlDelay, minPause + r * (maxPause - minPause)) * slow
    local candidate = math.floor(math.max(now, tail + spacing))
    if candidate - now <= horizon then
      redis.call('ZADD', KEYS[3], candidate, holder)
      tail = candidate
      slot = candidate
    end
  end
  result[i + 1] = slot or -1
end
redis.call('HSET', KEYS[1], 'tail', tail)
touch(tail, cooldown, openUntil, idle, grace)
return result
`,
);
