"""The library core (issue 12): ``Scorer`` over DataFrames, in scripts, event loops and
threads; ``output_schema``; ``Summary.merge``; the one-line ``ragjudge.score``."""

from __future__ import annotations

import asyncio
import json
import threading

import pandas as pd
import pytest

import ragjudge
from conftest import SAMPLE, read_jsonl
from helpers import sample_frame
from ragjudge.scoring import Scorer

FIELDS = ["id", "sufficiency_score", "sufficiency_status", "sufficiency_missing", "completeness_score", "completeness_status", "completeness_missing"]


def verdicts(frame: pd.DataFrame) -> list[tuple]:
    out = []
    for row in frame[FIELDS].to_dict("records"):
        out.append(tuple(None if v is pd.NA or (isinstance(v, float) and v != v) else (list(v) if hasattr(v, "tolist") or isinstance(v, list) else v)
                         for v in row.values()))
    return out


@pytest.fixture
def cli_verdicts(run_cli, tmp_path):
    out = tmp_path / "cli.jsonl"
    result = run_cli(["score", str(SAMPLE / "rag_eval.jsonl"), "-o", str(out), "--min-pass-rate", "0"])
    assert result.code == 0, result.stderr
    return verdicts(pd.DataFrame(read_jsonl(out)))


def test_scorer_in_a_running_event_loop_and_from_three_threads_gives_the_cli_verdicts(cli_verdicts, server, tmp_path):
    frame = sample_frame()
    settings = {"model": "openai/fake-judge", "api_base": server.url, "cache": {"dir": str(tmp_path / "lib-cache")}}

    async def in_a_loop() -> tuple:
        with Scorer(**settings) as scorer:
            awaited = await scorer.ascore(frame)
            blocking = scorer.score(frame)  # the sync form, called while this loop runs
        return awaited, blocking

    awaited, blocking = asyncio.run(in_a_loop())
    assert verdicts(awaited.frame) == cli_verdicts
    assert verdicts(blocking.frame) == cli_verdicts
    assert awaited.summary.metrics["sufficiency"].ok == 24

    results: list = [None] * 3
    with Scorer(**{**settings, "cache": {"enabled": False}}) as scorer:
        def work(index: int) -> None:
            results[index] = scorer.score(frame)

        threads = [threading.Thread(target=work, args=(i,)) for i in range(3)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
    for scored in results:
        assert verdicts(scored.frame) == cli_verdicts
    # identical calls from the three threads were made once (each row's calls are shared)
    assert sum(s.summary.provider_calls for s in results) == 37


def test_score_in_one_line_and_load_config_keywords(server, tmp_path):
    frame = sample_frame().head(4)
    scored = ragjudge.score(frame, metrics=["sufficiency"], model="openai/fake-judge", api_base=server.url,
                            cache={"dir": str(tmp_path / "c")})
    assert list(scored.frame["sufficiency_status"]) == ["ok"] * 4
    assert scored.notes[0].startswith("columns: id, request, context")
    config = ragjudge.load_config(judge={"model": "openai/fake-judge", "concurrency": 3}, metrics=["completeness"])
    assert (config.judge.model, config.judge.concurrency, config.metrics) == ("openai/fake-judge", 3, ["completeness"])
    assert ragjudge.load_config(model="openai/x", concurrency=2).judge.concurrency == 2


def test_evaluate_takes_a_dataframe(server, tmp_path):
    frame = sample_frame()
    frame.index = [f"row{i}" for i in range(len(frame))]  # the caller's index is kept
    config = ragjudge.load_config(judge={"model": "openai/fake-judge", "api_base": server.url}, cache={"dir": str(tmp_path / "c")},
                                  chunk_size=7, metrics=["sufficiency"])
    result = ragjudge.evaluate(frame, config, output=str(tmp_path / "o.jsonl"), keep_table=True)
    assert list(result.table.index) == list(frame.index)
    assert result.summary.rows == 32 and result.gate.exit_code in (0, 1)
    assert [json.loads(line)["id"] for line in open(tmp_path / "o.jsonl")] == list(frame["id"])


def test_evaluate_takes_a_config_path_a_dict_or_none_as_score_does(server, tmp_path, monkeypatch):
    # a new user's find: evaluate(path, "default") raised AttributeError: 'str' object has no attribute 'model_dump'
    monkeypatch.setenv("OPENAI_BASE_URL", server.url)
    source = str(SAMPLE / "rag_eval.jsonl")
    written = tmp_path / "my.yaml"
    written.write_text(f"judge:\n  model: openai/fake-judge\n  api_base: {server.url}\ncache:\n  dir: {tmp_path / 'c'}\n"
                       "metrics: [sufficiency]\ngate:\n  min_pass_rate: 0.4\n")
    by_path = ragjudge.evaluate(source, str(written))
    by_dict = ragjudge.evaluate(source, {"judge": {"model": "openai/fake-judge", "api_base": server.url}, "cache": {"dir": str(tmp_path / "c")},
                                         "metrics": ["sufficiency"], "gate": {"min_pass_rate": 0.4}})
    assert by_path.summary.rows == by_dict.summary.rows == 32
    assert by_path.summary.metrics["sufficiency"].passed == by_dict.summary.metrics["sufficiency"].passed == 11
    assert by_path.exit_code == by_dict.exit_code == by_path.gate.exit_code == 0
    assert ragjudge.evaluate(source, "default", output=None, sample=1, seed=1).summary.rows == 32  # the bundled config by name


def test_frames_the_scorer_cannot_name_get_the_fix_and_lists_of_rows_work(server, tmp_path):
    # an int column name raised AttributeError: 'int' object has no attribute 'endswith';
    # metrics="sufficiency" was read as the metrics s, u, f, ...; a list of dicts raised AttributeError
    from ragjudge.errors import InputError

    frame = sample_frame().head(2)
    settings = {"model": "openai/fake-judge", "api_base": server.url, "cache": {"dir": str(tmp_path / "c")}}
    scored = ragjudge.score(frame.to_dict("records"), metrics="sufficiency", **settings)
    assert list(scored.frame["sufficiency_status"]) == ["ok", "ok"] and list(scored.summary.metrics) == ["sufficiency"]
    cases = {
        "int": (frame.assign(**{"7": 1}).rename(columns={"7": 7}), "column names must be text; 7 is not"),
        "twice": (pd.concat([frame, frame[["request"]]], axis=1), "the column name(s) request appear more than once"),
        "multi": (frame.set_axis(pd.MultiIndex.from_tuples([(c, "x") for c in frame.columns]), axis=1), "MultiIndex columns; flatten them"),
        "text": ("data.jsonl", "score takes a pandas DataFrame (or a list of dicts), not str"),
    }
    for name, (bad, message) in cases.items():
        with pytest.raises(InputError) as info:
            ragjudge.score(bad, metrics=["sufficiency"], **settings)
        assert message in str(info.value), name
    with pytest.raises(InputError, match="column names must be text"):
        ragjudge.evaluate(cases["int"][0], ragjudge.load_config(**settings))
