"""A JSON Lines file is judged from its rows as read (``ragjudge.io.rows``), before pandas is
imported, and framed when its verdicts are (issue 51): the outputs are those of the DataFrame
reader, and the first call goes out before pandas is loaded."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pyarrow.parquet as pq
import pytest

from ragjudge import load_config
from ragjudge.run import engine as pipeline
from ragjudge.io import readers
from ragjudge.reports.summary import summary_dict
from ragjudge.run import evaluate

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


@pytest.mark.parametrize("suffix", ["jsonl", "csv", "parquet"])
def test_json_lines_judged_as_rows_write_what_the_dataframe_reader_writes(server, tmp_path, monkeypatch, suffix):
    source = tmp_path / "rows.jsonl"
    _write(source, ROWS)
    # jobs of 4 rows in chunks of 7: the first chunk is sliced into pieces (iloc), the second chunk adds a column.
    monkeypatch.setattr(pipeline, "JOB_ROWS_MIN", 4)
    config = load_config(None, {"judge": {"model": "openai/fake-judge", "api_base": server.url, "concurrency": 1},
                                "cache": {"enabled": False}, "chunk_size": 7, "metrics": ["sufficiency", "completeness"]})
    as_rows = tmp_path / f"as_rows.{suffix}"
    first = evaluate(str(source), config, output=str(as_rows))
    calls = server.calls
    with monkeypatch.context() as patched:  # the same run through the DataFrame reader, as before issue 51
        patched.setattr(pipeline, "jsonl_chunks", readers._jsonl_chunks)
        as_frames = tmp_path / f"as_frames.{suffix}"
        second = evaluate(str(source), config, output=str(as_frames))
    assert first.summary.rows == second.summary.rows == len(ROWS)
    assert calls == server.calls - calls
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


def _config(server, tmp_path, cache: bool = False):
    return load_config(None, {"judge": {"model": "openai/fake-judge", "api_base": server.url, "concurrency": 4},
                              "cache": {"enabled": cache, "dir": str(tmp_path / "cache")}, "metrics": ["sufficiency"]})


def test_a_malformed_line_after_the_first_rows_is_named(server, tmp_path):
    from ragjudge.errors import InputError

    rows = [{"id": i, "request": f"Question {i}?", "context": [f"Passage {i}."]} for i in range(150)]
    source = tmp_path / "rows.jsonl"
    _write(source, rows)
    good = source.read_text(encoding="utf-8")
    source.write_text(good.replace('{"id": 140,', '{"id": 140 ', 1), encoding="utf-8")
    with pytest.raises(InputError, match=r"line 141: not valid JSON"):
        evaluate(str(source), _config(server, tmp_path, cache=True))
    source.write_text(good, encoding="utf-8")
    result = evaluate(str(source), _config(server, tmp_path, cache=True))
    assert result.summary.metrics["sufficiency"].ok == 150 and server.calls == 150
