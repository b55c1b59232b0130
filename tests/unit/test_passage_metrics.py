"""Issue 63: ``passage_relevance`` (a verdict per passage, in retrieved order, from one call; the
rank metrics) and ``sufficient_k`` (the smallest sufficient prefix by binary search with the
sufficiency judge, its whole-context call shared with the sufficiency metric), against the
in-process fake judge: its word-overlap rule, or scripted replies."""

from __future__ import annotations

import json
import math
import random

import pytest

from conftest import read_jsonl, write_jsonl

from ragjudge.corrected_rates import RateStats
from ragjudge.reports.console import corrected_lines


def gold_rows(count: int, n: int, seed: int = 7) -> list[dict]:
    """Rows of ``n`` passages, one of them (at a random rank, kept as ``gold``) answering the
    request, the others another subject's: the fake judge finds the request's words in it alone."""
    rng = random.Random(seed)
    rows = []
    for i in range(count):
        gold = rng.randint(1, n)
        passages = [f"Rainfall in district {i}-{j} was measured by volunteers last spring." for j in range(1, n + 1)]
        passages[gold - 1] = f"The harbour of Velmor{i} was founded by the merchant Asta{i} in 1402."
        rows.append({"id": f"r{i}", "request": f"Who founded the harbour of Velmor{i}?", "context": passages, "gold": gold})
    return rows


def reference_free(verdict: str) -> str:
    return json.dumps({"needed": "who", "verdict": verdict, "quote": "NONE" if verdict == "no" else "passage", "rationale": "scripted"})


def passage_count(request: dict) -> int:
    """The passages a sufficiency request numbers in its <context>."""
    prompt = request["messages"][1]["content"]
    context = prompt.split("<context>\n", 1)[1].split("\n</context>", 1)[0]
    return sum(1 for line in context.splitlines() if line.startswith("["))


# -- passage_relevance ------------------------------------------------------------------------

def test_passage_relevance_gives_one_verdict_per_passage_in_retrieved_order_and_the_rank_metrics(run_score, tmp_path, judge):
    rows = gold_rows(6, 8)
    out = tmp_path / "out.jsonl"
    result = run_score(write_jsonl(tmp_path / "in.jsonl", rows), metric=["passage_relevance"], min_pass_rate=["0"], output=str(out))
    assert result.code == 0, result.text
    assert judge.calls == 6  # one call per row, every passage numbered in it
    for row, written in zip(rows, read_jsonl(out)):
        gold = row["gold"]
        assert written["passage_relevance_verdicts"] == ["yes" if rank == gold else "no" for rank in range(1, 9)]
        assert written["passage_relevance_first_relevant"] == gold
        assert written["passage_relevance_reciprocal_rank"] == pytest.approx(1 / gold)
        for k in (1, 3, 5):
            assert written[f"passage_relevance_precision_at_{k}"] == pytest.approx((1 if gold <= k else 0) / k)
        assert written["passage_relevance_score"] == pytest.approx((1 if gold <= 3 else 0) / 3)  # precision@3, the default k


def test_passage_relevance_places_each_mark_by_its_number_not_its_position(run_score, tmp_path, judge):
    judge.replies.append(json.dumps({"passages": [{"passage": 3, "relevant": True, "reason": "names it"},
                                                  {"passage": 1, "relevant": False, "reason": "other subject"},
                                                  {"passage": 2, "relevant": True, "reason": "a part"}]}))
    rows = [{"id": "a", "request": "Who founded it?", "context": ["one", "two", "three"]}]
    out = tmp_path / "out.jsonl"
    run_score(write_jsonl(tmp_path / "in.jsonl", rows), metric=["passage_relevance"], min_pass_rate=["0"], output=str(out))
    written = read_jsonl(out)[0]
    assert written["passage_relevance_verdicts"] == ["no", "yes", "yes"]
    assert written["passage_relevance_first_relevant"] == 2 and written["passage_relevance_reciprocal_rank"] == 0.5
    assert written["passage_relevance_precision_at_1"] == 0.0 and written["passage_relevance_precision_at_3"] == pytest.approx(2 / 3)
    assert written["passage_relevance_precision_at_5"] == pytest.approx(2 / 5)  # trec_eval's P@5 on 3 passages


