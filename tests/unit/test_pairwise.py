"""Pairwise judging (issue 64 item 4; ``ragjudge.judges.pairwise``, ``ragjudge.pairwise``): each
pair asked in both orders, a verdict only when both agree, B's win rate with its bootstrap
interval, the judge's position inconsistency, labels' agreement and the corrected win rate.
Judged by the fake judge's rules (``fake_rule.pairwise_reply``): a model named ``fake-first``
always prefers the response shown first, ``fake-longer`` the longer one."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from scipy.stats import bootstrap

from conftest import read_jsonl, write_jsonl
from ragjudge.corrected_rates import RateStats
from ragjudge.pairwise import PairwiseCounts, win_rate_interval
from ragjudge.significance import RESAMPLES, SEED, generator

TRUTH = "Paris is the capital of France. The Seine flows through Paris. It has about two million people."


def pairs(lengths: list[tuple[int, int]]) -> list[dict]:
    """Rows whose responses A and B have the given lengths in words (distinct texts)."""
    words = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi rho sigma tau".split()
    return [{"id": f"r{i}", "request": "Tell me about Paris.", "expected_response": TRUTH,
             "response_a": " ".join(words[:a]) + f" a{i}", "response_b": " ".join(words[:b]) + f" b{i}"}
            for i, (a, b) in enumerate(lengths)]


def test_a_judge_that_always_prefers_the_first_position_ties_every_pair_as_inconsistent(tmp_path, run_score, judge):
    out = tmp_path / "out.jsonl"
    done = run_score(write_jsonl(tmp_path / "in.jsonl", pairs([(3, 5), (6, 2), (4, 4), (1, 9)])), pairwise="response_a,response_b",
                     model="openai/fake-first", output=str(out), summary_json=str(tmp_path / "s.json"))
    assert done.code == 0, done.error
    rows = read_jsonl(out)
    assert [r["pairwise_verdict"] for r in rows] == ["tie"] * 4
    assert [r["pairwise_inconsistent"] for r in rows] == [True] * 4
    assert [(r["pairwise_order_ab"], r["pairwise_order_ba"]) for r in rows] == [("a", "b")] * 4  # A first, then B first: each time the first
    assert [r["pairwise_score"] for r in rows] == [0.0] * 4
    figures = json.loads((tmp_path / "s.json").read_text())["metrics"]["pairwise"]["pairwise"]
    assert figures["inconsistency_rate"] == 1.0 and figures["inconsistent"] == 4 and figures["asked_both"] == 4
    assert figures["win_rate_b"] == 0.5 and figures["win_rate_b_interval"] == [0.5, 0.5]
    assert len(judge.requests) == 8  # two orders a pair


def test_both_orders_are_asked_with_the_responses_swapped(tmp_path, run_score, judge):
    run_score(write_jsonl(tmp_path / "in.jsonl", pairs([(3, 5)])), pairwise="response_a,response_b", model="openai/fake-first")
    first, second = (request["messages"][-1]["content"] for request in judge.requests)
    assert first.index("gamma a0") < first.index("epsilon b0")  # order A, B: the table's A shown as A
    assert second.index("epsilon b0") < second.index("gamma a0")  # order B, A: the table's B shown as A
    assert '<response id="A">' in first and "<ground_truth>\n" + TRUTH in first


def test_against_a_judge_that_prefers_the_longer_answer_the_win_rate_follows_the_lengths(tmp_path, run_score):
    lengths = [(3, 5), (6, 2), (2, 8), (1, 9), (7, 3), (2, 4), (5, 1), (3, 7), (4, 6), (8, 2)]  # B longer on 6 of 10
    out = tmp_path / "out.jsonl"
    done = run_score(write_jsonl(tmp_path / "in.jsonl", pairs(lengths)), pairwise="response_a,response_b", model="openai/fake-longer",
                     output=str(out), summary_json=str(tmp_path / "s.json"))
    assert done.code == 0, done.error
    rows = read_jsonl(out)
    assert [r["pairwise_verdict"] for r in rows] == ["b" if b > a else "a" for a, b in lengths]
    assert [r["pairwise_inconsistent"] for r in rows] == [False] * 10
    figures = json.loads((tmp_path / "s.json").read_text())["metrics"]["pairwise"]["pairwise"]
    assert (figures["wins_b"], figures["wins_a"], figures["ties"]) == (6, 4, 0)
    assert figures["win_rate_b"] == 0.6 and figures["inconsistency_rate"] == 0.0
    values = np.array([1.0 if b > a else 0.0 for a, b in lengths])
    expected = bootstrap((values,), np.mean, n_resamples=RESAMPLES, confidence_level=0.95, method="percentile", **generator(bootstrap, SEED))
    assert figures["win_rate_b_interval"] == pytest.approx([expected.confidence_interval.low, expected.confidence_interval.high], abs=1e-12)
    summary = done.result.summary.metrics["pairwise"]
    assert summary.pass_rate == 0.6 and summary.mean_score == pytest.approx(0.2)  # pass: B at least as complete (score >= 0)
    assert any(line.startswith("pairwise: B's win rate 0.60 [") for line in done.lines + _summary_lines(done))


def _summary_lines(done):
    from ragjudge.reports.console import prefix_lines

    return prefix_lines(done.result.summary)


def test_the_win_rate_interval_is_scipys_bootstrap_of_the_rows_values_ties_half_a_win():
    values = np.array([0.0] * 3 + [0.5] * 4 + [1.0] * 7)
    expected = bootstrap((values,), np.mean, n_resamples=RESAMPLES, confidence_level=0.95, method="percentile", **generator(bootstrap, SEED))
    assert win_rate_interval(3, 4, 7) == pytest.approx([expected.confidence_interval.low, expected.confidence_interval.high], abs=1e-12)
    counts = PairwiseCounts(a=3, ties=4, b=7)
    assert counts.win_rate() == pytest.approx((7 + 2) / 14)
    assert PairwiseCounts(a=1, b=1).merge(PairwiseCounts(a=2, ties=4, b=6)).to_dict()["win_rate_b_interval"] == win_rate_interval(3, 4, 7)
    assert win_rate_interval(0, 1, 0) is None  # one row: no interval


def test_two_responses_of_the_same_text_tie_without_a_call_and_a_missing_response_is_skipped(tmp_path, run_score, judge):
    rows = [{"id": "same", "request": "Q?", "expected_response": TRUTH, "response_a": "Paris  is big.", "response_b": "Paris is big."},
            {"id": "none", "request": "Q?", "expected_response": TRUTH, "response_a": "Paris.", "response_b": None},
            {"id": "truthless", "request": "Q?", "response_a": "Paris.", "response_b": "Lyon."}]
    out = tmp_path / "out.jsonl"
    done = run_score(write_jsonl(tmp_path / "in.jsonl", rows), pairwise="response_a,response_b", output=str(out), max_skip_rate=["1"])
    assert done.code == 0, done.error
    got = read_jsonl(out)
    assert [r["pairwise_status"] for r in got] == ["ok", "skipped", "skipped"]
    assert got[0]["pairwise_verdict"] == "tie" and got[0]["pairwise_inconsistent"] is False and got[0]["pairwise_order_ab"] is None
    assert got[1]["pairwise_error"] == "no response in response_b"
    assert got[2]["pairwise_error"] == "no expected_response or expected_facts"
    assert judge.requests == []
    figures = done.result.summary.metrics["pairwise"].pairwise.to_dict()
    assert figures["ties"] == 1 and figures["asked_both"] == 0 and figures["inconsistency_rate"] is None


def test_a_second_run_reads_both_orders_from_the_cache(tmp_path, run_score, judge):
    source = write_jsonl(tmp_path / "in.jsonl", pairs([(3, 5), (6, 2)]))
    first = run_score(source, pairwise="response_a,response_b", model="openai/fake-longer", output=str(tmp_path / "a.jsonl"))
    calls = len(judge.requests)
    again = run_score(source, pairwise="response_a,response_b", model="openai/fake-longer", output=str(tmp_path / "b.jsonl"))
    assert calls == 4 and len(judge.requests) == 4  # no call the second time
    assert [r["pairwise_verdict"] for r in read_jsonl(tmp_path / "b.jsonl")] == ["b", "a"]
    assert again.result.summary.metrics["pairwise"].cached == 2 and first.result.summary.metrics["pairwise"].cached == 0


def test_labels_give_the_agreement_and_the_corrected_win_rate(tmp_path, run_score):
    lengths = [(2, 6) if i % 3 else (6, 2) for i in range(60)]  # B longer on 40 of 60
    rows = pairs(lengths)
    labels = [(1 if i % 3 else -1) if i % 4 else 0 for i in range(60)]  # people agree with the lengths, but tie every 4th row
    for i, row in enumerate(rows):
        row["human"] = labels[i] if i < 36 else None  # 36 labelled rows, 24 unlabelled
    out = tmp_path / "s.json"
    done = run_score(write_jsonl(tmp_path / "in.jsonl", rows), pairwise="response_a,response_b", model="openai/fake-longer",
                     labels=["pairwise=human"], summary_json=str(out))
    assert done.code == 0, done.error
    figures = json.loads(out.read_text())["metrics"]["pairwise"]["pairwise"]["labels"]
    judged = [1.0 if b > a else -1.0 for a, b in lengths]
    agree = sum(judged[i] == labels[i] for i in range(36))
    assert figures["labelled"] == 36 and figures["agreement"] == pytest.approx(agree / 36)
    stats = RateStats()
    for i in range(60):
        stats.add(judged[i], float(labels[i]) if i < 36 else None)
    mean = stats.corrected()
    assert figures["corrected_win_rate_b"] == pytest.approx((mean.estimate + 1) / 2, abs=1e-12)
    assert figures["interval"] == pytest.approx([(mean.low + 1) / 2, (mean.high + 1) / 2], abs=1e-12)


def test_the_summary_of_a_scored_table_counts_the_orders_as_the_run_did(tmp_path, run_score):
    from ragjudge.counting import summarize
    from ragjudge.settings import Config

    out = tmp_path / "out.csv"
    done = run_score(write_jsonl(tmp_path / "in.jsonl", pairs([(3, 5), (6, 2), (4, 4)])), pairwise="response_a,response_b",
                     model="openai/fake-first", output=str(out))
    frame = pd.read_csv(out)  # the inconsistent flags come back as text from a CSV
    again = summarize(frame, Config(), ["pairwise"])
    assert again.metrics["pairwise"].pairwise.to_dict() == done.result.summary.metrics["pairwise"].pairwise.to_dict()
    assert again.metrics["pairwise"].pairwise.inconsistent == 3


@pytest.mark.parametrize(("given", "words"), [("response_a", "expects two different response columns"),
                                              ("response_a,response_a", "expects two different response columns"),
                                              ("response_a,answer_b", "pairwise needs a column 'answer_b' and the input has none")])
def test_a_bad_pair_of_columns_is_refused_before_any_call(tmp_path, run_score, judge, given, words):
    done = run_score(write_jsonl(tmp_path / "in.jsonl", pairs([(3, 5)])), pairwise=given)
    assert done.code == 2 and words in done.error, done.error
    assert judge.requests == []


def test_pairwise_is_judged_alone_without_m_and_beside_the_metrics_m_names(tmp_path, run_score):
    rows = [{**row, "response": row["response_a"], "context": ["Paris is the capital of France."]} for row in pairs([(3, 5)])]
    source = write_jsonl(tmp_path / "in.jsonl", rows)
    alone = run_score(source, pairwise="response_a,response_b")
    both = run_score(source, pairwise="response_a,response_b", metric=["completeness", "pairwise"], min_pass_rate=["0"])
    assert list(alone.result.summary.metrics) == ["pairwise"] and list(both.result.summary.metrics) == ["completeness", "pairwise"]
    lost = run_score(source, pairwise="response_a,response_b", metric=["completeness"])  # nothing would compare the two responses
    assert lost.code == 2 and "none of the metrics judged (completeness) compares two: add -m pairwise" in lost.error
    assert "--pairwise" in lost.error
    bare = run_score(source, metric=["pairwise"])
    assert bare.code == 2 and "pairwise compares two responses: give their columns, A then B (--pairwise response_a,response_b" in bare.error


def test_the_dry_run_counts_two_calls_a_pair(tmp_path, run_score, judge):
    done = run_score(write_jsonl(tmp_path / "in.jsonl", pairs([(3, 5), (6, 2), (2, 2)])), pairwise="response_a,response_b", dry_run=True)
    assert done.code == 0 and judge.requests == []
    assert done.result["metrics"]["pairwise"]["calls"] == 6, done.result["metrics"]["pairwise"]


def test_a_panel_judges_each_order_by_each_member_and_keeps_the_orders_of_the_verdict_it_took(tmp_path, run_score, judge):
    config = tmp_path / "c.yaml"
    config.write_text("judge:\n  panel:\n    - model: openai/fake-longer\n    - model: openai/fake-longer-too\n    - model: openai/fake-first\n",
                      encoding="utf-8")
    out = tmp_path / "out.jsonl"
    done = run_score(write_jsonl(tmp_path / "in.jsonl", pairs([(3, 5), (6, 2)])), pairwise="response_a,response_b", config=str(config),
                     output=str(out))
    assert done.code == 0, done.error
    rows = read_jsonl(out)
    assert [r["pairwise_verdict"] for r in rows] == ["b", "a"]  # two of three members follow the lengths in both orders
    assert [r["pairwise_panel_fake_first_score"] for r in rows] == [0.0, 0.0]  # the first-position member: inconsistent, a tie
    assert [r["pairwise_inconsistent"] for r in rows] == [False, False]
    assert sum(len(member.requests) for member in judge.members.values()) == 12  # 3 members x 2 orders x 2 pairs


PAIR_JUDGE = """
judges:
  - name: better_answer
    per: pair
    needs: [request, expected_response, source]
    prompt: |
      {{ request }}
      The reference: {{ expected_response }} (from {{ source }})
      First: {{ response_a }}
      Second: {{ response_b }}
      Which answer holds more of the reference?
