"""The store's contract (``store/base.py``), proven on both stores: this process's memory and a real Redis.

Why: the generic code sees one ``Store`` whether ``AGUI_STATE_URL`` is set or not, so the two must
behave the same; one suite runs against both (``MemoryStore`` is the reference). Then what only the
engine can show: two stores on one server see each other (two replicas), many blocked reads never
stall other commands, and an engine that stops, freezes or restarts fails fast and recovers.
Expiry and wake-ups are awaited as conditions with deadlines, never as fixed sleeps.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass

import pytest
import redis.asyncio
import redis.exceptions

from store import MemoryStore, Parked, Store, StoreUnavailable
from store.engine import RedisStore, engine_client
from tests.engine import RedisServer

DEADLINE_S = 20.0
"""How long a condition may take to come true on a busy machine before the test fails."""
NODE_SLACK = 100
"""Approximate trimming (``MAXLEN ~``) drops whole stream nodes, of up to 100 entries by default."""


async def until(condition: Callable[[], Awaitable[bool]], what: str, *, within_s: float = DEADLINE_S) -> None:
    """Poll ``condition`` until it holds; fail after ``within_s``."""
    deadline = time.monotonic() + within_s
    while not await condition():
        assert time.monotonic() < deadline, f"{what} did not happen within {within_s:g} s"
        await asyncio.sleep(0.01)


async def engine_info(url: str, section: str) -> dict:
    """The engine's ``INFO <section>``, asked on a connection of its own."""
    async with redis.asyncio.Redis.from_url(url) as client:
        return await client.info(section)


async def blocked_clients(url: str) -> int:
    """How many connections wait in a blocking command on the engine at ``url`` right now."""
    return int((await engine_info(url, "clients"))["blocked_clients"])


async def until_blocked(url: str, n: int) -> None:
    """Returns once at least ``n`` connections wait in a blocking command on the engine."""

    async def enough() -> bool:
        return await blocked_clients(url) >= n

    await until(enough, f"{n} blocked reads")


@asynccontextmanager
async def redis_store(url: str, **options: float) -> AsyncIterator[RedisStore]:
    """A :class:`RedisStore` on ``url``, closed afterwards."""
    store = RedisStore(url, **options)
    try:
        yield store
    finally:
        await store.aclose()


@dataclass
class Subject:
    store: Store
    until_blocked: Callable[[int], Awaitable[None]]
    """Returns once ``n`` reads wait in the store."""


@pytest.fixture(params=["memory", "redis"])
def make_subject(request: pytest.FixtureRequest) -> Callable[[], Subject]:
    if request.param == "memory":

        async def one_turn(n: int) -> None:
            await asyncio.sleep(0)  # a read of the memory store waits after one turn of the loop (no I/O)

        return lambda: Subject(MemoryStore(), one_turn)
    url = request.getfixturevalue("redis_url")
    return lambda: Subject(RedisStore(url), lambda n: until_blocked(url, n))


@pytest.fixture
async def subject(make_subject: Callable[[], Subject]) -> AsyncIterator[Subject]:
    made = make_subject()
    yield made
    await made.store.aclose()


@pytest.fixture
def ns() -> str:
    """A key prefix of this test's own (the session's engine is shared)."""
    return f"test-{uuid.uuid4().hex}:"


# --- records ----------------------------------------------------------------------------------


async def test_records_put_get_delete(subject: Subject, ns: str) -> None:
    store = subject.store
    assert await store.get(ns + "a") is None
    await store.put(ns + "a", b"one", ttl_s=60)
    await store.put(ns + "b", b"two", ttl_s=60)
    assert await store.get(ns + "a") == b"one"
    await store.put(ns + "a", b"\x00\xffbinary", ttl_s=60)
    assert await store.get(ns + "a") == b"\x00\xffbinary"
    await store.delete(ns + "a", ns + "b", ns + "never-written")
    await store.delete()
    assert await store.get(ns + "a") is None and await store.get(ns + "b") is None


