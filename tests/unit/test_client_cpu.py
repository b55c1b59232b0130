"""Issue 31's client-CPU levers keep what they replace: the cache key's bytes (orjson where it
writes what ``json`` writes, ``json`` elsewhere), replies written in batches but never lost or
unseen, the concurrency limit's order and cancellation, one key and one disk look-up per call,
rows prepared a bounded window ahead. The speed itself is bench figure 1c, not a test."""

from __future__ import annotations

import asyncio
import dataclasses
import enum
import json

import pytest


def _json_key_bytes(parts):
    return json.dumps(parts, sort_keys=True, ensure_ascii=True, separators=(",", ":"), default=str).encode("utf-8")


class Colour(enum.Enum):
    RED = 1


class Level(str, enum.Enum):
    HIGH = "high"


@dataclasses.dataclass
class Point:
    x: int


CASES = [
    {"messages": [{"role": "user", "content": "plain ASCII"}], "temperature": 0.0, "seed": None},
    {"messages": [{"role": "user", "content": "é ß 中文 \u2028 \U0001F600 \x7f \x00 \x1f \t\n\r\"\\/"}]},
    {"messages": [{"role": "user", "content": [{"type": "text", "text": "parts"}]}], "response_format": {"b": 1, "a": [True, None]}},
    {"temperature": 1e-05}, {"temperature": 1e16}, {"temperature": float("nan")}, {"temperature": float("inf")},
    {"temperature": 0.1 + 0.2}, {"seed": 2**70}, {"seed": -(2**63)}, {"seed": 2**64 - 1},
    {"response_format": {"minimum": 1e-7, "nested": {"z": [1, 2.5, "x"]}}},
    {"response_format": (1, 2)}, {"response_format": {1: "int key"}}, {"response_format": {"a": Colour.RED}},
    {"response_format": {"a": Level.HIGH}}, {"response_format": {"a": Point(1)}}, {"messages": [{"content": "\ud800 lone"}]},
]


@pytest.mark.parametrize("parts", CASES, ids=range(len(CASES)))
def test_the_cache_key_bytes_are_json_dumps_bytes(parts):
    from ragjudge.cache import key_bytes

    assert key_bytes(parts) == _json_key_bytes(parts)


def test_every_code_point_is_escaped_as_json_escapes_it():
    from ragjudge.cache import key_bytes

    for start in range(0, 0x110000, 0x800):
        text = "".join(chr(c) for c in range(start, min(start + 0x800, 0x110000)) if not 0xD800 <= c < 0xE000)
        parts = {"messages": [{"role": "user", "content": text}]}
        assert key_bytes(parts) == _json_key_bytes(parts), hex(start)


def test_a_container_changed_between_keys_is_looked_at_again():
    """The memo of containers holds the container itself: another dict with the same id is never confused with it."""
    from ragjudge.cache import key_bytes

    for _ in range(600):  # more than the memo holds
        fmt = {"schema": {"minimum": 0.5}}
        assert key_bytes({"response_format": fmt}) == _json_key_bytes({"response_format": fmt})
    fmt = {"schema": {"minimum": 1e-9}}
    assert key_bytes({"response_format": fmt}) == _json_key_bytes({"response_format": fmt})


def test_a_reply_not_yet_written_is_read_from_the_batch_and_written_at_close(tmp_path):
    from ragjudge.cache import WRITE_BATCH, ResponseCache

    cache = ResponseCache(tmp_path)
    other = ResponseCache(tmp_path)  # another run sharing the folder
    cache.set("k0", {"verdict": {"score": 1.0}})
    assert cache.get("k0") == {"verdict": {"score": 1.0}}
    assert other.get("k0") is None  # not written yet
    for i in range(1, WRITE_BATCH):
        cache.set(f"k{i}", {"n": i})
    assert other.get("k0") == {"verdict": {"score": 1.0}}  # the batch filled up: written in one transaction
    cache.set("last", {"n": -1})
    assert other.get("last") is None
    cache.close()
    assert other.get("last") == {"n": -1}
    assert other.info()["entries"] == WRITE_BATCH + 1
    other.close()


