"""Issue 63 item 3: per-passage labels (``--labels passage_relevance=COL``, a list of grades per
passage) give each row a label pass by the judge's own rule (precision@k at
``passage_relevance.k`` of the passages graded > 0, passed at the metric's threshold), so that
the label-corrected pass rate and ``--gate-on corrected`` work for passage_relevance, and for a
YAML judge per passage, as they do for sufficiency: the same ``RateStats``, the same gate."""

from __future__ import annotations

import json
import random

import pytest
from conftest import read_jsonl, write_jsonl

from ragjudge.corrected_rates import RateStats
from ragjudge.reports.console import corrected_lines

GOLD = "The harbour of Velmor{i} was founded by the merchant Asta{i} in 1402."
OTHER = "Rainfall in district {i}-{j} was measured by volunteers last spring."


def relevance_rows(count: int, labelled: int, n: int = 4, seed: int = 5) -> list[dict]:
    """Rows of ``n`` passages, a random set of them answering the request (the fake judge marks
    those relevant), and, on the first ``labelled`` rows, a ``human`` list of grades 0..3 per
    passage drawn apart from the judge's marks (so that labels and judge disagree on some rows)."""
    rng = random.Random(seed)
    rows = []
    for i in range(count):
        relevant = [rng.random() < 0.55 for _ in range(n)]
        passages = [GOLD.format(i=i) if flag else OTHER.format(i=i, j=j) for j, flag in enumerate(relevant)]
        row = {"id": f"r{i}", "request": f"Who founded the harbour of Velmor{i}?", "context": passages}
        if i < labelled:
            row["human"] = [rng.choice([1, 2, 3]) if (flag if rng.random() < 0.8 else not flag) else 0 for flag in relevant]
        rows.append(row)
    return rows


def by_hand(grades: list[int] | None, k: int, threshold: float) -> bool | None:
    """The label pass written out: precision@k of the passages graded > 0, at the threshold."""
    if grades is None:
        return None
    return sum(1 for g in grades[:k] if g > 0) / k >= threshold


def expected_rate(rows: list[dict], written: list[dict], metric: str, k: int, threshold: float) -> RateStats:
    stats = RateStats()
    for row, out in zip(rows, written):
        label = by_hand(row.get("human"), k, threshold)
        stats.add(1.0 if out[f"{metric}_passed"] else 0.0, None if label is None else float(label))
    return stats


def test_a_rows_label_pass_is_precision_at_k_of_its_graded_passages_at_the_threshold():
    import pandas as pd

    from ragjudge.counting import label_passes
    from ragjudge.ranking import label_pass_at
    from ragjudge.settings import load_config

    cells = [[1, 0, 0, 1], [0, 2, 3, 0], [0, 0, 0, 3], [3, 0, 0], "[1, 1, 0]", [0], None]
    config = load_config(None, {"labels": {"passage_relevance": "human"}})
    got = label_passes(pd.DataFrame({"human": cells}), config, ["passage_relevance"])["passage_relevance"]
    # k 3, threshold 0.5: 1 of 3, 2 of 3, 0 of 3, 1 of 3, 2 of 3, 0 of 3 (a short list: the missing ranks not relevant)
    assert got == [False, True, False, False, True, False, None]
    assert got[:6] == [by_hand(json.loads(c) if isinstance(c, str) else c, 3, 0.5) for c in cells[:6]]
    at_one = load_config(None, {"labels": {"passage_relevance": "human"}, "passage_relevance": {"k": 1}, "thresholds": {"passage_relevance": 1.0}})
    assert label_passes(pd.DataFrame({"human": cells}), at_one, ["passage_relevance"])["passage_relevance"] == [
        True, False, False, True, True, False, None]
    assert label_pass_at([1, 0, 1], 3, 0.5, judged=[True, False, False, True]) is None  # not one grade per passage the judge marked: unreadable
    assert label_pass_at("yes", 3, 0.5) is None