def test_a_reply_that_leaves_a_passage_unjudged_is_asked_again_then_an_error(run_score, tmp_path, judge):
    partial = json.dumps({"passages": [{"passage": 1, "relevant": False, "reason": "x"}, {"passage": 3, "relevant": True, "reason": "y"}]})
    judge.replies.extend([partial, partial])
    rows = [{"id": "a", "request": "Who founded it?", "context": ["one", "two", "three"]}]
    out = tmp_path / "out.jsonl"
    run_score(write_jsonl(tmp_path / "in.jsonl", rows), metric=["passage_relevance"], min_pass_rate=["0"], max_error_rate=["1"], output=str(out))
    written = read_jsonl(out)[0]
    assert written["passage_relevance_status"] == "error" and judge.calls == 2
    assert "passage(s) 2 of 3 not judged" in written["passage_relevance_error"]


# the embedded 1.5B judge, on CLAPNQ rows (bench/passages.py): it listed only the passage it found relevant, and every row was an error
def test_a_reply_that_lists_only_the_relevant_passages_leaves_the_others_not_relevant(run_score, tmp_path, judge):
    judge.replies.append(json.dumps({"passages": [{"passage": 3, "relevant": True, "reason": "names the founder"}]}))
    rows = [{"id": "a", "request": "Who founded it?", "context": ["one", "two", "three", "four"]}]
    out = tmp_path / "out.jsonl"
    run_score(write_jsonl(tmp_path / "in.jsonl", rows), metric=["passage_relevance"], min_pass_rate=["0"], output=str(out))
    written = read_jsonl(out)[0]
    assert written["passage_relevance_status"] == "ok" and judge.calls == 1
    assert written["passage_relevance_verdicts"] == ["no", "no", "yes", "no"] and written["passage_relevance_first_relevant"] == 3
    assert "passage(s) 1, 2, 4 not listed, so not relevant" in written["passage_relevance_rationale"]


def test_passage_relevance_reads_each_passage_probability_with_a_yes_threshold(run_score, tmp_path, judge):
    judge.p_true = 0.7  # the fake gives P(true) 0.7 at every "relevant" token, whatever it wrote
    config = tmp_path / "c.yaml"
    config.write_text("passage_relevance:\n  yes_threshold: 0.8\n  k: 1\n  at_k: [2]\n")
    rows = gold_rows(1, 4)
    out = tmp_path / "out.jsonl"
    run_score(write_jsonl(tmp_path / "in.jsonl", rows), metric=["passage_relevance"], config=str(config), min_pass_rate=["0"],
              output=str(out))
    written = read_jsonl(out)[0]
    assert judge.requests[0]["logprobs"] is True
    assert written["passage_relevance_p_relevant"] == [0.7] * 4
    assert written["passage_relevance_verdicts"] == ["no"] * 4  # 0.7 < 0.8: no passage is relevant, the gold one turned
    assert "probability check: 1 passage mark(s) turned" in written["passage_relevance_rationale"]
    assert written["passage_relevance_first_relevant"] is None and written["passage_relevance_reciprocal_rank"] == 0.0
    assert "passage_relevance_precision_at_2" in written and "passage_relevance_precision_at_3" not in written


def test_the_gate_bounds_the_share_of_rows_whose_precision_at_k_reaches_the_threshold(run_score, tmp_path, judge):
    rows = gold_rows(6, 8)
    top = sum(1 for row in rows if row["gold"] == 1)  # precision@1 is 1 on these rows only
    config = tmp_path / "c.yaml"
    config.write_text("passage_relevance:\n  k: 1\n")
    source = write_jsonl(tmp_path / "in.jsonl", rows)
    failing = run_score(source, metric=["passage_relevance"], config=str(config), min_pass_rate=[f"passage_relevance={top / 6 + 0.01}"])
    assert failing.code == 1, failing.text
    passing = run_score(source, metric=["passage_relevance"], config=str(config), min_pass_rate=[f"passage_relevance={top / 6}"])
    assert passing.code == 0, passing.text


