"""The Lua scripts that make each Redis memory write atomic, and the change frame they publish.

A write runs as one script: it stores the values, keeps the first-write order
and, in the same atomic step, publishes one *change frame* on the namespace's
channel. Because Redis runs scripts one at a time, the frames reach every
listener in the order the writes were applied, and a write is never visible
without its notification (or the reverse).

A change frame is a sequence of netstrings (``<length>:<bytes>``), binary-safe
for pickled values: the writer's origin id, then four fields per changed key:
kind (``c`` created, ``u`` updated, ``d`` deleted), key, previous value
(empty when created) and new value (empty when deleted).

Example:
    >>> parse_frame(b"2:ab1:c1:k0:1:1")
    (b'ab', [(b'c', 'k', b'', b'1')])
"""

from __future__ import annotations

__all__ = ["COMPARE_AND_WRITE", "DELETE", "INCREMENT_INTEGER", "LIST_DELETE_INDEX", "LIST_REPLACE", "WRITE",
           "parse_frame"]

_NETSTRING = "local function field(s) return #s .. ':' .. s end\n"

#: KEYS: hash, order zset, sequence counter.
#: ARGV: channel ('' = do not publish), origin, replace ('1' empties the hash first), key1, value1, ...
#: Returns the change frame.
WRITE = _NETSTRING + """
local hash, order, seq = KEYS[1], KEYS[2], KEYS[3]
if ARGV[3] == '1' then redis.call('DEL', hash, order) end
local frame = {field(ARGV[2])}
for i = 4, #ARGV, 2 do
  local key, value = ARGV[i], ARGV[i + 1]
  local previous = redis.call('HGET', hash, key)
  redis.call('HSET', hash, key, value)
  if previous then
    frame[#frame + 1] = field('u') .. field(key) .. field(previous) .. field(value)
  else
    redis.call('ZADD', order, redis.call('INCR', seq), key)
    frame[#frame + 1] = field('c') .. field(key) .. field('') .. field(value)
  end
end
local out = table.concat(frame)
if ARGV[1] ~= '' then redis.call('PUBLISH', ARGV[1], out) end
return out
"""

#: KEYS: hash, order zset, sequence counter.
#: ARGV: channel ('' = do not publish), origin, key, present ('1': the key must hold exactly the bytes
#: ARGV[5]; '0': it must be absent), expected bytes, new bytes.
#: Returns the change frame, or nil when the key did not hold what was expected (then nothing is written).
COMPARE_AND_WRITE = _NETSTRING + """
local hash, order, seq, key = KEYS[1], KEYS[2], KEYS[3], ARGV[3]
local previous = redis.call('HGET', hash, key)
if ARGV[4] == '1' then
  if previous ~= ARGV[5] then return false end
elseif previous then
  return false
end
redis.call('HSET', hash, key, ARGV[6])
local out
if previous then
  out = field(ARGV[2]) .. field('u') .. field(key) .. field(previous) .. field(ARGV[6])
else
  redis.call('ZADD', order, redis.call('INCR', seq), key)
  out = field(ARGV[2]) .. field('c') .. field(key) .. field('') .. field(ARGV[6])
end
if ARGV[1] ~= '' then redis.call('PUBLISH', ARGV[1], out) end
return out
"""

#: KEYS: hash, order zset, sequence counter. ARGV: channel ('' = do not publish), origin, key, by (an integer).
#: The fast path of ``increment`` for JSON integers: HINCRBY, exact over 64-bit integers.
#: Returns the change frame, or nil, writing nothing, when the stored value is not a 64-bit integer
#: in canonical form or the sum overflows (then the caller takes the general path).
INCREMENT_INTEGER = _NETSTRING + """
local hash, order, seq, key = KEYS[1], KEYS[2], KEYS[3], ARGV[3]
local previous = redis.call('HGET', hash, key)
if previous and not string.match(previous, '^%-?%d+$') then return false end
local reply = redis.pcall('HINCRBY', hash, key, ARGV[4])
if type(reply) == 'table' and reply.err then return false end
local value = redis.call('HGET', hash, key)
local out
if previous then
  out = field(ARGV[2]) .. field('u') .. field(key) .. field(previous) .. field(value)
else
  redis.call('ZADD', order, redis.call('INCR', seq), key)
  out = field(ARGV[2]) .. field('c') .. field(key) .. field('') .. field(value)
end
if ARGV[1] ~= '' then redis.call('PUBLISH', ARGV[1], out) end
return out
"""

#: KEYS: hash, order zset. ARGV: channel ('' = do not publish), origin, key.
#: Returns the change frame, or nil when the key was absent (then nothing is published).
DELETE = _NETSTRING + """
local previous = redis.call('HGET', KEYS[1], ARGV[3])
if not previous then return false end
redis.call('HDEL', KEYS[1], ARGV[3])
redis.call('ZREM', KEYS[2], ARGV[3])
local out = field(ARGV[2]) .. field('d') .. field(ARGV[3]) .. field(previous) .. field('')
if ARGV[1] ~= '' then redis.call('PUBLISH', ARGV[1], out) end
return out
"""

#: KEYS: list. ARGV: items. Replaces the whole list (RPUSH in chunks: Lua's unpack has a stack limit).
LIST_REPLACE = """
redis.call('DEL', KEYS[1])
for i = 1, #ARGV, 1000 do
  redis.call('RPUSH', KEYS[1], unpack(ARGV, i, math.min(i + 999, #ARGV)))
end
return #ARGV
"""

#: KEYS: list. ARGV: index (Python semantics: negative counts from the end), tombstone.
#: Returns the removed item, or an error reply 'index out of range'.
LIST_DELETE_INDEX = """
local n = redis.call('LLEN', KEYS[1])
local i = tonumber(ARGV[1])
if i < 0 then i = i + n end
if i < 0 or i >= n then return redis.error_reply('index out of range') end
local item = redis.call('LINDEX', KEYS[1], i)
redis.call('LSET', KEYS[1], i, ARGV[2])
redis.call('LREM', KEYS[1], 1, ARGV[2])
return item
"""


def parse_frame(frame: bytes) -> tuple[bytes, list[tuple[bytes, str, bytes, bytes]]]:
    """``(origin, [(kind, key, previous, value), ...])`` from a change frame."""
    fields: list[bytes] = []
    at = 0
    while at < len(frame):
        colon = frame.index(b":", at)
        end = colon + 1 + int(frame[at:colon])
        fields.append(frame[colon + 1:end])
        at = end
    origin, rest = fields[0], fields[1:]
    changes = [(rest[i], rest[i + 1].decode(), rest[i + 2], rest[i + 3]) for i in range(0, len(rest), 4)]
    return origin, changes
