"""A JSON Lines file is judged from its rows as read (``ragjudge.io.rows``), before pandas is
imported, and framed when its verdicts are (issue 51): the outputs are those of the DataFrame
reader, and the first call goes out before pandas is loaded."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import threading
import time

import pyarrow.parquet as pq
import pytest

from ragjudge import load_config
from ragjudge.run import engine as pipeline
from ragjudge.io import readers
from ragjudge.reports.summary import summary_dict
from ragjudge.run import evaluate
from ragjudge.scoring import Scorer

# rows whose columns differ between chunks and within one, with values of every JSON kind: a key
# first seen in a later piece of the first chunk (``topic``), one first seen in a later chunk
# (``late``), a row of no keys, ids of two kinds, a lone surrogate escape, nested objects
ROWS = [
    {"id": 1, "request": "Who wrote Hamlet?", "context": ["Hamlet is a play by William Shakespeare."], "expected_facts": ["Shakespeare"],
     "response": "Shakespeare wrote it."},
    {"id": 2, "request": "What is 2+2?", "context": "Two plus two is four.", "expected_response": "4", "score": 0.5, "response": "4"},
    {"id": "three", "request": "Capital of France?", "context": [{"content": "Paris is the capital of France.", "doc": 7}]},
    {},
    {"id": 5, "request": "Boiling point of water?", "context": ["Water boils at 100 C at sea level."], "flag": True, "n": None},
    {"id": 6, "request": "Largest planet?", "context": ["Jupiter is the largest planet."], "topic": "space", "meta": {"a": [1, 2]}},
    {"id": 7, "request": "Half an emoji \ud83d here?", "context": ["Text with \ud83d half a pair."]},
    {"id": 8, "request": "Speed of light?", "context": ["About 300,000 km/s."], "big": 2**70, "topic": None},
    {"id": 9, "request": "Who painted the Mona Lisa?", "context": ["Leonardo da Vinci painted it."], "late": [1.5, "x"],
     "expected_response": "Leonardo da Vinci", "response": "Da Vinci"},
    {"id": 10, "request": "", "context": []},
    {"id": 11, "request": "Chemical symbol of gold?", "context": ["Gold is Au."], "expected_facts": ["Au"], "late": {"k": 1}},
]


def _write(path, rows):
    with open(path, "w", encoding="utf-8") as handle:
        for row in rows:
            handle.write(json.dumps(row) + "\n")


@pytest.mark.parametrize("head", [100, 3], ids=["first-chunk-read-whole", "first-row-ahead"])
@pytest.mark.parametrize("suffix", ["jsonl", "csv", "parquet"])
def test_json_lines_judged_as_rows_write_what_the_dataframe_reader_writes(server, tmp_path, monkeypatch, suffix, head):
    source = tmp_path / "rows.jsonl"
    _write(source, ROWS)
    # jobs of 4 rows in chunks of 7: the first chunk is sliced into pieces (iloc), the second chunk adds a column.
    # With a head of 3 rows, the first row's calls go ahead before the rest of the first chunk is read, which
    # adds a column (``topic``, row 6) that the first row's job did not see
    monkeypatch.setattr(pipeline, "JOB_ROWS_MIN", 4)
    monkeypatch.setattr(pipeline.READ_AHEAD, "head_rows", head)
    config = load_config(None, {"judge": {"model": "openai/fake-judge", "api_base": server.url, "concurrency": 1},
                                "cache": {"enabled": False}, "chunk_size": 7, "metrics": ["sufficiency", "completeness"]})
    ahead = []
    drop = Scorer.drop
    monkeypatch.setattr(Scorer, "drop", lambda self, job: ahead.append(job) or drop(self, job))
    as_rows = tmp_path / f"as_rows.{suffix}"
    first = evaluate(str(source), config, output=str(as_rows))
    assert len(ahead) == (head < 7)  # a job went ahead where the head is part of the first chunk
    calls = server.calls
    with monkeypatch.context() as patched:  # the same run through the DataFrame reader, as before issue 51
        patched.setattr(pipeline, "jsonl_chunks", readers._jsonl_chunks)
        patched.setattr(pipeline.READ_AHEAD, "head_rows", 10**9)  # and the whole first chunk read before any call
        as_frames = tmp_path / f"as_frames.{suffix}"
        second = evaluate(str(source), config, output=str(as_frames))
    assert first.summary.rows == second.summary.rows == len(ROWS)
    assert calls == server.calls - calls  # the calls made ahead are the first row's own: none made twice
    assert summary_dict(first.summary, first.gate) == summary_dict(second.summary, second.gate)
    if suffix == "parquet":
        a, b = pq.read_table(as_rows), pq.read_table(as_frames)
        assert a.schema == b.schema
        assert a.equals(b)
        assert a.column_names[:3] == ["id", "request", "context"] and "late" in a.column_names
    else:
        assert as_rows.read_bytes() == as_frames.read_bytes()
    assert b"\xef\xbf\xbd" in as_rows.read_bytes() or suffix == "parquet"  # the lone surrogate written as U+FFFD


@pytest.mark.integration  # ragjudge in its own process
def test_a_json_lines_run_makes_its_first_call_before_pandas_is_imported(tmp_path):
    # in a fresh interpreter (the test process has pandas already): the fake server, in the same
    # process, notes at each call whether pandas is loaded yet
    source = tmp_path / "rows.jsonl"
    _write(source, [{"id": i, "request": f"Question {i}?", "context": [f"Passage {i}."]} for i in range(40)])
    script = textwrap.dedent(f"""
        import json, sys
        from ragjudge.fakeserver import FakeJudgeServer

        loaded = []

        class Noting(FakeJudgeServer):
            async def _chat(self, request):
                loaded.append("pandas" in sys.modules and hasattr(sys.modules["pandas"], "DataFrame"))
                return await super()._chat(request)

        from ragjudge import load_config
        from ragjudge.run import evaluate

        with Noting() as server:
            config = load_config(None, {{"judge": {{"model": "openai/fake-judge", "api_base": server.url, "concurrency": 4}},
                                        "cache": {{"enabled": False}}, "metrics": ["sufficiency"]}})
            result = evaluate({str(source)!r}, config, output={str(tmp_path / "out.parquet")!r})
        print(json.dumps({{"first": loaded[0], "calls": len(loaded), "ok": result.summary.metrics["sufficiency"].ok,
                          "pandas_now": "pandas" in sys.modules}}))
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen == {"first": False, "calls": 40, "ok": 40, "pandas_now": True}