def test_an_empty_retrieval_is_no_relevant_passage_without_a_call(run_score, tmp_path, judge):
    rows = [{"id": "a", "request": "Who?", "context": []}, {"id": "b", "context": ["x"]}]
    out = tmp_path / "out.jsonl"
    run_score(write_jsonl(tmp_path / "in.jsonl", rows), metric=["passage_relevance", "sufficient_k"], min_pass_rate=["0"],
              output=str(out))
    first, second = read_jsonl(out)
    assert judge.calls == 0
    assert first["passage_relevance_score"] == 0.0 and first["passage_relevance_verdicts"] == []
    assert first["sufficient_k_never"] is True and first["sufficient_k_k"] is None and first["sufficient_k_passed"] is False
    assert second["passage_relevance_status"] == "skipped" and second["sufficient_k_status"] == "skipped"
    assert second["passage_relevance_error"] == "no request" == second["sufficient_k_error"]


# -- sufficient_k -----------------------------------------------------------------------------

@pytest.mark.parametrize("n", [1, 2, 5, 10, 16])
def test_sufficient_k_is_the_gold_passage_rank_within_the_call_bound_beyond_the_cached_whole_context(run_score, tmp_path, judge, n):
    rows = gold_rows(8, n, seed=n)
    source = write_jsonl(tmp_path / "in.jsonl", rows)
    first = run_score(source, metric=["sufficiency"], min_pass_rate=["0"])
    assert first.code == 0 and judge.calls == 8  # the whole context's calls, cached
    judge.requests.clear()
    out = tmp_path / "out.jsonl"
    result = run_score(source, metric=["sufficient_k"], min_pass_rate=["0"], output=str(out))
    assert result.code == 0, result.text
    assert all(passage_count(request) < n for request in judge.requests)  # the whole context is never asked again
    per_row: dict[str, int] = {}
    for request in judge.requests:
        row = next(r["id"] for r in rows if f"Velmor{r['id'][1:]}?" in request["messages"][1]["content"])
        per_row[row] = per_row.get(row, 0) + 1
    bound = math.ceil(math.log2(n)) + 1
    assert max(per_row.values(), default=0) <= bound
    for row, written in zip(rows, read_jsonl(out)):
        assert written["sufficient_k_k"] == row["gold"], written["sufficient_k_probes"]
        assert written["sufficient_k_passages"] == n and written["sufficient_k_never"] is False and written["sufficient_k_monotone"] is True
        assert written["sufficient_k_passed"] is (row["gold"] <= 5)  # top_k 5
        saved = sum(math.ceil(len(p.encode()) / 4) for p in row["context"][row["gold"]:])
        assert written["sufficient_k_tokens_saved"] == saved


def test_sufficiency_and_sufficient_k_together_pay_for_the_whole_context_once(run_score, tmp_path, judge):
    rows = gold_rows(4, 8)
    source = write_jsonl(tmp_path / "in.jsonl", rows)
    out = tmp_path / "out.jsonl"
    run_score(source, metric=["sufficiency", "sufficient_k"], min_pass_rate=["0"], output=str(out))
    whole = [request for request in judge.requests if passage_count(request) == 8]
    assert len(whole) == 4  # one per row, shared by both metrics
    written = read_jsonl(out)
    assert [r["sufficient_k_k"] for r in written] == [row["gold"] for row in rows]
    assert all(r["sufficiency_passed"] for r in written)


def test_a_row_whose_whole_context_is_insufficient_is_never_sufficient_after_one_call(run_score, tmp_path, judge):
    rows = [{"id": "a", "request": "Who founded the harbour of Velmor?", "context": ["Rain fell.", "Snow fell.", "Hail fell."]}]
    out = tmp_path / "out.jsonl"
    run_score(write_jsonl(tmp_path / "in.jsonl", rows), metric=["sufficient_k"], min_pass_rate=["0"], output=str(out))
    written = read_jsonl(out)[0]
    assert judge.calls == 1
    assert written["sufficient_k_never"] is True and written["sufficient_k_k"] is None and written["sufficient_k_score"] == 0.0
    assert written["sufficient_k_probes"] == "3:no" and written["sufficient_k_tokens_saved"] == 0


def test_a_longer_prefix_judged_insufficient_flags_the_row_not_monotone(run_score, tmp_path, judge):
    # 8 passages: whole yes; 4 yes; 2 no; 3 yes -> k = 3; the check asks the middle of 4..8, 6: no
    judge.replies.extend(reference_free(v) for v in ["yes", "yes", "no", "yes", "no"])
    rows = [{"id": "a", "request": "Who founded it?", "context": [f"passage {i}" for i in range(1, 9)]}]
    out = tmp_path / "out.jsonl"
    run_score(write_jsonl(tmp_path / "in.jsonl", rows), metric=["sufficient_k"], min_pass_rate=["0"], output=str(out))
    written = read_jsonl(out)[0]
    assert [passage_count(r) for r in judge.requests] == [8, 4, 2, 3, 6]
    assert written["sufficient_k_probes"] == "8:yes 4:yes 2:no 3:yes 6:no"
    assert written["sufficient_k_k"] == 3 and written["sufficient_k_monotone"] is False
    assert "not monotone" in written["sufficient_k_rationale"]