async def test_records_expire(subject: Subject, ns: str) -> None:
    store = subject.store
    await store.put(ns + "short", b"x", ttl_s=0.05)
    await store.put(ns + "long", b"y", ttl_s=60)

    async def gone() -> bool:
        return await store.get(ns + "short") is None

    await until(gone, "the short-lived record's expiry")
    assert await store.get(ns + "long") == b"y"


# --- leases -----------------------------------------------------------------------------------


async def test_leases_have_one_holder(subject: Subject, ns: str) -> None:
    store, lease = subject.store, ns + "lease"
    assert await store.claim(lease, "w1", ttl_s=60)
    assert not await store.claim(lease, "w2", ttl_s=60)
    assert not await store.refresh(lease, "w2", ttl_s=60)
    await store.release(lease, "w2")  # not its lease: nothing happens
    assert await store.get(lease) == b"w1"
    assert await store.refresh(lease, "w1", ttl_s=60)
    await store.release(lease, "w1")
    assert await store.get(lease) is None
    assert await store.claim(lease, "w2", ttl_s=60)


async def test_an_expired_lease_cannot_be_refreshed(subject: Subject, ns: str) -> None:
    store, lease = subject.store, ns + "lease"
    assert await store.claim(lease, "w1", ttl_s=0.05)

    async def expired() -> bool:
        return await store.get(lease) is None

    await until(expired, "the lease's expiry")
    assert not await store.refresh(lease, "w1", ttl_s=60)
    assert await store.claim(lease, "w2", ttl_s=60)


async def test_refresh_extends_a_lease(subject: Subject, ns: str) -> None:
    store, lease = subject.store, ns + "lease"
    assert await store.claim(lease, "w1", ttl_s=1.0)
    assert await store.refresh(lease, "w1", ttl_s=60)
    await store.put(ns + "probe", b"", ttl_s=1.0)

    async def probe_expired() -> bool:
        return await store.get(ns + "probe") is None

    await until(probe_expired, "a record as short-lived as the lease was")
    assert await store.get(lease) == b"w1"


# --- replay logs ------------------------------------------------------------------------------


async def test_logs_read_after_with_count(subject: Subject, ns: str) -> None:
    store, log = subject.store, ns + "log"
    await store.append(log, [(1, b"a"), (2, b"b"), (3, b"c")], max_len=100, ttl_s=60)
    assert await store.read(log, 0, count=10, wait_s=0) == [(1, b"a"), (2, b"b"), (3, b"c")]
    assert await store.read(log, 1, count=10, wait_s=0) == [(2, b"b"), (3, b"c")]
    assert await store.read(log, 1, count=1, wait_s=0) == [(2, b"b")]
    assert await store.read(log, 3, count=10, wait_s=0) == []
    await store.append(log, [(4, b"d")], max_len=100, ttl_s=60)
    assert await store.read(log, 3, count=10, wait_s=0) == [(4, b"d")]
    assert await store.first(log) == 1


async def test_logs_keep_about_the_last_max_len(subject: Subject, ns: str) -> None:
    store, log = subject.store, ns + "log"
    for start in range(1, 401, 50):
        await store.append(log, [(seq, b"%d" % seq) for seq in range(start, start + 50)], max_len=50, ttl_s=60)
    kept = await store.read(log, 0, count=1000, wait_s=0)
    first = await store.first(log)
    assert first == kept[0][0] and first > 1
    assert 50 <= len(kept) <= 50 + NODE_SLACK
    assert kept == [(seq, b"%d" % seq) for seq in range(first, 401)]