def test_clear_drops_replies_not_yet_written(tmp_path):
    from ragjudge.cache import ResponseCache

    cache = ResponseCache(tmp_path)
    cache.set("a", {"n": 1})
    cache.clear()
    assert cache.get("a") is None
    cache.close()
    reopened = ResponseCache(tmp_path)
    assert reopened.get("a") is None
    reopened.close()


def test_the_limit_lets_calls_in_by_arrival_and_never_past_capacity():
    from ragjudge import _loop
    from ragjudge.model import CallLimit

    async def run():
        limit = CallLimit()
        limit.ask(1, 2)
        order, most = [], 0

        async def one(i):
            nonlocal most
            async with limit:
                most = max(most, limit.in_use)
                order.append(i)
                await asyncio.sleep(0.01)

        await asyncio.gather(*(one(i) for i in range(7)))
        return order, most, limit.in_use

    order, most, left = _loop.run(run())
    assert (order, most, left) == (list(range(7)), 2, 0)


def test_a_waiter_cancelled_before_or_after_it_is_woken_gives_its_slot_on():
    from ragjudge import _loop
    from ragjudge.model import CallLimit

    async def run():
        limit = CallLimit()
        limit.ask(1, 1)
        await limit.__aenter__()  # the only slot is taken
        waiting = asyncio.ensure_future(limit.__aenter__())
        later = asyncio.ensure_future(limit.__aenter__())
        await asyncio.sleep(0)
        waiting.cancel()  # cancelled while waiting: leaves the queue
        await asyncio.sleep(0)
        await limit.__aexit__()  # the slot goes to ``later``
        await asyncio.wait_for(later, 1)
        assert limit.in_use == 1
        woken = asyncio.ensure_future(limit.__aenter__())
        await asyncio.sleep(0)
        leaving = asyncio.ensure_future(limit.__aexit__())
        await asyncio.sleep(0)  # ``leaving`` frees the slot, ``woken`` gets it...
        woken.cancel()  # ...and is cancelled before it runs: the slot is given back
        await leaving
        with pytest.raises(asyncio.CancelledError):
            await woken
        return waiting.cancelled(), limit.in_use

    assert _loop.run(run()) == (True, 0)


def test_a_call_computes_its_key_once_and_asks_the_disk_once(tmp_path, monkeypatch):
    import ragjudge.model.chokepoint as model_module  # where the model computes its keys (imported there from ragjudge.cache)
    from ragjudge import _loop, load_config
    from ragjudge.cache import ResponseCache
    from ragjudge.model import Model
    from ragjudge.transports.fake import FakeTransport
    from ragjudge.types import Call, Verdict

    keys, gets = [], []
    real_key = model_module.cache_key
    monkeypatch.setattr(model_module, "cache_key", lambda **parts: keys.append(1) or real_key(**parts))
    cache = ResponseCache(tmp_path)
    real_get = cache.get
    cache.get = lambda key: gets.append(key) or real_get(key)  # type: ignore[method-assign]
    fake = FakeTransport()
    fake.replies.append('{"verdict": "yes"}')
    model = Model(load_config(None, {"judge": {"model": "openai/fake-judge"}}).judge, cache, fake)
    call = Call(metric="m", version="v", mode=None, messages=[{"role": "user", "content": "q"}], response_format=None)
    assert model.peek(call) is None  # as the scorer settles a row
    verdict = _loop.run(model.call(call, lambda reply, _: Verdict(metric="m", status="ok", score=1.0)))
    assert verdict.status == "ok" and len(fake.requests) == 1
    assert (len(keys), len(gets)) == (1, 1)
    fresh = Call(metric="m", version="v", mode=None, messages=[{"role": "user", "content": "q"}], response_format=None)
    assert model.peek(fresh).score == 1.0  # another row with the same call: remembered, same key
    _loop.run(model.aclose())
    cache.close()