def test_without_the_check_a_row_makes_only_the_search(run_score, tmp_path, judge):
    judge.replies.extend(reference_free(v) for v in ["yes", "yes", "no", "yes"])
    config = tmp_path / "c.yaml"
    config.write_text("sufficient_k:\n  check: false\n  top_k: 2\n")
    rows = [{"id": "a", "request": "Who founded it?", "context": [f"passage {i}" for i in range(1, 9)]}]
    out = tmp_path / "out.jsonl"
    result = run_score(write_jsonl(tmp_path / "in.jsonl", rows), metric=["sufficient_k"], config=str(config), output=str(out))
    written = read_jsonl(out)[0]
    assert judge.calls == 4 and written["sufficient_k_k"] == 3 and written["sufficient_k_monotone"] is True
    assert written["sufficient_k_passed"] is False and result.code == 1  # k 3 > top_k 2: the row fails the gate


def test_sufficient_k_judges_its_prefixes_with_the_sufficiency_section(run_score, tmp_path, judge):
    # quote_check 1.0: the fake's quote "passage N" is not in the passages, so every yes becomes no, as sufficiency decides it
    config = tmp_path / "c.yaml"
    config.write_text("sufficiency:\n  quote_check: 1.0\n")
    rows = gold_rows(2, 4)
    out = tmp_path / "out.jsonl"
    run_score(write_jsonl(tmp_path / "in.jsonl", rows), metric=["sufficiency", "sufficient_k"], config=str(config), min_pass_rate=["0"],
              output=str(out))
    for written in read_jsonl(out):
        assert written["sufficiency_passed"] is False and written["sufficient_k_never"] is True
    assert judge.calls == 2


def test_a_dry_run_counts_the_search_calls(run_score, tmp_path, judge):
    rows = gold_rows(3, 10)
    result = run_score(write_jsonl(tmp_path / "in.jsonl", rows), metric=["sufficient_k", "passage_relevance"], dry_run=True)
    assert result.code == 0, result.text
    figures = result.result["metrics"]
    # the whole context, then the search of a row whose first passage suffices (5, 2, 1) and the check (7)
    assert figures["sufficient_k"]["calls"] == 3 * 5
    assert figures["passage_relevance"]["calls"] == 3
    assert judge.calls == 0


def test_the_summary_gives_the_k_distribution_and_the_tokens_a_top_k_would_save(run_score, tmp_path, judge):
    rows = gold_rows(10, 10, seed=3)
    rows[9]["context"] = [f"Rainfall in district x-{j} was measured." for j in range(10)]  # never sufficient
    source = write_jsonl(tmp_path / "in.jsonl", rows)
    summary, markdown = tmp_path / "s.json", tmp_path / "s.md"
    result = run_score(source, metric=["sufficient_k"], min_pass_rate=["0"], summary_json=str(summary), markdown=str(markdown))
    assert result.code == 0, result.text
    figures = json.loads(summary.read_text())["metrics"]["sufficient_k"]["sufficient_k"]
    golds = sorted(row["gold"] for row in rows[:9])
    assert figures["rows"] == 10 and figures["never"] == 1 and figures["never_share"] == 0.1
    assert figures["by_k"] == {str(k): golds.count(k) for k in sorted(set(golds))}
    assert figures["sufficient_by"][str(golds[-1])] == 0.9 and figures["k_for_90"] == golds[-1]
    tokens = [[math.ceil(len(p.encode()) / 4) for p in row["context"]] for row in rows]
    assert figures["tokens"] == sum(map(sum, tokens))
    assert figures["tokens_saved_at_k_for_90"] == sum(sum(t[golds[-1]:]) for t in tokens)
    line = next(text for text in markdown.read_text().splitlines() if text.startswith("- sufficient_k: 90% of 10 rows"))
    assert f"sufficient by k = {golds[-1]}; the retriever returned 10 passages" in line and "never sufficient 1 row (0.10)" in line