async def test_a_long_log_reads_back_exactly_from_anywhere(subject: Subject, ns: str) -> None:
    """A run's log of a few hundred frames, appended one or many at a time, frames of every size:
    any read (a reconnect going back to any point, any count) gets exactly the frames appended.
    In memory the older frames are compressed in blocks: this crosses their boundaries."""
    store, log = subject.store, ns + "log"
    frames = {seq: b"data: %d %s\n\n" % (seq, b"x" * (seq * 37 % 300)) for seq in range(1, 301)}
    seq = 1
    for size in [1, 2, 31, 1, 64, 7, 100, 94]:
        await store.append(log, [(n, frames[n]) for n in range(seq, seq + size)], max_len=10_000, ttl_s=60)
        seq += size
    assert seq == 301
    for after in [0, 1, 31, 32, 33, 63, 64, 150, 255, 256, 299, 300]:
        for count in [1, 2, 33, 1000]:
            expected = [(n, frames[n]) for n in range(after + 1, min(after + count, 300) + 1)]
            assert await store.read(log, after, count=count, wait_s=0) == expected, (after, count)


async def test_a_log_expires_after_its_last_append(subject: Subject, ns: str) -> None:
    store, log = subject.store, ns + "log"
    await store.append(log, [(1, b"a")], max_len=10, ttl_s=0.05)

    async def gone() -> bool:
        return await store.first(log) is None

    await until(gone, "the log's expiry")
    assert await store.read(log, 0, count=10, wait_s=0) == []


async def test_memory_keeps_one_expiry_per_live_key_however_often_it_is_written(ns: str) -> None:
    """A run appends every frame to its log and renews its records while it runs: in memory, that
    must cost no expiry bookkeeping beyond the keys themselves (it once kept a pair per write for a day)."""
    store = MemoryStore()
    for run in range(50):
        for seq in range(1, 117):
            await store.append(f"{ns}log:{run}", [(seq, b"frame")], max_len=10_000, ttl_s=86_400 if seq < 116 else 0.05)
        await store.put(f"{ns}claim:{run}", b"ended", ttl_s=0.05)
    assert len(store._expiring) <= 2 * 100 + 64

    async def all_expired() -> bool:
        return not store._values

    await until(all_expired, "every record's expiry")
    assert len(store._expiring) <= 64


async def test_memory_reads_leave_no_wait_behind_however_they_end(ns: str) -> None:
    """Every open stream's reader waits on its log once per event: a wait that timed out, one that
    was cancelled and one an append answered must each leave nothing listed."""
    store, log = MemoryStore(), ns + "log"
    assert await store.read(log, 0, count=10, wait_s=0.01) == []
    assert store._waiting == {}
    cancelled = asyncio.create_task(store.read(log, 0, count=10, wait_s=60))
    await asyncio.sleep(0)  # the read is waiting (one turn: no I/O)
    assert len(store._waiting[log]) == 1
    cancelled.cancel()
    with pytest.raises(asyncio.CancelledError):
        await cancelled
    assert store._waiting == {}
    answered = [asyncio.create_task(store.read(log, 0, count=10, wait_s=60)) for _ in range(2)]
    await asyncio.sleep(0)
    await store.append(log, [(1, b"a")], max_len=10, ttl_s=60)
    assert await asyncio.gather(*answered) == [[(1, b"a")], [(1, b"a")]]
    assert store._waiting == {}


async def test_a_read_waits_for_a_log_that_does_not_exist_yet(subject: Subject, ns: str) -> None:
    store, log = subject.store, ns + "log"
    assert await store.first(log) is None
    reader = asyncio.create_task(store.read(log, 0, count=10, wait_s=60))
    await subject.until_blocked(1)
    assert not reader.done()
    await store.append(log, [(1, b"a")], max_len=10, ttl_s=60)
    assert await asyncio.wait_for(reader, DEADLINE_S) == [(1, b"a")]


async def test_a_blocked_read_is_woken_by_an_append(subject: Subject, ns: str) -> None:
    store, log = subject.store, ns + "log"
    await store.append(log, [(1, b"a")], max_len=10, ttl_s=60)
    reader = asyncio.create_task(store.read(log, 1, count=10, wait_s=60))
    await subject.until_blocked(1)
    assert not reader.done()
    started = time.monotonic()
    await store.append(log, [(2, b"b"), (3, b"c")], max_len=10, ttl_s=60)
    assert await asyncio.wait_for(reader, DEADLINE_S) == [(2, b"b"), (3, b"c")]
    assert time.monotonic() - started < DEADLINE_S