@pytest.mark.timing  # waits on real time: out of `make unit`, in `make check` and `make test`
def test_rows_are_prepared_a_bounded_window_ahead_of_the_calls():
    """With concurrency 50, no more than max(64, 2 x 50) = 100 rows are prepared before the first
    reply is back (before, all 300 were); every row is still judged, in order."""
    from ragjudge import Scorer
    from ragjudge.transports.fake import FakeTransport

    fake = FakeTransport(latency=0.2)
    replied = []
    real_complete = fake.complete

    async def complete(request):
        reply = await real_complete(request)
        replied.append(1)
        return reply

    fake.complete = complete  # type: ignore[method-assign]
    prepared_before_a_reply = []
    scorer = Scorer(metrics=["sufficiency"], model="openai/fake-judge", judge={"concurrency": 50}, cache={"enabled": False},
                    transport=fake)
    judge = scorer.judges[0]
    real_prepare = judge.prepare

    def prepare(record):
        if not replied:
            prepared_before_a_reply.append(record.id)
        return real_prepare(record)

    judge.prepare = prepare  # type: ignore[method-assign]
    rows = [{"id": f"r{i}", "request": f"Where is landmark {i}?", "context": [f"Landmark {i} is in city {i}."],
             "expected_response": f"city {i}"} for i in range(300)]
    scored = scorer.score(rows)
    scorer.close()
    assert list(scored.frame["id"]) == [f"r{i}" for i in range(300)]
    assert (scored.frame["sufficiency_status"] == "ok").all()
    assert 50 <= len(prepared_before_a_reply) <= 100
    assert len(replied) == 300


def _landmark_rows(n):
    return [{"id": f"r{i}", "request": f"Where is landmark {i}?", "context": [f"Landmark {i} is in city {i}."],
             "expected_response": f"city {i}"} for i in range(n)]


@pytest.mark.timing  # waits on real time: out of `make unit`, in `make check` and `make test`
def test_the_next_chunk_is_judged_while_the_last_one_finishes(tmp_path):
    """File pipeline, chunks of 20: a request of the second chunk goes out before the first
    chunk's last reply is back, and the table is the same, in order, as one chunk gives."""
    from ragjudge import load_config
    from ragjudge.run import evaluate
    from ragjudge.transports.fake import FakeTransport

    source = tmp_path / "rows.jsonl"
    source.write_text("".join(json.dumps(row) + "\n" for row in _landmark_rows(60)))
    tables = {}
    for size in (20, 1000):
        fake = FakeTransport(latency=0.05)
        timeline = []
        real_complete = fake.complete

        async def complete(request, real_complete=real_complete, timeline=timeline):
            row = request.messages[-1]["content"].split("landmark ", 1)[1].split("?")[0]
            timeline.append(("sent", int(row)))
            reply = await real_complete(request)
            timeline.append(("back", int(row)))
            return reply

        fake.complete = complete  # type: ignore[method-assign]
        config = load_config(None, {"judge": {"model": "openai/fake-judge", "concurrency": 8}, "metrics": ["sufficiency"],
                                    "cache": {"enabled": False}, "chunk_size": size})
        result = evaluate(str(source), config, keep_table=True, transport=fake)
        tables[size] = result.table
        if size == 20:
            last_back_of_first = max(i for i, (what, row) in enumerate(timeline) if what == "back" and row < 20)
            first_sent_of_second = min(i for i, (what, row) in enumerate(timeline) if what == "sent" and row >= 20)
            assert first_sent_of_second < last_back_of_first
    assert list(tables[20]["id"]) == [f"r{i}" for i in range(60)]
    assert tables[20].reset_index(drop=True).equals(tables[1000].reset_index(drop=True))