def test_passage_relevance_calls_carry_one_predicate_per_passage_for_a_decision_model():
    from ragjudge.judges.passage_relevance import PassageRelevanceJudge
    from ragjudge.records import EvalRecord, Passage
    from ragjudge.settings import load_config
    from ragjudge.types import PREDICATE

    judge = PassageRelevanceJudge(load_config(None).judge)
    call = judge.prepare(EvalRecord(0, request="Who?", passages=[Passage("a"), Passage("b"), Passage("c")]))
    assert [q.id for q in call.questions] == ["passage_relevance.passage_1", "passage_relevance.passage_2", "passage_relevance.passage_3"]
    assert {q.kind for q in call.questions} == {PREDICATE} and "passage 2 of `context`" in call.questions[1].instructions
    assert call.state == {"request": "Who?", "context": ["a", "b", "c"]} and judge.questions(call) == call.questions


@pytest.mark.parametrize("metric", ["passage_relevance", "sufficient_k"])
def test_a_panel_combines_each_members_own_verdict(run_score, tmp_path, metric):
    import statistics

    from conftest import SAMPLE

    source = str(SAMPLE / "rag_eval.jsonl")
    members = {"fake_judge": "openai/fake-judge", "fake_lenient": "openai/fake-lenient", "fake_strict": "openai/fake-strict"}
    alone = {}
    for name, model in members.items():
        out = tmp_path / f"{name}.jsonl"
        assert run_score(source, metric=[metric], model=model, output=str(out), min_pass_rate=["0"], no_cache=True).code == 0
        alone[name] = read_jsonl(out)
    out = tmp_path / "panel.jsonl"
    result = run_score(source, metric=[metric], output=str(out), min_pass_rate=["0"], set_=[f"judge.panel={json.dumps(list(members.values()))}"])
    assert result.code == 0, result.text
    rows = read_jsonl(out)
    judged = [i for i, row in enumerate(rows) if row[f"{metric}_status"] == "ok"]
    assert judged
    differ = 0
    for i in judged:
        scores = [alone[name][i][f"{metric}_score"] for name in members]
        assert [rows[i][f"{metric}_panel_{name}_score"] for name in members] == scores
        assert rows[i][f"{metric}_score"] == statistics.median_low(scores)
        differ += len(set(scores)) > 1
    assert differ >= 1  # the members disagree on some row


# -- passage_relevance against per-passage labels: nDCG@k and recall@k -------------------------

def test_ndcg_and_recall_at_k_equal_sklearn_and_a_hand_worked_row():
    from sklearn.metrics import ndcg_score

    from ragjudge.ranking import ndcg_at, recall_at

    grades = [0, 3, 1, 0, 2]
    # by hand: DCG@3 = 0/1 + 3/log2(3) + 1/2; the ideal order 3, 2, 1: IDCG@3 = 3 + 2/log2(3) + 1/2
    assert ndcg_at(grades, 3) == pytest.approx((3 / math.log2(3) + 0.5) / (3 + 2 / math.log2(3) + 0.5), abs=1e-12)
    rng = random.Random(5)
    for _ in range(200):
        n = rng.randint(1, 12)
        labels = [rng.choice([0, 0, 1, 2, 3]) for _ in range(n)]
        if not any(labels):
            assert ndcg_at(labels, 3) is None and recall_at(labels, 3) is None
            continue
        for k in (1, 3, 5, 10):
            # the retrieved order as scores, highest first (no ties): sklearn's nDCG with linear gain
            expected = ndcg_score([labels], [[n - i for i in range(n)]], k=k) if n > 1 else 1.0
            assert ndcg_at(labels, k) == pytest.approx(expected, abs=1e-9)
            assert recall_at(labels, k) == pytest.approx(sum(1 for g in labels[:k] if g) / sum(1 for g in labels if g), abs=1e-12)