@pytest.mark.parametrize("exists", [True, False], ids=["log", "no-log"])
async def test_a_read_that_waits_in_vain_returns_empty(subject: Subject, ns: str, exists: bool) -> None:
    store, log = subject.store, ns + "log"
    if exists:
        await store.append(log, [(1, b"a")], max_len=10, ttl_s=60)
    started = time.monotonic()
    assert await store.read(log, 1, count=10, wait_s=0.3) == []
    assert 0.25 <= time.monotonic() - started < DEADLINE_S


# --- the approval ledger ----------------------------------------------------------------------


async def full_ledger(store: Store, ns: str, min_age_s: float) -> tuple[str, dict]:
    """A ledger of two that is full (``a`` parked first, then ``b``); a thread may be evicted once
    it has waited ``min_age_s``, by the store's own clock. Returns its key and the limits."""
    key, limits = ns + "parked", {"max_parked": 2, "min_age_s": min_age_s, "leases": ns + "lease:"}
    assert await store.parked(key) == []
    assert await store.park(key, "a", **limits) == Parked("parked")
    assert await store.park(key, "b", **limits) == Parked("parked")
    return key, limits


async def test_park_refuses_while_the_oldest_is_young_then_evicts_it(subject: Subject, ns: str) -> None:
    store = subject.store
    key, limits = await full_ledger(store, ns, min_age_s=0.5)
    assert await store.park(key, "c", **limits) == Parked("refused")
    assert await store.parked(key) == ["a", "b"]
    deadline = time.monotonic() + DEADLINE_S
    while (decision := await store.park(key, "c", **limits)) == Parked("refused"):  # until a is old enough
        assert time.monotonic() < deadline, "the oldest thread never became old enough to evict"
        await asyncio.sleep(0.05)
    assert decision == Parked("parked", "a")
    assert await store.parked(key) == ["b", "c"]


async def test_park_skips_threads_whose_lease_is_held(subject: Subject, ns: str) -> None:
    store = subject.store
    key, limits = await full_ledger(store, ns, min_age_s=0.0)
    leases = limits["leases"]
    assert await store.claim(leases + "a", "w1", ttl_s=60)  # a's resume is running
    assert await store.park(key, "c", **limits) == Parked("parked", "b")
    assert await store.claim(leases + "c", "w2", ttl_s=60)
    assert await store.park(key, "d", **limits) == Parked("refused")
    assert await store.parked(key) == ["a", "c"]
    await store.release(leases + "a", "w1")
    assert await store.park(key, "d", **limits) == Parked("parked", "a")
    assert await store.parked(key) == ["c", "d"]


async def test_parking_again_moves_a_thread_to_the_back(subject: Subject, ns: str) -> None:
    store = subject.store
    key, limits = await full_ledger(store, ns, min_age_s=0.0)
    assert await store.park(key, "a", **limits) == Parked("parked")  # full, but a was in it
    assert await store.parked(key) == ["b", "a"]
    assert await store.park(key, "c", **limits) == Parked("parked", "b")
    assert await store.parked(key) == ["a", "c"]


async def test_unpark(subject: Subject, ns: str) -> None:
    store, key, leases = subject.store, ns + "parked", ns + "lease:"
    limits = {"max_parked": 3, "min_age_s": 0.0, "leases": leases}
    for thread in ["a", "b", "c"]:
        await store.park(key, thread, **limits)
    await store.unpark(key, "b")
    await store.unpark(key, "never-parked")
    assert await store.parked(key) == ["a", "c"]
    assert await store.park(key, "d", **limits) == Parked("parked")


# --- the engine only ------------------------------------------------------------------------