def _recording_scorer(concurrency, slow=None):
    """A Scorer over the in-process fake judge (2 ms a call, no cache), and the list of the
    landmark number of each row (``_landmark_rows``) in the order its call was sent. ``slow``:
    (row, seconds, calls): that row's call is held until ``calls`` calls were sent or for
    ``seconds``, whichever comes first, and ``("back", row)`` is put in the list when it
    returns (held for a count, not a fixed time, so a loaded machine sends no fewer calls
    meanwhile: a 1 s wait failed under five other test runs)."""
    import asyncio

    from ragjudge import Scorer
    from ragjudge.transports.fake import FakeTransport

    fake = FakeTransport(latency=0.002)
    sent = []
    real_complete = fake.complete

    async def complete(request):
        row = int(request.messages[-1]["content"].split("landmark ", 1)[1].split("?")[0])
        sent.append(row)
        if slow is not None and row == slow[0]:
            held_until = asyncio.get_running_loop().time() + slow[1]
            while len(sent) < slow[2] and asyncio.get_running_loop().time() < held_until:
                await asyncio.sleep(0.005)
            reply = await real_complete(request)
            sent.append(("back", row))
            return reply
        return await real_complete(request)

    fake.complete = complete  # type: ignore[method-assign]
    scorer = Scorer(metrics=["sufficiency"], model="openai/fake-judge", judge={"concurrency": concurrency},
                    cache={"enabled": False}, transport=fake)
    return scorer, sent