def test_labels_per_passage_give_ndcg_and_recall_per_row_and_their_means_in_the_summary(run_score, tmp_path, judge):
    from ragjudge.ranking import ndcg_at, recall_at

    rows = gold_rows(4, 5, seed=11)
    graded = [[0, 1, 0, 0, 0], [2, 0, 3, 0, 1], [0, 0, 0, 0, 0], "[1, 0, 0, 0, 1]"]  # the last as JSON text, as a CSV cell holds it
    for row, labels in zip(rows, graded):
        row["human"] = labels
    out, summary = tmp_path / "out.jsonl", tmp_path / "s.json"
    result = run_score(write_jsonl(tmp_path / "in.jsonl", rows), metric=["passage_relevance"], min_pass_rate=["0"],
                       labels=["passage_relevance=human"], at_k="1,3", output=str(out), summary_json=str(summary))
    assert result.code == 0, result.text
    written = read_jsonl(out)
    as_lists = [json.loads(g) if isinstance(g, str) else g for g in graded]
    for labels, row in zip(as_lists, written):
        for k in (1, 3):
            assert row[f"passage_relevance_ndcg_at_{k}"] == (None if not any(labels) else pytest.approx(ndcg_at(labels, k)))
            assert row[f"passage_relevance_recall_at_{k}"] == (None if not any(labels) else pytest.approx(recall_at(labels, k)))
        assert "passage_relevance_ndcg_at_5" not in row  # --at-k 1,3
    assert written[0]["passage_relevance_ndcg_at_3"] == pytest.approx(1 / math.log2(3))  # the one relevant passage at rank 2
    assert written[3]["passage_relevance_recall_at_3"] == 0.5
    ranks = json.loads(summary.read_text())["metrics"]["passage_relevance"]["rank_labels"]
    defined = [labels for labels in as_lists if any(labels)]  # the all-zero row has no nDCG: left out of the mean
    assert ranks["labelled_rows"] == 4 and ranks["unreadable"] == 0
    assert ranks["ndcg_at_3"] == {"mean": pytest.approx(sum(ndcg_at(g, 3) for g in defined) / 3), "rows": 3}
    assert ranks["recall_at_1"] == {"mean": pytest.approx(sum(recall_at(g, 1) for g in defined) / 3), "rows": 3}
    # each row's label pass by the judge's rule (precision@3 of the graded passages >= 0.5): the per-passage labels section below
    assert json.loads(summary.read_text())["metrics"]["passage_relevance"]["corrected"]["pass_rate"]["labelled"] == 4


def test_a_label_list_of_another_length_gives_no_ndcg_and_a_note(run_score, tmp_path, judge):
    rows = gold_rows(2, 4, seed=2)
    rows[0]["human"], rows[1]["human"] = [1, 0, 0], [0, 0, 1, 0]
    out, summary = tmp_path / "out.jsonl", tmp_path / "s.json"
    result = run_score(write_jsonl(tmp_path / "in.jsonl", rows), metric=["passage_relevance"], min_pass_rate=["0"],
                       labels=["passage_relevance=human"], output=str(out), summary_json=str(summary))
    assert result.code == 0, result.text
    written = read_jsonl(out)
    assert written[0]["passage_relevance_ndcg_at_3"] is None and written[1]["passage_relevance_ndcg_at_3"] == pytest.approx(0.5)
    assert "1 row(s) hold a label list that is not one grade per passage" in result.text and "r0 (3 grades, 4 passages)" in result.text
    ranks = json.loads(summary.read_text())["metrics"]["passage_relevance"]["rank_labels"]
    assert ranks["labelled_rows"] == 1 and ranks["unreadable"] == 1


def test_a_label_cell_that_is_no_list_of_grades_is_refused_with_exit_2(run_score, tmp_path, judge):
    rows = gold_rows(2, 3)
    rows[0]["human"], rows[1]["human"] = [1, 0, 0], "yes"
    out = tmp_path / "out.jsonl"
    result = run_score(write_jsonl(tmp_path / "in.jsonl", rows), metric=["passage_relevance"], labels=["passage_relevance=human"],
                       output=str(out))
    assert result.code == 2 and "row 2 of" in result.text and "not a list of one relevance grade per passage" in result.text
    assert judge.calls == 0


@pytest.mark.parametrize("given", ["0,3", "1,x"])
def test_at_k_that_is_not_whole_numbers_from_1_is_refused_with_exit_2(run_score, tmp_path, judge, given):
    result = run_score(write_jsonl(tmp_path / "in.jsonl", gold_rows(1, 3)), metric=["passage_relevance"], at_k=given)
    assert result.code == 2 and "--at-k expects whole numbers >= 1" in result.text and judge.calls == 0


# -- a YAML judge judged per passage (issue 63 item 3) -------------------------------------------

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


