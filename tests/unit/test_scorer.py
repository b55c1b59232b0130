"""The library core in the unit tier (issue 12): ``Scorer`` over DataFrames against the
in-process fake transport: ``output_schema``, ``Summary.merge`` and an interrupt. Moved from
tests/test_library.py, their assertions unchanged; the runs against the loopback server and
the command line's verdicts stay there."""

from __future__ import annotations

import threading

import pyarrow as pa
import pytest

from helpers import sample_frame
from ragjudge.scoring import Scorer
from ragjudge.transports.fake import FakeTransport


@pytest.mark.parametrize("metrics", [["sufficiency"], ["completeness"], ["sufficiency", "completeness"]], ids="+".join)
@pytest.mark.parametrize("judge", [{}, {"yes_threshold": 0.7, "fact_threshold": 0.6, "coverage_score": True}, {"samples": 3}],
                         ids=["plain", "thresholds", "samples"])
def test_output_schema_is_the_returned_frames_schema(metrics, judge):
    frame = sample_frame()
    frame["sufficiency_score"] = "an input column this run replaces"
    with Scorer(metrics=metrics, judge={"model": "openai/fake-judge", **judge}, cache={"enabled": False}, transport=FakeTransport()) as scorer:
        scored = scorer.score(frame)
        expected = scorer.output_schema(pa.Schema.from_pandas(frame, preserve_index=False))
    got = pa.Table.from_pandas(scored.frame, schema=expected, preserve_index=False).schema  # the frame's values take the schema's types
    assert got.remove_metadata() == expected and list(scored.frame.columns) == expected.names
    # list columns are Python lists, not an Arrow dtype: the frame's own to_parquet is read back by plain pandas (issue 45 item 6)
    assert all(scored.frame[name].dtype == object for name in expected.names if str(expected.field(name).type).startswith("list"))
    assert len(scored.frame) == len(frame) and list(scored.frame["id"]) == list(frame["id"])
    assert ("sufficiency_p_yes" in got.names) == ("sufficiency" in metrics and "yes_threshold" in judge)
    assert ("sufficiency_agreement" in got.names) == ("sufficiency" in metrics and "samples" in judge)


def test_merged_chunk_summaries_equal_the_one_chunk_summary():
    frame = sample_frame()
    settings = {"judge": {"model": "openai/fake-judge"}, "cache": {"enabled": False}}
    with Scorer(**settings, transport=FakeTransport()) as scorer:
        whole = scorer.score(frame).summary
    with Scorer(**settings, transport=FakeTransport()) as scorer:  # a fresh one: nothing remembered
        parts = [scorer.score(frame.iloc[start:start + 5]).summary for start in range(0, len(frame), 5)]
    merged = parts[0]
    for part in parts[1:]:
        merged = merged.merge(part)
    assert merged.rows == whole.rows == 32
    assert {k: m.to_dict() for k, m in merged.metrics.items()} == {k: m.to_dict() for k, m in whole.metrics.items()}
    assert (merged.fatal, merged.interrupted, merged.judge_model) == (whole.fatal, whole.interrupted, whole.judge_model)


@pytest.mark.timing  # waits on real time: out of `make unit`, in `make check` and `make test`
def test_interrupt_turns_unfinished_rows_into_errors_and_stays():
    transport = FakeTransport(latency=0.5)
    frame = sample_frame().head(6)
    with Scorer(metrics=["sufficiency"], judge={"model": "openai/fake-judge"}, cache={"enabled": False}, transport=transport) as scorer:
        threading.Timer(0.2, scorer.interrupt).start()
        first = scorer.score(frame)
        second = scorer.score(frame)
    statuses = list(first.frame["sufficiency_status"])
    assert len(statuses) == 6 and "error" in statuses
    assert set(first.frame.loc[first.frame["sufficiency_status"] == "error", "sufficiency_error"]) == {"interrupted"}
    assert first.summary.interrupted and second.summary.interrupted
    assert set(second.frame["sufficiency_error"].dropna()) == {"interrupted"}


def test_a_scored_frame_written_by_pandas_is_read_back_by_plain_pandas(tmp_path):
    # `scored.frame.to_parquet()` could not be read back: "data type 'list<item: string>[pyarrow]' not understood"
    import pandas as pd

    with Scorer(judge={"model": "openai/fake-judge"}, cache={"enabled": False}, transport=FakeTransport()) as scorer:
        scored = scorer.score(sample_frame().head(4))
    scored.frame.to_parquet(tmp_path / "scored.parquet")
    back = pd.read_parquet(tmp_path / "scored.parquet")
    assert list(back.columns) == list(scored.frame.columns) and len(back) == 4
    assert [list(v) for v in back["sufficiency_missing"]] == [list(v) for v in scored.frame["sufficiency_missing"]]