def test_jobs_take_the_call_slots_in_the_order_they_were_submitted():
    """Issue 51: three jobs submitted at once (as the file pipeline keeps two ahead), each larger
    than the rows a job prepares ahead, make their calls job by job: every call of the first job
    before any of the second. When they shared the slots, the three jobs finished together and
    the slots drained until the pipeline submitted the next ones (0.2 s of 20 at C=64)."""
    scorer, sent = _recording_scorer(concurrency=4)
    rows = _landmark_rows(450)
    jobs = [scorer.submit(rows[at:at + 150], start=at, in_turn=True) for at in (0, 150, 300)]
    tables = [scorer.finish(job).frame for job in jobs]
    scorer.close()
    assert sorted(sent) == list(range(450))
    assert [row // 150 for row in sent] == sorted(row // 150 for row in sent)  # job by job
    assert [list(table["id"]) for table in tables] == [[f"r{i}" for i in range(at, at + 150)] for at in (0, 150, 300)]
    assert all((table["sufficiency_status"] == "ok").all() for table in tables)


@pytest.mark.timing  # waits on real time: out of `make unit`, in `make check` and `make test`
def test_a_slow_call_holds_one_place_not_the_job_nor_the_next_job_in_turn():
    """A breaker's find: with jobs in turn, one slow call (a retry's back-off, a long reply) at a
    job's start stopped that job at its window of 2 x C rows past the slow row, and the next job
    waited its turn, so the slots sat idle (5,000 rows with 5% of 429s: 41 s against 19 s before
    jobs went in turn). The window now counts unfinished rows: every other row of both jobs is
    sent while the slow one is out."""
    scorer, sent = _recording_scorer(concurrency=4, slow=(0, 10.0, 300))
    rows = _landmark_rows(300)
    jobs = [scorer.submit(rows[at:at + 150], start=at, in_turn=True) for at in (0, 150)]
    tables = [scorer.finish(job).frame for job in jobs]
    scorer.close()
    back = sent.index(("back", 0))
    assert sorted(row for row in sent[:back]) == list(range(300))  # all 300 calls out before the slow one is back
    assert [list(table["id"]) for table in tables] == [[f"r{i}" for i in range(at, at + 150)] for at in (0, 150)]


def test_a_job_not_submitted_in_turn_shares_the_slots_with_those_that_are():
    """A library caller's job beside the pipeline's (``submit`` without ``in_turn``, as ``score``
    from another thread makes it) does not wait for the jobs in turn to start all their rows: its
    calls go out while the first job still has calls to make."""
    scorer, sent = _recording_scorer(concurrency=2)
    rows = _landmark_rows(304)
    in_turn = scorer.submit(rows[:300], in_turn=True)
    beside = scorer.submit(rows[300:], start=300)
    tables = [scorer.finish(in_turn).frame, scorer.finish(beside).frame]
    scorer.close()
    assert sorted(sent) == list(range(304))
    last_of_first = max(position for position, row in enumerate(sent) if row < 300)
    assert min(position for position, row in enumerate(sent) if row >= 300) < last_of_first
    assert [len(table) for table in tables] == [300, 4]


def test_a_scorer_never_closed_keeps_every_reply_it_got(tmp_path):
    """Review fault: replies waiting for their batch were lost when a Scorer was not closed.
    Each score() stores its replies when its judging ends: a second Scorer on the folder makes no call."""
    from ragjudge import Scorer
    from ragjudge.transports.fake import FakeTransport

    first, second = FakeTransport(), FakeTransport()
    settings = {"metrics": ["sufficiency"], "model": "openai/fake-judge", "cache": {"dir": str(tmp_path)}}
    unclosed = Scorer(transport=first, **settings)
    unclosed.score(_landmark_rows(30))  # never closed
    again = Scorer(transport=second, **settings)
    scored = again.score(_landmark_rows(30))
    again.close()
    assert (len(first.requests), len(second.requests)) == (30, 0)
    assert scored.frame["sufficiency_cached"].all()


def test_a_schema_changed_in_place_after_its_first_key_is_looked_at_again():
    """Review fault: the memo of containers took orjson's path for a schema given a 1e-05 after its first key."""
    from ragjudge.cache import key_bytes

    schema = {"schema": {"p": {}}}
    assert key_bytes({"response_format": schema}) == _json_key_bytes({"response_format": schema})
    schema["schema"]["p"]["minimum"] = 1e-05
    assert key_bytes({"response_format": schema}) == _json_key_bytes({"response_format": schema})
    items = [0.5]
    assert key_bytes({"response_format": items}) == _json_key_bytes({"response_format": items})
    items.append(float("nan"))
    assert key_bytes({"response_format": items}) == _json_key_bytes({"response_format": items})


def test_a_call_prepared_later_waits_behind_the_calls_already_waiting():
    """Review fault: a call arriving between a slot's release and the woken waiter's turn took the
    slot (rows then finished out of order, and an interrupt left holes); now it queues behind."""
    from ragjudge import _loop
    from ragjudge.model import CallLimit

    async def run():
        limit = CallLimit()
        limit.ask(1, 1)
        order = []
        await limit.__aenter__()  # this task holds the only slot

        async def waiter():
            async with limit:
                order.append("waiter")

        queued = asyncio.ensure_future(waiter())
        await asyncio.sleep(0)  # the waiter is in line
        await limit.__aexit__()  # the slot goes to the waiter, which has not run yet...
        await limit.__aenter__()  # ...and a call made at once, here, must not take it
        order.append("late")
        await limit.__aexit__()
        await queued
        return order, limit.in_use

    assert _loop.run(run()) == (["waiter", "late"], 0)


def test_bad_input_further_on_keeps_the_replies_of_the_chunk_in_flight(tmp_path):
    """Review fault: with chunks overlapping, a malformed line in a later chunk cancelled the chunk
    in flight, and its paid replies were not cached; now they are (exit 2 as before)."""
    from ragjudge import load_config
    from ragjudge.errors import InputError
    from ragjudge.run import evaluate
    from ragjudge.transports.fake import FakeTransport

    lines = [json.dumps(row) for row in _landmark_rows(14)]
    lines[10] = '{"id": "r10", "request": '  # malformed, in the second chunk of 7
    source = tmp_path / "rows.jsonl"
    source.write_text("\n".join(lines) + "\n")
    config = load_config(None, {"judge": {"model": "openai/fake-judge"}, "metrics": ["sufficiency"],
                                "cache": {"dir": str(tmp_path / "c")}, "chunk_size": 7})
    with pytest.raises(InputError):
        evaluate(str(source), config, transport=FakeTransport(latency=0.05))
    again = FakeTransport()
    from ragjudge import Scorer

    scorer = Scorer(config, transport=again)
    scorer.score(_landmark_rows(7))
    scorer.close()
    assert len(again.requests) == 0  # the first chunk's 7 replies were kept


# -- start-up: a run imports only what it needs ------------------------------------------------


def test_the_bundled_names_are_the_bundled_definitions_names():
    from ragjudge.judges import bundled_definitions, bundled_names

    assert bundled_names() == tuple(bundled_definitions()) and "groundedness" in bundled_names()


def test_every_row_of_a_judge_gets_the_same_response_format_and_the_same_key_bytes():
    """The response format is built once per judge and schema (its orjson check is then made
    once); the key's bytes stay ``json.dumps``'s."""
    import pandas as pd

    from ragjudge.config import (
        read_raw_config as load_config,  # the config as read, untyped
    )
    from ragjudge.judges import make_judges
    from ragjudge.judges.base import json_schema_format
    from ragjudge.scoring import Scorer

    config = load_config(None, metrics=["sufficiency"], model="openai/fake-judge")
    scorer = Scorer(config)
    frame = pd.DataFrame([{"request": f"q{i}", "context": f"passage {i}", "expected_response": f"answer {i}"} for i in range(3)])
    judge = make_judges(config)[0]
    calls = [judge.prepare(record) for record in scorer.records(frame, scorer.resolve(frame))]
    scorer.close()
    assert calls[0].response_format is calls[1].response_format is calls[2].response_format
    assert calls[0].response_format["json_schema"]["name"] == "sufficiency_grounded"
    schema = {"type": "object"}
    assert json_schema_format("a", schema) is json_schema_format("a", schema)
    assert json_schema_format("a", schema) is not json_schema_format("b", schema)
    assert json_schema_format("a", dict(schema)) is not json_schema_format("a", schema)
    from ragjudge.cache import key_bytes

    for call in calls:
        parts = {"messages": call.messages, "response_format": call.response_format, "temperature": call.temperature}
        assert key_bytes(parts) == _json_key_bytes(parts)


def test_a_cached_verdict_with_a_lone_surrogate_is_cleaned_and_a_clean_one_kept_as_it_is():
    from ragjudge.types import Verdict

    dirty = Verdict.from_cache({"metric": "m", "status": "ok", "score": 1.0, "rationale": "half \ud83d emoji",
                                "missing": ["a \udc00 b"], "details": {"k\ud800": ("x", 1)}, "future_field": 3})
    assert dirty.rationale == "half \ufffd emoji" and dirty.missing == ["a \ufffd b"]
    assert dirty.details == {"k\ufffd": ("x", 1)}
    kept = Verdict.from_cache({"metric": "m", "status": "ok", "score": 4.0, "rationale": "é \U0001F600", "missing": ["x"],
                               "details": {"facts": [{"supported": True, "p": 0.25}]}, "usage": "dropped", "raw": "dropped"})
    assert (kept.rationale, kept.missing, kept.details) == ("é \U0001F600", ["x"], {"facts": [{"supported": True, "p": 0.25}]})
    assert kept.raw is None and kept.usage.calls == 0


def test_a_reply_read_back_before_it_is_written_is_a_copy(tmp_path):
    """A verdict restored from the batch not yet written shares nothing with it: changing one
    (a judge's decide writes into its details) leaves the stored reply as it was."""
    from ragjudge.cache import ResponseCache

    cache = ResponseCache(tmp_path)
    cache.set("k", {"verdict": {"metric": "m", "status": "ok", "missing": ["a"], "details": {"facts": [{"p": 0.5}]}}})
    got = cache.get("k")
    got["verdict"]["missing"].append("b")
    got["verdict"]["details"]["facts"][0]["p"] = 0.9
    assert cache.get("k") == {"verdict": {"metric": "m", "status": "ok", "missing": ["a"], "details": {"facts": [{"p": 0.5}]}}}
    cache.close()
    assert ResponseCache(tmp_path).get("k")["verdict"]["details"] == {"facts": [{"p": 0.5}]}


def test_a_chunk_converts_to_arrow_once_and_columns_arrow_cannot_store_still_become_text():
    """``_to_arrow`` converts a chunk once where every column converts; an empty object (a
    struct of no field, which Parquet cannot store) or a mixed column still becomes text,
    named in ``texted``, as when each column was converted first to check it."""
    import pandas as pd

    from ragjudge.io.arrow import _to_arrow

    plain = pd.DataFrame({"id": ["a", "b"], "n": [1, 2], "facts": [["x"], []], "meta": [{"k": 1}, {"k": 2}]})
    texted: list[str] = []
    table = _to_arrow(plain, {"n": "float64"}, texted)
    assert texted == [] and str(table.schema.field("meta").type) == "struct<k: int64>"
    assert str(table.schema.field("n").type) == "double" and table.column("facts").to_pylist() == [["x"], []]
    awkward = pd.DataFrame({"id": ["a", "b"], "empty": [{}, {}], "mixed": ["a", 2], "nested_empty": [[{}], []]})
    texted = []
    table = _to_arrow(awkward, None, texted)
    assert texted == ["empty", "mixed", "nested_empty"]
    assert table.column("empty").to_pylist() == ["{}", "{}"]
    assert table.column("mixed").to_pylist() == ["a", "2"]
    assert table.column("nested_empty").to_pylist() == ["[{}]", "[]"]


def test_a_warm_run_asks_the_cache_for_its_keys_in_blocks_and_never_one_by_one(tmp_path):
    """From a warm cache, the scorer looks a block of rows' keys up at once (``get_many``, at
    most ``BLOCK`` keys), never with a ``get`` per row; every row is a cache hit."""
    from ragjudge import Scorer
    from ragjudge.cache import ResponseCache
    from ragjudge.scoring import BLOCK
    from ragjudge.transports.fake import FakeTransport

    settings = dict(metrics=["sufficiency"], model="openai/fake-judge", cache={"dir": str(tmp_path)})
    first = Scorer(transport=FakeTransport(), **settings)
    first.score(_landmark_rows(150))
    first.close()
    batches, singles = [], []
    real_many, real_get = ResponseCache.get_many, ResponseCache.get

    def get_many(self, keys):
        batches.append(len(keys))
        return real_many(self, keys)

    def get(self, key):
        singles.append(key)
        return real_get(self, key)

    second_fake = FakeTransport()
    again = Scorer(transport=second_fake, **settings)
    again.cache.get_many = get_many.__get__(again.cache)  # type: ignore[method-assign]
    again.cache.get = get.__get__(again.cache)  # type: ignore[method-assign]
    scored = again.score(_landmark_rows(150))
    again.close()
    assert scored.frame["sufficiency_cached"].all() and len(second_fake.requests) == 0
    assert batches == [BLOCK, BLOCK, 150 - 2 * BLOCK] and singles == []


def test_many_keys_read_at_once_are_what_get_reads_one_by_one(tmp_path):
    """``get_many`` over replies on disk (one large enough to be kept in a file of its own), a
    reply not yet written, and keys never stored: each exactly what ``get`` gives."""
    from ragjudge.cache import ResponseCache

    cache = ResponseCache(tmp_path)
    stored = {f"k{i}": {"verdict": {"metric": "m", "status": "ok", "score": float(i), "missing": [f"s{i}"]}, "raw": "é\U0001F600"}
              for i in range(1200)}
    stored["big"] = {"verdict": {"metric": "m", "status": "ok", "rationale": "x" * 100_000}, "raw": None}
    for key, value in stored.items():
        cache.set(key, value)
    cache.flush()
    cache.set("pending", {"verdict": {"metric": "m", "status": "ok"}, "raw": "p"})
    keys = [*stored, "pending", "never", "also never"]
    many = cache.get_many(keys)
    assert cache._reader  # the batched read was the one used
    assert many == {key: cache.get(key) for key in keys}
    assert many["never"] is None and many["big"]["verdict"]["rationale"] == "x" * 100_000 and many["k7"]["verdict"]["score"] == 7.0
    cache.close()
    again = ResponseCache(tmp_path)
    assert again.get_many(["pending", "k1", "never"]) == {"pending": {"verdict": {"metric": "m", "status": "ok"}, "raw": "p"},
                                                          "k1": stored["k1"], "never": None}
    again.close()


@pytest.mark.parametrize("folder", ["relative folder", "with ? and # in its name"])
def test_many_keys_are_read_at_once_from_a_relative_or_oddly_named_cache_folder(tmp_path, monkeypatch, folder):
    """Review fault: a relative ``--cache-dir`` made the batched read fail (exit 2: "relative
    path can't be expressed as a file URI")."""
    from ragjudge.cache import ResponseCache

    monkeypatch.chdir(tmp_path)
    cache = ResponseCache(folder)
    for i in range(3):
        cache.set(f"k{i}", {"verdict": {"metric": "m", "status": "ok", "score": float(i)}, "raw": None})
    cache.flush()
    assert cache.get_many(["k0", "k2", "never"]) == {"k0": cache.get("k0"), "k2": cache.get("k2"), "never": None}
    assert cache._reader  # read at once, not key by key
    cache.close()


def test_with_several_samples_no_final_call_is_looked_up_ahead(tmp_path):
    """With ``judge.samples`` > 1 a final call is not peeked while a row is settled (each sample
    is asked through the chokepoint), so the block's look-up ahead leaves it out: no key is read
    for nothing."""
    from ragjudge import Scorer
    from ragjudge.cache import ResponseCache
    from ragjudge.transports.fake import FakeTransport

    settings = dict(metrics=["sufficiency"], model="openai/fake-judge", judge={"samples": 3}, cache={"dir": str(tmp_path)})
    first = Scorer(transport=FakeTransport(), **settings)
    first.score(_landmark_rows(70))
    first.close()
    batches = []
    real_many = ResponseCache.get_many
    again = Scorer(transport=FakeTransport(), **settings)
    again.cache.get_many = lambda keys: batches.append(len(keys)) or real_many(again.cache, keys)  # type: ignore[method-assign]
    scored = again.score(_landmark_rows(70))
    again.close()
    assert scored.frame["sufficiency_cached"].all() and (scored.frame["sufficiency_status"] == "ok").all()
    assert batches == []


def test_the_benchmarks_turnaround_is_the_time_from_a_reply_to_the_call_that_takes_its_slot(monkeypatch):
    """bench/client_cpu.py's turnaround (issue 51): two slots, a fixed latency of 1 s, and a client
    that sends the next call 2 ms after each reply (the probe alone first)."""
    from pathlib import Path

    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[2] / "bench"))
    from client_cpu import turnaround

    arrivals, replied = [0.0], [1.0]  # the probe
    arrivals += [1.002, 1.002]  # its reply lets both slots go
    for _ in range(6):
        replied.append(arrivals[len(replied)] + 1.0)
        arrivals.append(replied[-1] + 0.002)
    replied += [arrivals[k] + 1.0 for k in range(len(replied), len(arrivals))]
    figures = turnaround(arrivals, replied, 2)
    assert figures == pytest.approx({"turn_mean": 2.0, "turn_median": 2.0})
    assert turnaround(arrivals, replied[:-1], 2) == {}  # a call with no reply: no figure


def test_a_schema_seen_after_256_others_still_gets_one_response_format():
    # the full suite failed the test above: its formats were kept for the first 256 schemas of the process only, so a
    # judge made later (a notebook's, a long test run's) built a new format, and its key check, for every row
    from ragjudge.judges.base import json_schema_format

    schemas = [{"type": "object", "title": f"s{i}"} for i in range(300)]
    for schema in schemas:
        json_schema_format("many", schema)
    late = {"type": "object"}
    assert json_schema_format("late", late) is json_schema_format("late", late)
    assert json_schema_format("many", schemas[-1]) is json_schema_format("many", schemas[-1])