def marks(*verdicts: str) -> str:
    return json.dumps({"passages": [{"passage": n, "verdict": v, "reason": "scripted"} for n, v in enumerate(verdicts, 1)]})


def test_a_yaml_judge_per_passage_gives_passage_relevances_columns_from_one_call_a_row(run_score, tmp_path, judge):
    judge.keep_requests = True
    judge.replies.extend([marks("no", "yes", "yes", "no"), marks("no", "no", "no", "no")])
    config = tmp_path / "c.yaml"
    config.write_text(PER_PASSAGE)
    rows = [{"id": f"r{i}", "request": f"Who founded Velmor{i}?", "context": ["a", "b", "c", "d"]} for i in range(2)]
    out, summary = tmp_path / "out.jsonl", tmp_path / "s.json"
    result = run_score(write_jsonl(tmp_path / "in.jsonl", rows), metric=["names_founder"], config=str(config), at_k="1,3",
                       min_pass_rate=["names_founder=0.5"], output=str(out), summary_json=str(summary), no_cache=True)
    assert judge.calls == 2  # one call a row
    first, second = read_jsonl(out)
    assert first["names_founder_verdicts"] == ["no", "yes", "yes", "no"] and second["names_founder_verdicts"] == ["no"] * 4
    assert first["names_founder_precision_at_1"] == 0.0 and first["names_founder_precision_at_3"] == pytest.approx(2 / 3)
    assert "names_founder_precision_at_5" not in first  # the run's ks: --at-k 1,3
    assert first["names_founder_first_relevant"] == 2 and first["names_founder_reciprocal_rank"] == 0.5
    assert second["names_founder_first_relevant"] is None and second["names_founder_reciprocal_rank"] == 0.0
    assert first["names_founder_score"] == 0.5 and first["names_founder_passed"] is True  # precision@2 (k: 2), pass at 0.5
    assert second["names_founder_score"] == 0.0 and second["names_founder_passed"] is False
    assert "names_founder_p_relevant" not in first  # a chat judge's written marks: no probability
    assert "2 of 4 passages judged yes (2, 3)" in first["names_founder_rationale"]
    assert result.code == 0, result.text  # 1 of 2 rows pass, the floor 0.5
    body = judge.requests[0]
    prompt = body["messages"][-1]["content"]
    assert "[1] a" in prompt and "[4] d" in prompt and '"verdict": "yes"|"no"' in prompt  # the passages numbered, a mark each
    entry = body["response_format"]["json_schema"]["schema"]["properties"]["passages"]["items"]
    assert entry["properties"]["verdict"] == {"type": "string", "enum": ["yes", "no"]}


def test_a_yaml_judge_per_passage_reads_its_marks_as_passage_relevance_does(run_score, tmp_path, judge):
    # numbered out of order, and a reply that lists only the passages it marks yes
    judge.replies.extend([json.dumps({"passages": [{"passage": 3, "verdict": "yes", "reason": "r"}, {"passage": 1, "verdict": "no", "reason": "r"},
                                                   {"passage": 2, "verdict": "no", "reason": "r"}]}),
                          json.dumps({"passages": [{"passage": 2, "verdict": "yes", "reason": "r"}]})])
    config = tmp_path / "c.yaml"
    config.write_text(PER_PASSAGE)
    rows = [{"id": f"r{i}", "request": f"Who founded Velmor{i}?", "context": ["a", "b", "c"]} for i in range(2)]
    out = tmp_path / "out.jsonl"
    run_score(write_jsonl(tmp_path / "in.jsonl", rows), metric=["names_founder"], config=str(config), min_pass_rate=["0"], output=str(out),
              no_cache=True)
    first, second = read_jsonl(out)
    assert first["names_founder_verdicts"] == ["no", "no", "yes"] and second["names_founder_verdicts"] == ["no", "yes", "no"]
    assert "passage(s) 1, 3 not listed, so not judged yes" in second["names_founder_rationale"]