def _interrupted(scorer, frame, ready, times: int = 1):
    """``frame`` scored by ``scorer``, interrupted ``times`` (a second interrupt stops at once) as
    soon as ``ready()`` holds (polled while the calls run): the ``Scored``."""
    import time

    job = scorer.submit(frame)
    deadline = time.monotonic() + 120
    while not ready() and time.monotonic() < deadline and not job.future.done():
        time.sleep(0.002)
    assert ready()
    for _ in range(times):
        scorer.interrupt()
    return scorer.finish(job)


def _cached(folder) -> int:
    from ragjudge.cache import ResponseCache

    cache = ResponseCache(folder)
    try:
        return cache.info()["entries"]
    finally:
        cache.close()


def _landmarks(n: int):
    import pandas as pd

    from helpers import landmark_rows

    return pd.DataFrame(landmark_rows(n))


# peer report (issue 60 item 17): SIGTERM cancelled the calls already sent, so the re-run paid their replies again
# (44 calls for 40 rows)
@pytest.mark.timing  # waits on real time: out of `make unit`, in `make check` and `make test`
def test_an_interrupt_waits_for_the_calls_in_flight_and_caches_their_replies(tmp_path):
    frame = _landmarks(20)
    settings = {"metrics": ["sufficiency"], "judge": {"model": "openai/fake-judge", "concurrency": 2}, "cache": {"dir": str(tmp_path)}}
    first_judge = FakeTransport(latency=0.3)
    with Scorer(**settings, transport=first_judge) as scorer:
        first = _interrupted(scorer, frame, lambda: scorer.model.on_wire == 2)  # the probe answered, two calls in flight
    ok = int((first.frame["sufficiency_status"] == "ok").sum())
    assert ok >= 3 and first_judge.calls == ok == first.summary.provider_calls == _cached(tmp_path)  # each request sent: its reply kept
    assert set(first.frame.loc[first.frame["sufficiency_status"] != "ok", "sufficiency_error"]) == {"interrupted"}
    again = FakeTransport()
    with Scorer(**settings, transport=again) as scorer:
        second = scorer.score(frame)
    assert (second.frame["sufficiency_status"] == "ok").all()
    assert again.calls == 20 - ok and first_judge.calls + again.calls == 20  # no reply paid twice


# issue 60 item 17, a second shape: a row's samples in flight at the interrupt (judge.samples) were cancelled with it
@pytest.mark.timing  # waits on real time: out of `make unit`, in `make check` and `make test`
def test_an_interrupt_keeps_the_samples_in_flight(tmp_path):
    frame = _landmarks(4)
    settings = {"metrics": ["sufficiency"], "judge": {"model": "openai/fake-judge", "concurrency": 3, "samples": 3}, "cache": {"dir": str(tmp_path)}}
    first_judge = FakeTransport(latency=0.3)
    with Scorer(**settings, transport=first_judge) as scorer:
        first = _interrupted(scorer, frame, lambda: scorer.model.on_wire == 3)
    assert first_judge.calls == first.summary.provider_calls == _cached(tmp_path) >= 4
    again = FakeTransport()
    with Scorer(**settings, transport=again) as scorer:
        scorer.score(frame)
    assert first_judge.calls + again.calls == 4 * 3  # every sample paid once


# peer report (issue 60 item 18): Ctrl-C reported 'provider calls: 6' when 12 replies had come back (and were cached):
# a row interrupted between completeness's two calls dropped what its first call had cost
@pytest.mark.timing  # waits on real time: out of `make unit`, in `make check` and `make test`
def test_an_interrupted_row_counts_the_replies_it_received(tmp_path):
    frame = _landmarks(12)
    settings = {"metrics": ["completeness"], "judge": {"model": "openai/fake-judge", "concurrency": 2}, "cache": {"dir": str(tmp_path)}}
    judge = FakeTransport(latency=0.5)
    judge.price_per_token = 1e-6
    with Scorer(**settings, transport=judge) as scorer:
        # twice: the second interrupt cancels the two calls in flight (second steps among them) at once
        scored = _interrupted(scorer, frame, lambda: judge.calls >= 5 and scorer.model.on_wire == 2, times=2)
        spent = scorer.model.spent
    assert scored.summary.provider_calls == judge.calls  # every request: those cancelled in flight too
    assert _cached(tmp_path) == judge.calls - 2 >= 3  # every reply received (the two cancelled brought none)
    assert scored.summary.cost_usd == pytest.approx(spent) and spent > 0
    assert scored.frame["completeness_cost_usd"].sum() == pytest.approx(spent)  # the table's rows hold it too