@pytest.mark.parametrize("k", [3, 2])
def test_the_corrected_pass_rate_of_passage_relevance_is_ratestats_fed_with_those_label_passes(run_score, tmp_path, judge, k):
    rows = relevance_rows(90, 60)
    out, summary = tmp_path / "out.jsonl", tmp_path / "s.json"
    result = run_score(write_jsonl(tmp_path / "in.jsonl", rows), metric=["passage_relevance"], labels=["passage_relevance=human"],
                       min_pass_rate=["0"], set_=[f"passage_relevance.k={k}"], output=str(out), summary_json=str(summary))
    assert result.code == 0, result.error
    written = read_jsonl(out)
    assert [w["passage_relevance_score"] for w in written] == [
        sum(1 for p in r["context"][:k] if p.startswith("The harbour")) / k for r in rows]  # the fake judge marks the gold passages
    want = expected_rate(rows, written, "passage_relevance", k, 0.5).corrected()
    assert want.labelled == 60 and want.unlabelled == 30 and want.low is not None
    assert want.estimate != want.judge  # the labels disagree with the judge on some rows: the correction moves the rate
    document = json.loads(summary.read_text())["metrics"]["passage_relevance"]
    assert document["corrected"]["labels"] == "human" and document["corrected"]["pass_rate"] == want.to_dict()
    assert "mean_score" not in document["corrected"]  # a row pass is corrected; precision@k is no rating to correct
    assert document["rank_labels"]["labelled_rows"] == 60  # nDCG@k and recall@k as before
    line = f"passage_relevance: corrected pass rate {want.estimate:.2f} [{want.low:.2f}, {want.high:.2f}] from 60 labelled rows ('human')"
    assert any(line in text for text in corrected_lines(result.result.summary))
    # the table read back (ragjudge report, compare) counts the same
    import pandas as pd

    from ragjudge.counting import summarize
    from ragjudge.settings import load_config

    config = load_config(None, {"labels": {"passage_relevance": "human"}, "passage_relevance": {"k": k}})
    again = summarize(pd.DataFrame(written), config, ["passage_relevance"])
    assert again.metrics["passage_relevance"].corrected()["pass_rate"].to_dict() == want.to_dict()


def test_gate_on_corrected_gates_passage_relevance_at_the_lower_bound(run_score, tmp_path, judge):
    source = write_jsonl(tmp_path / "in.jsonl", relevance_rows(90, 60))
    given = {"metric": ["passage_relevance"], "labels": ["passage_relevance=human"]}
    first = run_score(source, min_pass_rate=["0"], **given)
    m = first.result.summary.metrics["passage_relevance"]
    low = m.corrected()["pass_rate"].low
    assert low is not None and low < m.pass_rate
    at = run_score(source, gate_on="corrected", min_pass_rate=[f"{low - 0.005:.4f}"], **given)
    above = run_score(source, gate_on="corrected", min_pass_rate=[f"{low + 0.005:.4f}"], **given)
    on_judge = run_score(source, min_pass_rate=[f"{low + 0.005:.4f}"], **given)
    assert (at.code, above.code, on_judge.code) == (0, 1, 0)  # the judge's own rate passes where the corrected bound does not
    assert any(line.startswith("FAIL passage_relevance: corrected pass rate") for line in above.lines)
    few = run_score(write_jsonl(tmp_path / "few.jsonl", relevance_rows(40, 10)), gate_on="corrected", min_pass_rate=["0.1"], **given)
    assert few.code == 1 and any("passage_relevance: too few labels for a corrected pass rate" in line for line in few.lines)


PER_PASSAGE = """\
judges:
  - name: names_founder
    description: does the passage name who founded the place asked about
    needs: [request, context]
    per: passage
    k: 2
    prompt: |
      Does the passage name who founded the place the request asks about?
      {{ request }}
      {{ passages }}
"""


def test_a_yaml_judge_per_passage_gets_the_corrected_pass_rate_at_its_own_k(run_score, tmp_path, judge):
    rng = random.Random(3)
    rows, replies = [], []
    for i in range(40):
        marks = [rng.random() < 0.5 for _ in range(3)]
        replies.append(json.dumps({"passages": [{"passage": n, "verdict": "yes" if v else "no", "reason": "r"} for n, v in enumerate(marks, 1)]}))
        rows.append({"id": f"r{i}", "request": "Who founded it?", "context": ["a", "b", "c"],
                     "human": [int(v if rng.random() < 0.8 else not v) for v in marks]})
    judge.replies.extend(replies)
    config = tmp_path / "c.yaml"
    config.write_text(PER_PASSAGE)
    out, summary = tmp_path / "out.jsonl", tmp_path / "s.json"
    result = run_score(write_jsonl(tmp_path / "in.jsonl", rows), metric=["names_founder"], config=str(config), labels=["names_founder=human"],
                       min_pass_rate=["0"], output=str(out), summary_json=str(summary), no_cache=True, concurrency=1)
    assert result.code == 0, result.error
    written = read_jsonl(out)
    want = expected_rate(rows, written, "names_founder", 2, 0.5).corrected()  # k: 2 of the definition
    assert want.labelled == 40
    assert json.loads(summary.read_text())["metrics"]["names_founder"]["corrected"]["pass_rate"] == want.to_dict()