@pytest.mark.integration  # ragjudge in its own process
def test_a_json_lines_file_is_judged_while_another_thread_imports_pandas(tmp_path):
    # a breaker's find: a half-imported pandas in sys.modules (another thread's import) was taken for pandas
    # ("partially initialized module 'pandas' has no attribute 'DataFrame'"); the run waits for the import instead
    source = tmp_path / "rows.jsonl"
    _write(source, [{"id": i, "request": f"Question {i}?", "context": [f"Passage {i}."]} for i in range(5)])
    script = textwrap.dedent(f"""
        import sys, threading
        from ragjudge import load_config
        from ragjudge.fakeserver import FakeJudgeServer
        from ragjudge.run import evaluate

        with FakeJudgeServer() as server:
            config = load_config(None, {{"judge": {{"model": "openai/fake-judge", "api_base": server.url}}, "cache": {{"enabled": False}},
                                        "metrics": ["sufficiency"]}})
            threading.Thread(target=lambda: __import__("pandas"), daemon=True).start()
            while "pandas" not in sys.modules:
                pass
            half = not hasattr(sys.modules["pandas"], "DataFrame")  # the import is under way
            result = evaluate({str(source)!r}, config)
        print(half, result.summary.metrics["sufficiency"].ok)
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["True", "5"]


@pytest.mark.parametrize("first", [None, 1, 3, 4, 7, 8, 30])
def test_the_first_rows_read_apart_leave_every_chunk_as_it_was(tmp_path, first):
    from ragjudge.io import jsonl_rows

    rows = [{"i": i} for i in range(19)]
    source = tmp_path / "rows.jsonl"
    _write(source, rows)
    lists = list(jsonl_rows(str(source), 8, first=first))
    if first is not None and first < 8:  # 4: the rest of the first chunk is as long as its head, and the next chunk whole
        assert lists == [rows[:first], rows[first:8], rows[8:16], rows[16:]]
    else:
        assert lists == [rows[:8], rows[8:16], rows[16:]]
    short = tmp_path / "short.jsonl"
    _write(short, rows[:2])
    assert list(jsonl_rows(str(short), 8, first=3)) == [rows[:2]]


def _config(server, tmp_path, cache: bool = False):
    return load_config(None, {"judge": {"model": "openai/fake-judge", "api_base": server.url, "concurrency": 4},
                              "cache": {"enabled": cache, "dir": str(tmp_path / "cache")}, "metrics": ["sufficiency"]})


def test_the_first_call_goes_out_before_the_rest_of_the_first_chunk_is_read(server, tmp_path):
    # issue 51: the run's first call (the probe, which goes alone) leaves once the first READ_AHEAD.head_rows rows are
    # read and planned, and the rest of the first chunk (here all 300 rows) is read while it is in flight.
    # A pipe gives the rest only once the server has seen a call: a run that read the whole chunk first
    # would make none, and the writer gives up after 30 s
    fifo = tmp_path / "rows.jsonl"
    os.mkfifo(fifo)
    rows = [{"id": i, "request": f"Question {i}?", "context": [f"Passage {i}."]} for i in range(300)]
    seen = []

    def feed():
        with open(fifo, "w", encoding="utf-8") as handle:
            handle.writelines(json.dumps(row) + "\n" for row in rows[:pipeline.READ_AHEAD.head_rows])
            handle.flush()
            deadline = time.monotonic() + 30
            while server.calls == 0 and time.monotonic() < deadline:
                time.sleep(0.01)
            seen.append(server.calls)
            handle.writelines(json.dumps(row) + "\n" for row in rows[pipeline.READ_AHEAD.head_rows:])

    writer = threading.Thread(target=feed, daemon=True)
    writer.start()
    out = tmp_path / "out.parquet"
    result = evaluate(str(fifo), _config(server, tmp_path), output=str(out))
    writer.join(timeout=60)
    assert seen == [1]  # the probe, alone: the other calls wait for its answer
    assert result.summary.metrics["sufficiency"].ok == 300 and server.calls == 300
    first = pq.read_table(out).to_pylist()[0]
    assert first["id"] == 0 and first["sufficiency_cached"] is False and first["sufficiency_prompt_tokens"] > 0  # its own call, paid


def test_a_call_made_ahead_that_the_whole_first_chunk_does_not_make_is_said(server, tmp_path):
    # the first 100 rows map request=question; row 120 brings a request column, so the whole chunk maps
    # request=request and the first row (no request) is not judged: the call made for it went unused
    rows = [{"id": i, "question": f"Question {i}?", "context": [f"Passage {i}."]} for i in range(120)]
    rows.append({"id": 120, "request": "Asked as a request?", "context": ["A passage."]})
    source = tmp_path / "rows.jsonl"
    _write(source, rows)
    result = evaluate(str(source), _config(server, tmp_path))
    assert result.mapping.paths["request"] == "request"
    assert result.summary.metrics["sufficiency"].ok == 1 and server.calls == 2
    said = [note for note in result.notes if "before the rest of the first chunk was read" in note]
    assert said == ["note: 1 call(s) made for the first row before the rest of the first chunk was read were not made again by the "
                    "run (a column first seen further on changed the prompts): their replies are cached"]  # no price: no USD


def test_the_price_of_a_call_made_ahead_that_no_row_made_again_is_said(server, tmp_path):
    rows = [{"id": i, "question": f"Question {i}?", "context": [f"Passage {i}."]} for i in range(120)]
    rows.append({"id": 120, "request": "Asked as a request?", "context": ["A passage."]})
    source = tmp_path / "rows.jsonl"
    _write(source, rows)
    config = load_config(None, {"judge": {"model": "openai/fake-judge", "api_base": server.url, "price": {"input_per_mtok": 1000.0,
                                          "output_per_mtok": 1000.0}}, "cache": {"enabled": False}, "metrics": ["sufficiency"]})
    result = evaluate(str(source), config)
    said = [note for note in result.notes if "before the rest of the first chunk was read" in note]
    cost = result.summary.cost_usd
    assert server.calls == 2 and cost is not None and cost > 0  # row 120's own call, in the summary
    assert len(said) == 1 and said[0].endswith("counted toward judge.max_cost but not in the table or its summary")
    assert "their replies are cached; USD 0." in said[0]


def test_a_call_made_ahead_that_failed_and_that_no_row_made_again_is_said_with_its_error(server, tmp_path):
    # a breaker's find: the note called a 401's reply cached
    rows = [{"id": i, "question": f"Question {i}?", "context": [f"Passage {i}."]} for i in range(120)]
    rows.append({"id": 120, "request": "Asked as a request?", "context": ["A passage."]})
    source = tmp_path / "rows.jsonl"
    _write(source, rows)
    server.auth_error = True
    result = evaluate(str(source), _config(server, tmp_path))
    assert result.exit_code == 3 and server.calls == 1  # the call made ahead was the run's probe: the key is refused once
    said = [note for note in result.notes if "before the rest of the first chunk was read" in note]
    assert len(said) == 1 and "authentication failed" in said[0] and "cached" not in said[0]


def test_a_malformed_line_after_the_first_rows_is_named_and_an_answered_call_made_ahead_is_not_paid_again(server, tmp_path, monkeypatch):
    from ragjudge.errors import InputError

    monkeypatch.setattr(pipeline.READ_AHEAD, "first_send_s", 60.0)  # the reading waits for the first call's answer (it comes at once)
    rows = [{"id": i, "request": f"Question {i}?", "context": [f"Passage {i}."]} for i in range(150)]
    source = tmp_path / "rows.jsonl"
    _write(source, rows)
    good = source.read_text(encoding="utf-8")
    source.write_text(good.replace('{"id": 140,', '{"id": 140 ', 1), encoding="utf-8")
    with pytest.raises(InputError, match=r"line 141: not valid JSON"):
        evaluate(str(source), _config(server, tmp_path, cache=True))
    assert server.calls == 1  # the first row's call had gone ahead; its reply is in the cache
    source.write_text(good, encoding="utf-8")
    result = evaluate(str(source), _config(server, tmp_path, cache=True))
    assert result.summary.metrics["sufficiency"].ok == 150 and server.calls == 150  # the first row's reply came from the cache


@pytest.mark.integration  # ragjudge in its own process
def test_a_malformed_line_after_the_first_rows_is_not_kept_waiting_for_the_call_made_ahead(tmp_path, monkeypatch):
    # a breaker's find: the error waited for the first row's call made ahead (122 s with a first call that hung)
    from ragjudge.errors import InputError
    from ragjudge.fakeserver import FakeJudgeServer

    monkeypatch.setattr(pipeline.READ_AHEAD, "first_send_s", 2.0)  # time enough for that call to reach the server, however loaded the machine

    rows = [{"id": i, "request": f"Question {i}?", "context": [f"Passage {i}."]} for i in range(150)]
    source = tmp_path / "rows.jsonl"
    _write(source, rows)
    source.write_text(source.read_text(encoding="utf-8").replace('{"id": 140,', '{"id": 140 ', 1), encoding="utf-8")
    with FakeJudgeServer() as server:
        server.hang_first, server.hang_seconds = 1, 60.0
        with pytest.raises(InputError, match=r"line 141: not valid JSON"):
            evaluate(str(source), _config(server, tmp_path))
        assert server.calls == 1 and server.in_flight == 1  # said while the first row's call still hangs: it was not waited for


def test_a_call_made_ahead_and_answered_before_an_interrupt_is_said_as_such(server):
    # a breaker's find: the note for the first row's call made ahead, answered, and not taken by a row because the run was
    # interrupted first gave the reason of another case ("a column first seen further on changed the prompts")
    from ragjudge.run.engine import RowChunk

    rows = [{"id": "a", "request": "Where is the tower?", "context": ["The tower is in Paris."]}]
    with Scorer(metrics=["sufficiency"], model="openai/fake-judge", api_base=server.url, cache={"enabled": False}) as scorer:
        plan = scorer.plan(RowChunk(rows).frame())
        scorer.model.prepare()
        job = scorer.submit(RowChunk(rows, list(rows[0])), plan.mapping, ahead=True)
        scorer.until_answered(job, 30)
        scorer.interrupt()
        said = scorer.drop(job)
    assert server.calls == 1
    assert said == ["note: 1 call(s) made for the first row before the rest of the first chunk was read were not made again by the "
                    "run (the run was interrupted before its rows took them): their replies are cached"]