def test_a_yaml_judge_per_passage_takes_per_passage_labels_for_ndcg_and_recall(run_score, tmp_path, judge):
    from ragjudge.ranking import ndcg_at

    judge.replies.extend([marks("yes", "no", "no"), marks("no", "no", "yes")])
    config = tmp_path / "c.yaml"
    config.write_text(PER_PASSAGE)
    rows = [{"id": "a", "request": "Who founded A?", "context": ["a", "b", "c"], "human": [0, 1, 0]},
            {"id": "b", "request": "Who founded B?", "context": ["a", "b", "c"], "human": [1, 0, 1]}]
    out, summary = tmp_path / "out.jsonl", tmp_path / "s.json"
    result = run_score(write_jsonl(tmp_path / "in.jsonl", rows), metric=["names_founder"], config=str(config), min_pass_rate=["0"],
                       labels=["names_founder=human"], output=str(out), summary_json=str(summary), no_cache=True)
    assert result.code == 0, result.text
    first, second = read_jsonl(out)
    assert first["names_founder_ndcg_at_3"] == pytest.approx(ndcg_at([0, 1, 0], 3)) and first["names_founder_recall_at_1"] == 0.0
    assert second["names_founder_recall_at_3"] == 1.0
    ranks = json.loads(summary.read_text())["metrics"]["names_founder"]["rank_labels"]
    assert ranks["labelled_rows"] == 2 and ranks["recall_at_3"]["rows"] == 2
    bad = [{**rows[0], "human": "yes"}]
    refused = run_score(write_jsonl(tmp_path / "bad.jsonl", bad), metric=["names_founder"], config=str(config), labels=["names_founder=human"])
    assert refused.code == 2 and "not a list of one relevance grade per passage" in refused.text


@pytest.mark.parametrize(("extra", "message"), [
    ("    kind: scale\n", "per: passage needs kind: binary"),
    ("    claims: true\n", "per: passage needs no claims: true"),
    ("", "judge 'names_founder': per: passage marks each numbered passage, but the prompt shows none; "
         "add {{ passages }} (or {{ context }}) to the prompt"),  # tester's report: it was accepted and judged blind
])
def test_a_per_passage_definition_that_cannot_mark_passages_is_refused(run_score, tmp_path, judge, extra, message):
    config = tmp_path / "c.yaml"
    config.write_text(PER_PASSAGE + extra if extra else PER_PASSAGE.replace("      {{ passages }}\n", ""))
    result = run_score(write_jsonl(tmp_path / "in.jsonl", gold_rows(1, 2)), metric=["names_founder"], config=str(config))
    assert result.code == 2 and message in result.text and judge.calls == 0


def test_per_and_k_are_checked_and_leave_other_definitions_versions_as_they_were():
    from ragjudge.judges.definitions import JudgeDefinition

    row = {"name": "tone", "needs": ["response"], "prompt": "Warm?\n{{ response }}"}
    assert JudgeDefinition.model_validate(row).digest_json() == JudgeDefinition.model_validate(row).model_dump_json(
        exclude={"integer", "mlflow_name", "per", "k"})  # per and k unset: the hash, so the version and cache, unchanged
    with pytest.raises(ValueError, match="per: passage needs context in needs"):
        JudgeDefinition.model_validate({**row, "per": "passage"})
    with pytest.raises(ValueError, match="k: is taken with per: passage only"):
        JudgeDefinition.model_validate({**row, "k": 2})
    passage = JudgeDefinition.model_validate({**row, "needs": ["context"], "prompt": "{{ passages }}", "per": "passage"})
    assert '"per":"passage"' in passage.digest_json()


def test_a_yaml_judge_per_passage_scores_an_empty_retrieval_0_without_a_call(run_score, tmp_path, judge):
    config = tmp_path / "c.yaml"
    config.write_text(PER_PASSAGE)
    rows = [{"id": "a", "request": "Who founded it?", "context": []}, {"id": "b", "context": []}]
    out = tmp_path / "out.jsonl"
    run_score(write_jsonl(tmp_path / "in.jsonl", rows), metric=["names_founder"], config=str(config), min_pass_rate=["0"], output=str(out))
    first, second = read_jsonl(out)
    assert judge.calls == 0
    assert first["names_founder_score"] == 0.0 and first["names_founder_verdicts"] == [] and first["names_founder_first_relevant"] is None
    assert second["names_founder_status"] == "skipped" and second["names_founder_error"] == "no request"  # what else it needs, first


# -- per-passage labels: each row's label pass by the judge's precision@k rule, the corrected pass rate and --gate-on corrected --
# (issue 63 item 3: the same RateStats and gate as sufficiency's; a YAML judge per passage at its own k)

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
