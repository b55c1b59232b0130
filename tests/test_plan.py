"""Issue 30 item 1: one run plan. The set-up (first chunk, mapping, needs, notes, options) is
written once, in ``ragjudge.plan.RunPlan``; the Python API refuses what the CLI refuses; one
event callback reports a run."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from ragjudge.errors import ConfigError, InputError

GROUNDED = {"request": "Where is landmark 1?", "context": ["Landmark 1 stands in city 1."], "expected_facts": ["city 1"],
            "response": "In city 1."}
PRICE = {"input_per_mtok": 1.0, "output_per_mtok": 2.0}


def settings(server, tmp_path, **judge):
    from ragjudge import load_config

    return load_config(None, {"metrics": ["sufficiency"], "judge": {"model": "openai/fake-judge", "api_base": server.url, **judge},
                              "cache": {"dir": str(tmp_path / "c")}})


def row(i: int) -> dict:
    """Row ``i``: its own prompt (identical prompts share one call)."""
    return {"id": f"r{i}", "request": f"Where is landmark {i}?", "context": [f"Landmark {i} stands in city {i}."],
            "expected_facts": [f"city {i}"], "response": f"In city {i}."}


def frame(n: int = 3) -> pd.DataFrame:
    return pd.DataFrame([row(i) for i in range(n)])


# -- limit with sample: refused in Python as on the command line ----------------------------------

def test_evaluate_refuses_limit_with_sample_before_any_call(server, tmp_path):
    from ragjudge import evaluate

    with pytest.raises(ConfigError, match="limit= and sample= both choose the rows to judge"):  # its keyword arguments, not the flags
        evaluate(frame(), settings(server, tmp_path), limit=1, sample=2)
    assert server.calls == 0


def test_evaluate_of_a_file_and_the_dry_run_refuse_limit_with_sample_too(server, tmp_path):
    from ragjudge import evaluate
    from ragjudge.run import ScoreRequest, run

    source = tmp_path / "in.jsonl"
    source.write_text("".join(json.dumps(row(i)) + "\n" for i in range(4)))
    out = tmp_path / "out.jsonl"
    with pytest.raises(ConfigError, match="give one of them"):
        evaluate(str(source), settings(server, tmp_path), output=str(out), limit=3, sample=3)
    with pytest.raises(ConfigError, match="give one of them"):  # the dry run: a path inside the same run function
        run(ScoreRequest(str(source), dry_run=True, limit=3, sample=3), settings(server, tmp_path))
    assert server.calls == 0 and not out.exists()
    # a limit alone still judges the first rows, the others 'not sampled'
    result = evaluate(str(source), settings(server, tmp_path), output=str(out), limit=3)
    assert [json.loads(line)["sufficiency_status"] for line in out.read_text().splitlines()] == ["ok", "ok", "ok", "skipped"]
    assert result.summary.metrics["sufficiency"].unsampled == 1 and server.calls == 3


# -- a budget with no price: refused in Python as on the command line -----------------------------

def test_score_refuses_a_budget_for_a_model_with_no_price(server, tmp_path):
    import ragjudge

    with pytest.raises(ConfigError, match="openai/fake has no price in litellm's price table"):
        ragjudge.score(frame(), metrics=["sufficiency"], config=None,
                       judge={"model": "openai/fake", "api_base": server.url, "max_cost": 0.01})
    assert server.calls == 0


def test_a_budget_from_a_config_file_is_refused_by_scorer_and_evaluate_and_a_price_lets_it_trip(server, tmp_path):
    from ragjudge import Scorer, evaluate

    unpriced = settings(server, tmp_path, max_cost=0.000001)
    with pytest.raises(ConfigError, match="spending cannot be counted"):
        Scorer(unpriced)
    with pytest.raises(ConfigError, match="spending cannot be counted"):
        evaluate(frame(), unpriced)
    assert server.calls == 0
    # with a price the same budget is counted, and it trips: the rows past it are 'budget reached'
    priced = settings(server, tmp_path, max_cost=0.000001, price=PRICE, concurrency=1)
    result = evaluate(frame(6), priced)
    assert result.summary.budget_reached and result.gate.exit_code == 3
    assert 0 < result.summary.metrics["sufficiency"].ok < 6


# -- one event callback ----------------------------------------------------------------------------

def test_one_event_callback_hears_start_notes_progress_and_rows(server, tmp_path):
    from ragjudge import evaluate
    from ragjudge.plan import Note, Progress, Row, Start

    heard: list = []
    result = evaluate(frame(3), settings(server, tmp_path), on_event=heard.append, limit=2)
    starts = [e for e in heard if isinstance(e, Start)]
    assert starts == [Start(2)]  # the rows --limit chose: the row left out is no progress (it was Start(3), 3 steps)
    assert [e.text for e in heard if isinstance(e, Note)] == result.notes and result.notes
    assert sum(e.rows for e in heard if isinstance(e, Progress)) == 2
    rows = sorted((e.position, e.id, e.verdicts[0].status) for e in heard if isinstance(e, Row))
    assert rows == [(0, "r0", "ok"), (1, "r1", "ok"), (2, "r2", "skipped")]
    assert heard.index(starts[0]) > 0  # the mapping's notes come before judging starts


def test_the_older_keyword_callbacks_still_hear_their_own_kind(server, tmp_path):
    from ragjudge import evaluate
    from ragjudge.plan import Note

    totals, progressed, rows, heard = [], [], [], []
    result = evaluate(frame(2), settings(server, tmp_path), on_start=totals.append, on_progress=lambda n, cost: progressed.append(n),
                      on_row=lambda position, ident, verdicts: rows.append(ident), on_event=heard.append)
    assert totals == [2] and sum(progressed) == 2 and sorted(rows) == ["r0", "r1"]
    assert result.notes == [e.text for e in heard if isinstance(e, Note)] and result.notes


# -- the plan itself -------------------------------------------------------------------------------

def test_the_plan_reads_the_first_chunk_once_and_gives_every_chunk_back(server, tmp_path):
    from ragjudge import Scorer

    read: list[int] = []

    def chunks():
        for start in (0, 2, 4):
            read.append(start)
            yield frame(6).iloc[start:start + 2]

    with Scorer(settings(server, tmp_path)) as scorer:
        plan = scorer.plan(chunks(), "rows")
        assert read == [0]
        assert plan.mapping.paths["request"] == "request" and plan.notes == ["columns: id, request, context, expected_facts, expected_response=(none), response"]
        assert [list(c["id"]) for c in plan.chunks()] == [["r0", "r1"], ["r2", "r3"], ["r4", "r5"]] and read == [0, 2, 4]


def test_the_plan_notes_the_needs_and_the_replaced_columns_as_score_does(server, tmp_path):
    from ragjudge import Scorer
    from ragjudge import load_config

    data = frame(2).drop(columns=["response"]).assign(sufficiency_score=[0.1, 0.2])
    config = load_config(None, {"judge": {"model": "openai/fake-judge", "api_base": server.url}, "cache": {"enabled": False}})
    with Scorer(config) as scorer:
        plan = scorer.plan(data)
        scored = scorer.score(data)
    assert plan.replaced == ["sufficiency_score"]
    assert "note: the input's column(s) sufficiency_score are replaced in the output by this run's own" in plan.notes
    assert any("completeness needs" in note and "will judge no row" in note for note in plan.notes)
    assert [n for n in scored.notes if n in plan.input_notes] == plan.input_notes  # Scorer.score without a mapping: the same notes
    asked = load_config(None, {"metrics": ["completeness"], "judge": {"model": "openai/fake-judge", "api_base": server.url}})
    with Scorer(asked) as scorer, pytest.raises(InputError, match="completeness needs a response column"):
        scorer.plan(data)


def test_render_plans_as_a_run_and_spends_nothing_even_with_a_budget(tmp_path):
    from ragjudge.catalog import render
    from ragjudge import load_config

    source = tmp_path / "in.jsonl"
    source.write_text(json.dumps({**GROUNDED, "id": "a"}) + "\n")
    config = load_config(None, {"judge": {"model": "openai/fake", "max_cost": 1.0}})  # render makes no call: no price needed
    shown = render(str(source), config, "sufficiency", 1)
    assert shown.startswith("# sufficiency, row 1 (") and "--- user ---" in shown
    with pytest.raises(InputError, match="completeness needs a response column"):
        render(_without_response(tmp_path), config, "completeness", 1)


def _without_response(tmp_path) -> str:
    path = tmp_path / "bare.jsonl"
    path.write_text(json.dumps({k: v for k, v in GROUNDED.items() if k != "response"}) + "\n")
    return str(path)


# -- issue 30 item 5: the layers and the cycles, checked by a tool ------------------------------

@pytest.mark.integration  # lint-imports and the cycle check in processes
def test_the_import_layers_hold_and_no_modules_import_each_other_in_a_cycle():
    import importlib.util
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    spec = importlib.util.spec_from_file_location("import_cycles", root / "scripts" / "import_cycles.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.cycles() == []
    linted = subprocess.run([str(Path(sys.executable).parent / "lint-imports"), "--no-cache"], cwd=root, capture_output=True, text=True)
    assert linted.returncode == 0, linted.stdout[-2000:]
    assert "Contracts: 3 kept, 0 broken." in linted.stdout  # the layers, the run's stages, no cycles


def test_the_cycle_finder_finds_a_cycle(tmp_path, monkeypatch):
    import importlib.util
    from pathlib import Path

    package = tmp_path / "loopy"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("def f():\n    from loopy import b\n")
    (package / "b.py").write_text("from loopy import a\n")
    (package / "c.py").write_text("from loopy import a\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    spec = importlib.util.spec_from_file_location("import_cycles", Path(__file__).resolve().parent.parent / "scripts" / "import_cycles.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.cycles("loopy") == [["loopy.a", "loopy.b"]]
