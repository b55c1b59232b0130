"""--limit and --sample count the rows they chose: the progress total, its steps and the notes
speak of the chosen rows, as the summary does (a new-user trial saw "judged 31/32 rows" and
"completeness judged no row of 32" with --limit 2)."""

from __future__ import annotations

from conftest import write_jsonl
from ragjudge.run import evaluate
from ragjudge.settings import load_config

ROW = {"request": "Where is the tower?", "context": ["The tower is in Paris."], "expected_response": "The tower is in Paris."}


def test_the_progress_total_and_steps_are_the_chosen_rows(judge, cache_dir, tmp_path):
    source = write_jsonl(tmp_path / "in.jsonl", [{**ROW, "id": f"r{i}", "response": "In Paris."} for i in range(32)])
    config = load_config(None, {"judge": {"model": "openai/fake-judge"}, "cache": {"dir": str(cache_dir)}, "metrics": ["sufficiency"]})
    totals, steps = [], []
    for options in ({"limit": 2}, {"sample": 3, "seed": 1}, {"limit": 40}):
        totals.clear(), steps.clear()
        evaluate(source, config, transport=judge, on_start=totals.append, on_progress=lambda rows, cost: steps.append(rows), **options)
        chosen = min(options.get("limit") or options.get("sample"), 32)
        assert totals == [chosen] and sum(steps) == chosen, options


def test_a_metric_that_judged_none_of_the_chosen_rows_says_of_how_many(judge, cache_dir, tmp_path):
    source = write_jsonl(tmp_path / "in.jsonl", [{**ROW, "id": f"r{i}"} for i in range(32)])  # no response: completeness skips
    config = load_config(None, {"judge": {"model": "openai/fake-judge"}, "cache": {"dir": str(cache_dir)}})
    result = evaluate(source, config, transport=judge, limit=2)
    assert "note: completeness judged no row of 2 chosen (30 not sampled) (2 'no response')" in result.notes
    whole = evaluate(source, config, transport=judge)
    assert "note: completeness judged no row of 32 (32 'no response')" in whole.notes
