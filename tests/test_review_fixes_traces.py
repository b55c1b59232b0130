"""Review fixes on the traces pages and readers (p4-fixb): install lines, trace-file errors, an
empty experiment, row names of trace rows, the fake server on a busy port."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import sys
from pathlib import Path

import pytest

from ragjudge.errors import ConfigError

ROOT = Path(__file__).resolve().parents[1]


# -- 2. install lines: from the checkout, never the PyPI name (another project's) ---------------
def test_no_page_installs_the_pypi_name_with_an_extra():
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    found = [f"{p.name}: {m.group(0)}" for p in pages for m in re.finditer(r"ragjudge\[\w+\]", p.read_text(encoding="utf-8"))]
    assert found == []
    assert 'pip install ".[mlflow]"' in (ROOT / "docs" / "from-mlflow.md").read_text(encoding="utf-8")
    assert 'pip install ".[phoenix]"' in (ROOT / "docs" / "from-phoenix.md").read_text(encoding="utf-8")


def test_the_missing_mlflow_error_names_the_checkout_install(monkeypatch):
    import ragjudge.traces.mlflow as mt

    monkeypatch.setitem(sys.modules, "mlflow", None)  # import mlflow raises ImportError
    with pytest.raises(ConfigError) as err:
        mt._mlflow()
    assert str(err.value) == 'reading or writing MLflow traces needs MLflow: pip install ".[mlflow]" in a ragjudge checkout'


# -- 3. --input-format mlflow-traces on what is not a trace file: say what it is ---------------
needs_mlflow = pytest.mark.skipif(importlib.util.find_spec("mlflow") is None, reason="the [mlflow] extra is not installed")
SHAPE = "one Trace.to_json() per line, or a JSON array of them"


@needs_mlflow
@pytest.mark.parametrize("name, text, said", [
    ("a.jsonl", '{"request": "q", "context": ["c"]}\n{"request": "r", "response": "s"}\n',
     "a.jsonl is a table (2 row(s); columns request, context, response), not an MLflow trace file "
     f"({SHAPE}); to score it as a table, drop --input-format mlflow-traces"),
    ("empty.jsonl", "", f"empty.jsonl is empty: no MLflow traces in it (a trace file holds {SHAPE})"),
    ("garbage.json", '[1,"x",null,{}]',
     "garbage.json: item 1 is 1, not an MLflow trace (Trace.to_json()'s object, with info.trace_id and data.spans; "
     f"a trace file holds {SHAPE})"),
])
def test_a_forced_trace_format_on_another_file_says_what_the_file_is(run_cli, tmp_path, monkeypatch, name, text, said):
    monkeypatch.chdir(tmp_path)
    Path(name).write_text(text, encoding="utf-8")
    result = run_cli(["score", name, "--input-format", "mlflow-traces", "-o", "out.jsonl"], judge=False)
    assert result.code == 2 and "Traceback" not in result.stderr
    assert result.stderr.strip() == f"error: {said}"
    assert not Path("out.jsonl").exists()


@needs_mlflow
def test_read_traces_names_the_first_item_that_is_not_a_trace(tmp_path):
    from ragjudge.errors import InputError
    from ragjudge.traces import mlflow as mt

    cases = {
        "rows.json": ('[{"request": "q"}, {"x": 1}]', "rows.json is a table (2 row(s); columns request, x), not an MLflow trace file"),
        "lines.jsonl": ('\n"x"\n{"request": "q"}\n', 'lines.jsonl: line 2 is "x", not an MLflow trace'),
        "empty.json": ("[]\n", "empty.json is an empty JSON array: no MLflow traces in it"),
        "blank.jsonl": ("\n  \n", "blank.jsonl is empty: no MLflow traces in it"),
        "nulls.json": ("[null, 1]", "nulls.json: item 1 is null, not an MLflow trace"),
        "keys.json": ('[{"info": {}, "x": 2}, 3]', "keys.json: item 1 is an object with keys info, x, not an MLflow trace"),
        "notes.txt": ("some notes\n", f"notes.txt is neither an MLflow trace file ({SHAPE}) nor a table: line 1 is not JSON"),
        "t.csv": ("a,b\n1,2\n", "t.csv is a table (.csv file), not an MLflow trace file"),
    }
    for name, (text, said) in cases.items():
        path = tmp_path / name
        path.write_text(text, encoding="utf-8")
        with pytest.raises(InputError) as err:
            mt.read_traces(str(path))
        assert str(err.value).startswith(f"{path}{said[len(name):]}" if said.startswith(name) else said), (name, str(err.value))


# -- 4. an experiment with nothing to judge: exit 2 saying so -------------------------------------
@pytest.fixture
def stores(tmp_path):
    """A new SQLite store with an empty experiment and one holding one OK trace."""
    import mlflow

    before = mlflow.get_tracking_uri()
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    client = mlflow.MlflowClient(uri)
    client.create_experiment("empty-exp", artifact_location=(tmp_path / "a1").as_uri())
    full = client.create_experiment("full-exp", artifact_location=(tmp_path / "a2").as_uri())
    mlflow.set_tracking_uri(uri)
    mlflow.set_experiment(experiment_id=full)

    @mlflow.trace
    def app(query: str) -> dict:
        return {"response": "Paris"}

    try:
        app("What is the capital of France?")
        mlflow.flush_trace_async_logging()
    finally:
        mlflow.set_tracking_uri(before)
    return uri


@needs_mlflow
def test_an_empty_experiment_exits_2_saying_it_holds_no_traces(run_cli, stores, tmp_path):
    result = run_cli(["score", "mlflow:empty-exp", "--mlflow-tracking-uri", stores, "-o", str(tmp_path / "out.jsonl")], judge=False)
    assert result.code == 2 and "Traceback" not in result.stderr
    assert result.stderr.strip().startswith(f"error: the MLflow experiment 'empty-exp' in {stores} holds no traces: nothing to judge")
    assert "the input has no rows" not in result.stderr and not (tmp_path / "out.jsonl").exists()


@needs_mlflow
def test_a_filter_that_matches_no_trace_says_so_and_the_library_raises(run_cli, stores, tmp_path):
    from ragjudge.errors import InputError
    from ragjudge.traces import mlflow as mt

    result = run_cli(["score", "mlflow:full-exp", "--mlflow-tracking-uri", stores, "--mlflow-filter", "attributes.status = 'ERROR'",
                      "-o", str(tmp_path / "out.jsonl")], judge=False)
    assert result.code == 2
    assert result.stderr.strip() == (f"error: no trace of the MLflow experiment 'full-exp' in {stores} matched the filter "
                                     "\"attributes.status = 'ERROR'\": nothing to judge; loosen the filter (--mlflow-filter)")
    with pytest.raises(InputError, match="'empty-exp' in .* holds no traces"):
        mt.read_traces("mlflow:empty-exp", tracking_uri=stores)
    assert len(mt.read_traces("mlflow:full-exp", tracking_uri=stores)) == 1  # the store is read: one trace, one row


# -- 5. trace rows are named by trace and span in every report --------------------------------
def test_trace_rows_carry_an_id_of_trace_and_span():
    from ragjudge.traces.spans import COLUMNS, SpanView, TraceView, rows_frame

    with_two = TraceView("tr-1", "OK", [SpanView("root", None, "app", "CHAIN", {"query": "q"}, {"response": "r"}, 0),
                                        SpanView("s1", "root", "retrieve", "RETRIEVER", None, ["a"], 1),
                                        SpanView("s2", "root", "rerank", "RETRIEVER", None, ["b"], 2)])
    without = TraceView("tr-2", "OK", [SpanView("root", None, "app", "CHAIN", {"query": "q"}, {"response": "r"}, 0)])
    frame = rows_frame([with_two, without])
    assert frame["id"].tolist() == ["tr-1/s1", "tr-1/s2", "tr-2"]
    assert list(frame.columns) == list(COLUMNS) and list(COLUMNS)[:4] == ["trace_id", "span_id", "span_name", "id"]


@needs_mlflow
def test_the_failing_rows_and_junit_name_a_trace_row_by_trace_and_span(run_cli, tmp_path):
    import xml.etree.ElementTree as ET

    traces = [json.loads(line) for line in (ROOT / "sample_data" / "mlflow_traces.jsonl").read_text().splitlines() if line.strip()]
    result = run_cli(["score", str(ROOT / "sample_data" / "mlflow_traces.jsonl"), "-m", "sufficiency", "-o", str(tmp_path / "s.jsonl"),
                      "--junit", str(tmp_path / "junit.xml")])
    assert result.code == 1, result.stderr
    rows = [json.loads(line) for line in (tmp_path / "s.jsonl").read_text().splitlines()]
    assert [r["id"] for r in rows] == [f"{r['trace_id']}/{r['span_id']}" for r in rows]
    assert {r["trace_id"] for r in rows} == {t["info"]["trace_id"] for t in traces}
    (failing,) = [r for r in rows if r["sufficiency_score"] == 0.0]
    assert f"sufficiency {failing['trace_id']}/{failing['span_id']}: score 0" in result.stderr
    assert "row 2" not in result.stderr
    names = sorted(case.get("name") for case in ET.parse(tmp_path / "junit.xml").iter("testcase") if case.get("classname") != "gate")
    assert names == sorted(r["id"] for r in rows)


# -- 6. the fake server on a port in use: exit 2 with one line, not a live process -------------
@pytest.fixture
def busy_port():
    import socket

    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        yield held.getsockname()[1]


def test_the_fake_server_exits_2_on_a_port_in_use(busy_port):
    import subprocess

    result = subprocess.run([sys.executable, "-m", "ragjudge.fakeserver", "--port", str(busy_port)], capture_output=True, text=True,
                            timeout=120, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr == (f"fakeserver: port {busy_port} on 127.0.0.1 is already in use; pick a free one with --port N "
                             "(--port 0 picks one)\n")


def test_starting_the_fake_server_on_a_port_in_use_raises_at_once(busy_port):
    import errno
    import threading

    from ragjudge.fakeserver import FakeJudgeServer

    before = threading.active_count()
    with pytest.raises(OSError) as err:
        FakeJudgeServer(port=busy_port).start()
    assert err.value.errno == errno.EADDRINUSE
    with FakeJudgeServer(port=0) as free:  # a free port still starts, listening
        assert re.fullmatch(r"http://127\.0\.0\.1:\d+/v1", free.url) and not free.url.endswith(f":{busy_port}/v1")
    assert threading.active_count() <= before + 1
