"""An endpoint's concurrency limit, shared by every judge process on every node (Redis).

``PODIUM_JUDGE_CONCURRENCY`` is what one judge endpoint serves at once; several judge worker
processes, on one node or many, judge runs against it at the same time. Before a run is judged,
its process leases slots for the endpoint: as many as are free (up to the limit), at least one,
waiting while there are none. The judge's own concurrency is then the slots it holds, so the
sum over all processes never exceeds the limit. Leases are members of a Redis sorted set scored
by their expiry (Redis's clock, so nodes' clocks do not matter), renewed while the run is
judged; those of a process that died lapse after ``LEASE_S``. One acquire and one release per
run: nothing per turn.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

import redis

log = logging.getLogger(__name__)
LEASE_S = 60  # a dead process's slots come back after this long
POLL_S = 0.2  # while no slot is free
KEY = "{namespace}judge-slots:{endpoint}"  # namespace: the install's (podium.install)

# KEYS[1]: the set; ARGV: limit, wanted, lease owner, lease seconds. Returns slots taken.
_ACQUIRE = """
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1e6
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
local take = math.min(tonumber(ARGV[1]) - redis.call('ZCARD', KEYS[1]), tonumber(ARGV[2]))
for i = 1, take do
  redis.call('ZADD', KEYS[1], now + tonumber(ARGV[4]), ARGV[3] .. ':' .. i)
end
redis.call('EXPIRE', KEYS[1], math.ceil(tonumber(ARGV[4])) + 1)
return math.max(take, 0)
"""
# KEYS[1]: the set; ARGV: lease seconds, then the owner's members. Pushes their expiry on.
_RENEW = """
local t = redis.call('TIME')
local expiry = tonumber(t[1]) + tonumber(t[2]) / 1e6 + tonumber(ARGV[1])
for i = 2, #ARGV do redis.call('ZADD', KEYS[1], 'XX', expiry, ARGV[i]) end
redis.call('EXPIRE', KEYS[1], math.ceil(tonumber(ARGV[1])) + 1)
return 0
"""


@contextmanager
def judge_slots(
    endpoint: str,
    limit: int,
    client: redis.Redis,
    wait_s: float | None = None,
    lease_s: float = LEASE_S,
    *,
    namespace: str,
) -> Iterator[int]:
    """Lease between 1 and ``limit`` of ``endpoint``'s slots for the duration and yield how many;
    TimeoutError when none came free within ``wait_s`` (None: wait as long as it takes). The
    slots are those of the install whose Redis keys begin with ``namespace``."""
    if limit < 1:
        raise ValueError(f"judge concurrency limit must be at least 1, got {limit}")
    key = KEY.format(namespace=namespace, endpoint=endpoint)
    owner = uuid.uuid4().hex
    acquire, renew = client.register_script(_ACQUIRE), client.register_script(_RENEW)
    deadline = None if wait_s is None else time.monotonic() + wait_s
    while not (taken := int(acquire(keys=[key], args=[limit, limit, owner, lease_s]))):
        if deadline is not None and time.monotonic() >= deadline:
            raise TimeoutError(f"no judge slot of endpoint {endpoint!r} came free in {wait_s} s")
        time.sleep(POLL_S)
    members = [f"{owner}:{i}" for i in range(1, taken + 1)]
    stop = threading.Event()

    def keep() -> None:
        while not stop.wait(lease_s / 3):
            try:
                renew(keys=[key], args=[lease_s, *members])
            except redis.RedisError as exc:  # tried again next period; two more before it lapses
                log.warning("judge slots of %s: renewal failed (%s)", endpoint, exc)

    renewer = threading.Thread(target=keep, name=f"judge-slots-{endpoint}", daemon=True)
    renewer.start()
    try:
        yield taken
    finally:
        stop.set()
        renewer.join()
        with contextlib.suppress(redis.RedisError):  # else they lapse after lease_s
            client.zrem(key, *members)