async def test_two_replicas_share_one_engine(redis_url: str, ns: str) -> None:
    async with redis_store(redis_url) as one, redis_store(redis_url) as two:
        assert one.shared and two.shared and not MemoryStore.shared
        await one.put(ns + "record", b"from one", ttl_s=60)
        assert await two.get(ns + "record") == b"from one"
        assert await one.claim(ns + "lease", "one", ttl_s=60)
        assert not await two.claim(ns + "lease", "two", ttl_s=60)
        await two.release(ns + "lease", "two")
        assert await one.refresh(ns + "lease", "one", ttl_s=60)
        limits = {"max_parked": 1, "min_age_s": 0.0, "leases": ns + "lease:"}
        await one.park(ns + "parked", "t1", **limits)
        assert await two.park(ns + "parked", "t2", **limits) == Parked("parked", "t1")
        assert await one.parked(ns + "parked") == ["t2"]
        await one.append(ns + "log", [(1, b"a")], max_len=10, ttl_s=60)
        before = await blocked_clients(redis_url)
        reader = asyncio.create_task(two.read(ns + "log", 1, count=10, wait_s=60))
        await until_blocked(redis_url, before + 1)
        await one.append(ns + "log", [(2, b"b")], max_len=10, ttl_s=60)
        assert await asyncio.wait_for(reader, DEADLINE_S) == [(2, b"b")]


async def test_many_blocked_reads_do_not_stall_commands(redis_url: str, ns: str) -> None:
    log = ns + "log"
    async with redis_store(redis_url) as store:
        await store.append(log, [(1, b"a")], max_len=10, ttl_s=60)
        before = await blocked_clients(redis_url)
        readers = [asyncio.create_task(store.read(log, 1, count=10, wait_s=60)) for _ in range(200)]
        await until_blocked(redis_url, before + 200)
        started = time.monotonic()
        await asyncio.wait_for(store.put(ns + "record", b"x", ttl_s=60), DEADLINE_S)
        assert await asyncio.wait_for(store.get(ns + "record"), DEADLINE_S) == b"x"
        assert time.monotonic() - started < 5.0, "commands waited behind the blocked reads"
        assert not any(reader.done() for reader in readers)
        await store.append(log, [(2, b"b")], max_len=10, ttl_s=60)
        results = await asyncio.wait_for(asyncio.gather(*readers), DEADLINE_S)
        assert results == [[(2, b"b")]] * 200


async def test_reads_beyond_max_readers_wait_their_turn(redis_url: str, ns: str) -> None:
    async with redis_store(redis_url, max_readers=1) as store:
        await store.append(ns + "one", [(1, b"a")], max_len=10, ttl_s=60)
        await store.append(ns + "two", [(1, b"a")], max_len=10, ttl_s=60)
        before = await blocked_clients(redis_url)
        holder = asyncio.create_task(store.read(ns + "one", 1, count=10, wait_s=60))
        await until_blocked(redis_url, before + 1)
        # The only reader slot is taken: this read finds nothing, waits for the slot in vain, then
        # looks once more without blocking and finds what came meanwhile.
        ranges = await xrange_calls(redis_url)
        started = time.monotonic()
        queued = asyncio.create_task(store.read(ns + "two", 1, count=10, wait_s=1.0))

        async def looked() -> bool:
            return await xrange_calls(redis_url) > ranges

        await until(looked, "the queued read's first look")
        await store.append(ns + "two", [(2, b"b")], max_len=10, ttl_s=60)
        assert await asyncio.wait_for(queued, DEADLINE_S) == [(2, b"b")]
        assert time.monotonic() - started >= 0.9
        assert await store.read(ns + "two", 2, count=10, wait_s=0.3) == []
        assert not holder.done()
        await store.append(ns + "one", [(2, b"b")], max_len=10, ttl_s=60)
        assert await asyncio.wait_for(holder, DEADLINE_S) == [(2, b"b")]


