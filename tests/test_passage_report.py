"""``ragjudge report`` on a table scored with sufficient_k: the k distribution rebuilt from its
columns (issue 63). Runs the command (Typer), so it lives outside the unit tier."""

from __future__ import annotations

from conftest import write_jsonl
from unit.test_passage_metrics import gold_rows


def test_a_report_rebuilt_from_the_scored_table_gives_the_runs_k_distribution(run_score, run_cli, tmp_path, judge):
    import html as html_text

    import pandas as pd

    rows = gold_rows(10, 10, seed=3)
    for row in rows:  # the gold passage within the first 4 of 10: a top-4 saves tokens
        row["context"].insert(min(row["gold"], 4) - 1, row["context"].pop(row["gold"] - 1))
    rows[9]["context"] = [f"Rainfall in district x-{j} was measured." for j in range(10)]  # never sufficient
    scored, markdown = tmp_path / "scored.jsonl", tmp_path / "s.md"
    assert run_score(write_jsonl(tmp_path / "in.jsonl", rows), metric=["sufficient_k"], min_pass_rate=["0"], output=str(scored),
                     markdown=str(markdown)).code == 0
    said = next(text for text in markdown.read_text().splitlines() if text.startswith("- sufficient_k: 90% of 10 rows")).removeprefix("- ")
    said = html_text.unescape(said)
    assert "a top-4 would save" in said and "tokens a row" in said and "never sufficient 1 row (0.10)" in said
    report = tmp_path / "r.html"
    done = run_cli(["report", str(scored), "-o", str(report)], judge=False)
    assert done.code == 0, done.stderr
    assert said in html_text.unescape(report.read_text())  # the run's sentence, tokens a top-k saves included
    # a table without its context: the k distribution and the never-sufficient share still, no tokens
    bare = tmp_path / "bare.jsonl"
    pd.read_json(scored, lines=True).drop(columns=["context"]).to_json(bare, orient="records", lines=True)
    done = run_cli(["report", str(bare), "-o", str(report)], judge=False)
    assert done.code == 0, done.stderr
    text = html_text.unescape(report.read_text())
    assert said.split("; a top-")[0] in text and "never sufficient 1 row (0.10)" in text and "tokens a row" not in text
