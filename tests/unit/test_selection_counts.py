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


def test_a_chunk_judged_as_several_jobs_keeps_order_sample_and_row_groups(run_score, tmp_path):
    # issue 51: the local engine judges a chunk as jobs of job_rows rows (1,000 at concurrency 1), several in flight;
    # the output keeps the input's order, --sample's rows are the ones pipeline.choose names, and the Parquet file
    # gathers the jobs into row groups of 10,000 rows again
    import pyarrow.parquet as pq

    from ragjudge import Config
    from ragjudge.run.engine import job_rows
    from ragjudge.run.source import choose

    assert job_rows(Config(judge={"concurrency": 1})) == 1_000 and job_rows(Config(judge={"concurrency": 64})) == 1_000
    assert job_rows(Config(judge={"concurrency": 256})) == 1_024 and job_rows(Config(judge={"concurrency": 256}, chunk_size=500)) == 500
    rows = [{"id": f"r{i}", "request": f"Where is tower {i}?", "context": [f"Tower {i} is in Paris."]} for i in range(12_500)]
    source = write_jsonl(tmp_path / "in.jsonl", rows)
    out = tmp_path / "out.parquet"
    run = run_score(source, metric=["sufficiency"], min_pass_rate=["0"], sample=9, seed=3, set_=["judge.concurrency=1"], output=str(out),
                    quiet=True)
    assert run.code == 0, run.error
    table = pq.read_table(out)
    assert table["id"].to_pylist() == [f"r{i}" for i in range(12_500)]
    judged = [i for i, status in enumerate(table["sufficiency_status"].to_pylist()) if status == "ok"]
    assert judged == sorted(choose(12_500, None, 9, 3))
    assert [pq.ParquetFile(out).metadata.row_group(g).num_rows for g in range(pq.ParquetFile(out).num_row_groups)] == [10_000, 2_500]