async def test_a_cancelled_read_gives_back_its_slot_and_its_connection(redis_url: str, ns: str) -> None:
    log = ns + "log"
    async with redis_store(redis_url, max_readers=1) as store:
        await store.append(log, [(1, b"a")], max_len=10, ttl_s=60)
        before = await blocked_clients(redis_url)
        leaving = asyncio.create_task(store.read(log, 1, count=10, wait_s=60))  # a client that goes away
        await until_blocked(redis_url, before + 1)
        leaving.cancel()
        with pytest.raises(asyncio.CancelledError):
            await asyncio.wait_for(leaving, DEADLINE_S)

        async def unblocked() -> bool:
            return await blocked_clients(redis_url) <= before

        await until(unblocked, "the engine letting go of the cancelled read")
        staying = asyncio.create_task(store.read(log, 1, count=10, wait_s=60))  # needs the only slot
        await until_blocked(redis_url, before + 1)
        await store.append(log, [(2, b"b")], max_len=10, ttl_s=60)
        assert await asyncio.wait_for(staying, DEADLINE_S) == [(2, b"b")]


async def test_a_stopped_engine_fails_fast_and_a_restarted_one_serves_again(ns: str) -> None:
    with RedisServer() as server:
        async with redis_store(server.url, timeout_s=2.0) as store:
            await store.append(ns + "log", [(1, b"a")], max_len=10, ttl_s=60)
            reader = asyncio.create_task(store.read(ns + "log", 1, count=10, wait_s=60))
            await until_blocked(server.url, 1)
            server.stop()
            started = time.monotonic()
            for failing in (store.get(ns + "record"), store.claim(ns + "lease", "w1", ttl_s=60), reader):
                with pytest.raises(StoreUnavailable) as failed:
                    await asyncio.wait_for(failing, DEADLINE_S)
                assert isinstance(failed.value.__cause__, redis.exceptions.ConnectionError)
            assert time.monotonic() - started < 2.0

            server.start()  # same port, empty: nothing was persisted
            assert await store.get(ns + "record") is None
            assert await store.claim(ns + "lease", "w1", ttl_s=60)
            assert await store.refresh(ns + "lease", "w1", ttl_s=60)  # the scripts are loaded again
            limits = {"max_parked": 1, "min_age_s": 0.0, "leases": ns + "lease:"}
            assert await store.park(ns + "parked", "t1", **limits) == Parked("parked")
            reader = asyncio.create_task(store.read(ns + "log", 0, count=10, wait_s=0.2))
            assert await asyncio.wait_for(reader, DEADLINE_S) == []


async def test_a_frozen_engine_times_out_then_serves_again(ns: str) -> None:
    with RedisServer() as server:
        async with redis_store(server.url, timeout_s=1.0) as store:
            await store.put(ns + "record", b"x", ttl_s=60)
            with server.frozen():
                started = time.monotonic()
                with pytest.raises(StoreUnavailable) as failed:
                    await store.get(ns + "record")
                assert isinstance(failed.value.__cause__, redis.exceptions.TimeoutError)
                assert 0.9 <= time.monotonic() - started < 1.0 + 4.0
            assert await store.get(ns + "record") == b"x"


async def test_a_command_queued_for_a_connection_longer_than_the_timeout_still_runs(redis_url: str, ns: str) -> None:
    """Waiting for a pooled connection is the process's own queue, not the engine's silence: each
    command ahead is answered within the timeout, so the last one runs too, however long it queued."""
    client = engine_client(redis_url, connections=1, timeout_s=2.0)
    try:
        started = time.monotonic()
        # each BLPOP holds the one connection for 0.5 s; the sixth queues 2.5 s for it
        answers = await asyncio.gather(*(client.blpop([ns + "empty"], timeout=0.5) for _ in range(6)))
        assert answers == [None] * 6
        assert time.monotonic() - started >= 3.0
    finally:
        await client.aclose()


async def xrange_calls(url: str) -> int:
    """How many ``XRANGE`` commands the engine has run."""
    return int((await engine_info(url, "commandstats")).get("cmdstat_xrange", {}).get("calls", 0))