# issue 60 item 18, a second shape: a row's samples already answered when the rest were cancelled were not counted
@pytest.mark.timing  # waits on real time: out of `make unit`, in `make check` and `make test`
def test_an_interrupted_row_counts_its_samples_already_answered(tmp_path):
    frame = _landmarks(1)
    settings = {"metrics": ["sufficiency"], "judge": {"model": "openai/fake-judge", "concurrency": 2, "samples": 3}, "cache": {"dir": str(tmp_path)}}
    judge = FakeTransport(latency=0.5)
    judge.price_per_token = 1e-6
    with Scorer(**settings, transport=judge) as scorer:
        # the probe (sample 0) answered, samples 1 and 2 in flight: two interrupts cancel them
        scored = _interrupted(scorer, frame, lambda: judge.calls == 3 and scorer.model.on_wire == 2, times=2)
        spent = scorer.model.spent
    assert list(scored.frame["sufficiency_error"]) == ["interrupted"]
    assert _cached(tmp_path) == 1 and scored.summary.provider_calls == 3  # the reply received; the three requests sent
    assert scored.summary.cost_usd == pytest.approx(spent) and spent > 0
    assert list(scored.frame["sufficiency_cached"]) == [False] and scored.frame["sufficiency_prompt_tokens"].iloc[0] > 0


# issue 60 item 18, a third shape: an unreadable reply, paid, then its re-ask cancelled in flight: the first reply's
# tokens and cost were dropped with the re-ask
@pytest.mark.timing  # waits on real time: out of `make unit`, in `make check` and `make test`
def test_an_interrupted_re_ask_counts_the_reply_it_asked_again_about(tmp_path):
    settings = {"metrics": ["sufficiency"], "judge": {"model": "openai/fake-judge"}, "cache": {"dir": str(tmp_path)}}
    judge = FakeTransport(latency=0.5)
    judge.price_per_token = 1e-6
    judge.replies.append("no JSON here")
    with Scorer(**settings, transport=judge) as scorer:
        scored = _interrupted(scorer, _landmarks(1), lambda: judge.calls == 2 and scorer.model.on_wire == 1, times=2)
        spent = scorer.model.spent
    assert list(scored.frame["sufficiency_error"]) == ["interrupted"]
    assert scored.summary.provider_calls == 2 and _cached(tmp_path) == 0
    assert spent > 0 and scored.summary.cost_usd == pytest.approx(spent)
    first_prompt = sum(len(str(m["content"])) for m in judge.requests[0]["messages"]) // 4  # as the fake counts the first reply's
    assert scored.frame["sufficiency_prompt_tokens"].iloc[0] == first_prompt > 0
    assert scored.frame["sufficiency_completion_tokens"].iloc[0] == len("no JSON here") // 4


# issue 60 item 18, a fourth shape: a panel's members interrupted between completeness's two calls: what each member's
# first call cost was dropped with the panel's verdict
@pytest.mark.timing  # waits on real time: out of `make unit`, in `make check` and `make test`
def test_an_interrupted_panel_row_counts_its_members_replies(tmp_path):
    settings = {"metrics": ["completeness"], "cache": {"dir": str(tmp_path)},
                "judge": {"model": "openai/fake-judge", "panel": ["openai/fake-judge", "openai/fake-lenient"]}}
    judge = FakeTransport(latency=0.5)
    judge.price_per_token = 1e-6
    with Scorer(**settings, transport=judge) as scorer:
        calls = lambda: sum(member.calls for member in judge.members.values())  # noqa: E731
        # each member's first call answered, its second in flight: two interrupts cancel them
        scored = _interrupted(scorer, _landmarks(1), lambda: calls() == 4 and scorer.model.on_wire == 2, times=2)
        spent = scorer.model.spent
    assert list(scored.frame["completeness_error"]) == ["interrupted"]
    assert _cached(tmp_path) == 2 and scored.summary.provider_calls == 4  # two replies received; four requests sent
    assert spent > 0 and scored.summary.cost_usd == pytest.approx(spent)