"""


def test_a_pairwise_judge_defined_in_yaml_is_asked_in_both_orders_and_counted_as_pairwise(tmp_path, run_score, judge):
    config = tmp_path / "c.yaml"
    config.write_text(PAIR_JUDGE, encoding="utf-8")
    rows = [{**row, "source": "wiki"} for row in pairs([(3, 5), (6, 2)])]
    out = tmp_path / "out.jsonl"
    done = run_score(write_jsonl(tmp_path / "in.jsonl", rows), pairwise="response_a,response_b", metric=["better_answer"], config=str(config),
                     model="openai/fake-longer", output=str(out), summary_json=str(tmp_path / "s.json"))
    assert done.code == 0, done.error
    got = read_jsonl(out)
    assert [r["better_answer_verdict"] for r in got] == ["b", "a"] and [r["better_answer_score"] for r in got] == [1.0, -1.0]
    assert [r["better_answer_inconsistent"] for r in got] == [False, False]
    first, second = (request["messages"][-1]["content"] for request in judge.requests[:2])
    assert "First: <response>\ngamma" not in first  # the texts arrive fenced as data
    assert first.index("a0") < first.index("b0") and second.index("b0") < second.index("a0")
    assert '(from <data name="source">' in first and first.endswith('{"verdict": "A"|"B"|"tie", "reason": "<one sentence>"}')
    figures = json.loads((tmp_path / "s.json").read_text())["metrics"]["better_answer"]["pairwise"]
    assert figures["win_rate_b"] == 0.5 and figures["asked_both"] == 2


@pytest.mark.parametrize(("extra", "words"), [("    kind: scale\n", "per: pair takes no kind"),
                                              ("    claims: true\n", "per: pair takes no claims")])
def test_a_yaml_pair_judge_refuses_what_a_pair_cannot_be(tmp_path, run_score, extra, words):
    config = tmp_path / "c.yaml"
    config.write_text(PAIR_JUDGE.replace("    per: pair\n", "    per: pair\n" + extra), encoding="utf-8")
    done = run_score(write_jsonl(tmp_path / "in.jsonl", pairs([(3, 5)])), pairwise="response_a,response_b", metric=["better_answer"],
                     config=str(config))
    assert done.code == 2 and words in done.error, done.error


def test_a_yaml_pair_judge_must_show_both_responses(tmp_path, run_score):
    config = tmp_path / "c.yaml"
    config.write_text(PAIR_JUDGE.replace("      Second: {{ response_b }}\n", ""), encoding="utf-8")
    done = run_score(write_jsonl(tmp_path / "in.jsonl", pairs([(3, 5)])), pairwise="response_a,response_b", metric=["better_answer"],
                     config=str(config))
    assert done.code == 2 and "the prompt does not show response_b; add {{ response_a }} and {{ response_b }}" in done.error, done.error


def test_two_tables_are_joined_by_id_and_a_row_without_its_pair_is_skipped_with_a_note(tmp_path, run_score, judge):
    main = [{"id": f"r{i}", "request": "Tell me about Paris.", "expected_response": TRUTH, "response": text}
            for i, text in enumerate(["Paris.", "Paris is the capital of France.", "Paris has the Seine."])]
    branch = [{"id": "r2", "response": "Paris, capital of France, on the Seine, two million people."},
              {"id": "r0", "response": "Paris is the capital of France; the Seine flows through it."}]
    out = tmp_path / "out.jsonl"
    done = run_score(write_jsonl(tmp_path / "main.jsonl", main), pairwise=f"response,{write_jsonl(tmp_path / 'branch.jsonl', branch)}",
                     model="openai/fake-longer", output=str(out), max_skip_rate=["1"])
    assert done.code == 0, done.error
    got = read_jsonl(out)
    assert [r["b_response"] for r in got] == [branch[1]["response"], None, branch[0]["response"]]  # matched by id, not by position
    assert [r["pairwise_status"] for r in got] == ["ok", "skipped", "ok"] and [r["pairwise_verdict"] for r in got] == ["b", None, "b"]
    assert got[1]["pairwise_error"] == "no response in b_response"
    assert any("1 row(s) of" in note and "have no row of the same id in" in note for note in done.notes), done.notes
    assert len(judge.requests) == 4


def test_a_joined_table_without_ids_or_with_an_id_twice_is_refused(tmp_path, run_score):
    main = write_jsonl(tmp_path / "main.jsonl", [{"id": "r0", "request": "Q?", "expected_response": TRUTH, "response": "Paris."}])
    twice = write_jsonl(tmp_path / "twice.jsonl", [{"id": "r0", "response": "A"}, {"id": "r0", "response": "B"}])
    done = run_score(main, pairwise=f"response,{twice}")
    assert done.code == 2 and "holds id 'r0' more than once" in done.error, done.error
    missing = run_score(main, pairwise=f"response,{tmp_path / 'nowhere.jsonl'}")
    assert missing.code == 2 and "is no file" in missing.error
    bare = write_jsonl(tmp_path / "bare.jsonl", [{"request": "Q?", "expected_response": TRUTH, "response": "Paris."}])
    done = run_score(bare, pairwise=f"response,{twice}")
    assert done.code == 2 and "needs an id column" in done.error and "--map id=COLUMN" in done.error, done.error


def test_rows_where_a_wins_are_no_failing_rows_at_the_floor_of_zero_and_are_when_gated(tmp_path, run_score):
    from ragjudge.reports.console import failing_lines

    config = tmp_path / "c.yaml"
    config.write_text(PAIR_JUDGE, encoding="utf-8")
    rows = [{**row, "source": "wiki"} for row in pairs([(3, 5), (6, 2)])]
    source = write_jsonl(tmp_path / "in.jsonl", rows)
    for metric, options in (("pairwise", {}), ("better_answer", {"metric": ["better_answer"], "config": str(config)})):
        done = run_score(source, pairwise="response_a,response_b", model="openai/fake-longer", **options)
        assert done.result.summary.metrics[metric].measured and failing_lines(done.result.summary) == [], metric  # A won r1: measured
        gated = run_score(source, pairwise="response_a,response_b", model="openai/fake-longer", min_pass_rate=[f"{metric}=0.9"], **options)
        assert gated.code == 1 and any("r1" in line for line in failing_lines(gated.result.summary)), metric


def test_a_joined_tables_response_alias_is_found_and_notes_say_which_is_a_and_b_and_what_was_left_out(tmp_path, run_score):
    main = [{"qid": f"r{i}", "request": "Tell me about Paris.", "expected_response": TRUTH, "answer": text}
            for i, text in enumerate(["Paris.", "Paris is the capital of France."])]
    branch = [{"qid": "r0", "answer": "Paris is the capital of France; the Seine flows through it."}, {"qid": "r9", "answer": "Lyon."}]
    done = run_score(write_jsonl(tmp_path / "main.jsonl", main), pairwise=f"response,{write_jsonl(tmp_path / 'new.jsonl', branch)}",
                     map=["id=qid"], max_skip_rate=["1"])
    assert done.code == 0, done.error
    assert any(note.startswith("note: pairwise compares A = response with B = b_response (") and "new.jsonl's answer, joined by qid)" in note
               for note in done.notes), done.notes
    assert any("1 row(s) of" in note and "new.jsonl have no row of the same qid in" in note and "not judged" in note for note in done.notes)
    assert done.result.summary.metrics["pairwise"].ok == 1


def test_report_reads_a_pairwise_runs_recorded_settings_and_gate(tmp_path, run_score):
    from ragjudge.options import table_record

    out = tmp_path / "out.parquet"
    done = run_score(write_jsonl(tmp_path / "in.jsonl", pairs([(3, 5), (6, 2)])), pairwise="response_a,response_b", model="openai/fake-longer",
                     min_pass_rate=["pairwise=0.75"], output=str(out))
    assert done.code == 1
    record, notes = table_record(str(out))
    assert notes == [] and record["pairwise"] == {"responses": ["response_a", "response_b"]}
    assert record["gate"]["min_pass_rate"] == {"pairwise": 0.75}


def test_ids_of_different_types_join_and_a_response_compared_with_itself_is_refused(tmp_path, run_score):
    main = [{"id": i, "request": "Tell me about Paris.", "expected_response": TRUTH, "response": text, "other": "Paris."}
            for i, text in enumerate(["Paris.", "Paris is the capital of France."], start=1)]
    source = write_jsonl(tmp_path / "main.jsonl", main)
    side = tmp_path / "pr.csv"
    side.write_text('id,response\n1,"Paris is the capital of France, on the Seine."\n2,Paris\n', encoding="utf-8")  # ids read as text? as numbers
    done = run_score(source, pairwise=f"response,{side}", model="openai/fake-longer")
    assert done.code == 0 and done.result.summary.metrics["pairwise"].ok == 2, (done.error, done.notes)
    itself = run_score(source, pairwise=f"response,{source}")
    assert itself.code == 2 and "is the input itself" in itself.error
    mapped = run_score(source, pairwise="response,other", map=["response=other"])
    assert mapped.code == 2 and "A and B would be one column" in mapped.error
    empty = run_score(source, pairwise="")
    assert empty.code == 2 and "--pairwise expects two different response columns" in empty.error


def test_reason_first_asks_the_reasoning_before_the_verdict_under_its_own_version(tmp_path, run_score, judge):
    source = write_jsonl(tmp_path / "in.jsonl", pairs([(3, 5)]))
    run_score(source, pairwise="response_a,response_b", model="openai/fake-longer")
    done = run_score(source, pairwise="response_a,response_b", model="openai/fake-longer", set_=["pairwise.reason_first=true"],
                     output=str(tmp_path / "out.jsonl"))
    assert len(judge.requests) == 4  # another prompt: not read from the first run's cache
    plain, reasoned = judge.requests[0], judge.requests[2]
    assert plain["messages"][-1]["content"].endswith('{"verdict": "A"|"B"|"tie", "reason": "<one sentence>"}')
    assert reasoned["messages"][-1]["content"].endswith('{"reason": "<one or two sentences>", "verdict": "A"|"B"|"tie"}')
    assert list(reasoned["response_format"]["json_schema"]["schema"]["properties"]) == ["reason", "verdict"]
    assert read_jsonl(tmp_path / "out.jsonl")[0]["pairwise_verdict"] == "b" and done.code == 0
