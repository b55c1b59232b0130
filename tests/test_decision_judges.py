"""Decision models as judges (issue 61 items 2, 3, 5, 6) against the fake server's decision APIs
(``ragjudge.fakes.decisions``) over loopback: every metric of a row in one request, P(yes) and the
completeness distribution in the table, verdicts following ``yes_threshold``, cost from input
tokens only, a refusal as that metric's error row, 429/529 retried after the server's delay, and
a metric added later paying only for its own questions."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from ragjudge.prices import DECISION_PRICES
from ragjudge.scoring import Scorer
from ragjudge.types import Reason

PROTOCOLS = ["openai-decisions/gpt-6-luna", "systemone/jev-latest"]


@pytest.fixture
def fake(server):
    server.keep_requests = True
    server.retry_after = 0.01
    return server


def rows(n: int) -> pd.DataFrame:
    return pd.DataFrame([{"request": f"What is fact {i}?", "context": [f"Passage {i} says fact {i} is true."], "response": f"Fact {i} is true.",
                          "expected_facts": [f"fact {i} is true", f"fact {i} is old"]} for i in range(n)])


def score(fake, model, frame, metrics=("sufficiency", "completeness"), cache=None, **settings):
    cache = {"enabled": False} if cache is None else {"dir": cache}
    with Scorer(metrics=list(metrics), model=model, api_base=fake.url, cache=cache, **settings) as scorer:
        return scorer.score(frame).frame


def questions_of(body) -> list[str]:
    asked = body["questions"]
    return sorted(asked) if isinstance(asked, dict) else sorted(q["name"] for q in asked)


@pytest.mark.slow
@pytest.mark.parametrize("model", PROTOCOLS)
def test_a_thousand_rows_with_both_metrics_are_a_thousand_calls(fake, model):
    fake.p_yes = 0.8
    out = score(fake, model, rows(1000))
    assert fake.decision_calls == 1000
    assert (out["sufficiency_status"] == "ok").all() and (out["completeness_status"] == "ok").all()
    assert out["sufficiency_probability"].tolist() == [0.8] * 1000
    # the fake's score levels weigh 1..5: p = (1, 2, 3, 4, 5) / 15, expected zero-based level 40/15 = 2.667, score 3.667
    assert out["completeness_distribution"].iloc[0] == pytest.approx([1 / 15, 2 / 15, 3 / 15, 4 / 15, 5 / 15], abs=1e-6)
    assert out["completeness_score"].iloc[0] == pytest.approx(1 + 40 / 15, abs=1e-3)
    assert out["completeness_probability"].iloc[0] == pytest.approx(12 / 15, abs=1e-6)  # P(pass): levels 3, 4 and 5 at threshold 3


@pytest.mark.parametrize("model", PROTOCOLS)
def test_one_request_carries_every_metrics_questions_and_the_union_of_their_fields(fake, model):
    score(fake, model, rows(3))
    assert fake.decision_calls == 3
    body = fake.requests[0]
    assert questions_of(body) == ["completeness", "sufficiency", "sufficiency.fact_1", "sufficiency.fact_2"]
    state = body["state"] if "state" in body else json.loads(body["input"])
    assert sorted(state) == ["context", "expected_facts", "request", "response"]


@pytest.mark.parametrize("model", PROTOCOLS)
@pytest.mark.parametrize(("p_yes", "threshold", "verdict"), [(0.8, None, 1.0), (0.8, 0.85, 0.0), (0.3, 0.25, 1.0), (0.3, None, 0.0)])
def test_the_verdict_follows_yes_threshold_on_p_yes(fake, model, p_yes, threshold, verdict):
    fake.p_yes = p_yes
    options = {} if threshold is None else {"sufficiency": {"yes_threshold": threshold}}
    out = score(fake, model, rows(2), metrics=("sufficiency",), **options)
    assert out["sufficiency_score"].tolist() == [verdict, verdict]
    assert out["sufficiency_probability"].tolist() == [p_yes, p_yes]
    # each fact's own P(yes) against fact_threshold (0.5 unless set): missing_facts keeps its meaning
    assert out["sufficiency_missing"].iloc[0] == ([] if p_yes >= 0.5 else ["fact 0 is true", "fact 0 is old"])


@pytest.mark.parametrize("model", PROTOCOLS)
def test_cost_counts_input_tokens_only_at_the_models_price(fake, model):
    out = score(fake, model, rows(4))
    price = DECISION_PRICES[model]["input_cost_per_token"]
    tokens = out["sufficiency_prompt_tokens"] + out["completeness_prompt_tokens"]
    cost = out["sufficiency_cost_usd"] + out["completeness_cost_usd"]
    assert (tokens > 0).all() and (out["sufficiency_completion_tokens"] == 0).all() and (out["completeness_completion_tokens"] == 0).all()
    assert cost.tolist() == pytest.approx((tokens * price).tolist(), rel=1e-3)


def test_cached_input_is_priced_at_its_own_rate(fake):
    fake.decision_cached_tokens = 10**9  # every input token cached: OpenAI Decisions charges nothing for them
    out = score(fake, "openai-decisions/gpt-6-luna", rows(2), metrics=("sufficiency",))
    assert (out["sufficiency_prompt_tokens"] > 0).all() and out["sufficiency_cost_usd"].tolist() == [0.0, 0.0]


def test_judge_price_overrides_the_table(fake):
    out = score(fake, "systemone/jev-latest", rows(1), metrics=("sufficiency",), judge={"price": {"input_per_mtok": 1.0, "output_per_mtok": 5.0}})
    assert out["sufficiency_cost_usd"].iloc[0] == pytest.approx(out["sufficiency_prompt_tokens"].iloc[0] * 1e-6)


def test_a_refusal_is_that_metrics_error_row_never_a_verdict(fake):
    fake.decision_refuse = {"sufficiency"}
    out = score(fake, "openai-decisions/gpt-6-luna", rows(2))
    assert out["sufficiency_status"].tolist() == ["error", "error"]
    assert out["sufficiency_error"].tolist() == [Reason.REFUSED.value] * 2 and out["sufficiency_score"].isna().all()
    assert out["completeness_status"].tolist() == ["ok", "ok"]  # the row's other metric keeps its verdict
    assert fake.decision_calls == 2


def test_a_score_outside_its_levels_is_retried_then_the_metrics_error_row_never_a_pass(fake):
    # issue found on int: a completeness score of 99 (5 levels) became completeness_score 100 and a pass
    bad = {"model": "gpt-6-luna", "answers": [{"type": "score", "name": None, "score": 99, "confidence": 0.9, "probabilities": [
        {"value": level, "label": str(level + 1), "probability": 1.0 if level == 4 else 0.0} for level in range(5)]}],
           "usage": {"input_tokens": 10, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 0}}
    fake.decision_replies.extend([bad, bad])
    out = score(fake, "openai-decisions/gpt-6-luna", rows(1), metrics=("completeness",), judge={"max_retries": 1})
    assert fake.decision_calls == 2  # retried once, as a server error is
    assert out["completeness_status"].tolist() == ["error"] and out["completeness_score"].isna().all()
    assert out["completeness_passed"].isna().all() and "score 99 of 'completeness' outside 0..4" in out["completeness_error"].iloc[0]


@pytest.mark.parametrize(("model", "fault"), [("openai-decisions/gpt-6-luna", "429"), ("systemone/jev-latest", "429"),
                                              ("systemone/jev-latest", "529")])
def test_429_and_529_are_retried_after_the_servers_delay(fake, model, fault):
    fake.decision_faults.extend([fault, fault])
    out = score(fake, model, rows(1))
    assert out["sufficiency_status"].tolist() == ["ok"] and out["completeness_status"].tolist() == ["ok"]
    assert fake.decision_calls == 3 and fake.statuses[int(fault)] == 2


@pytest.mark.parametrize("model", PROTOCOLS)
def test_a_metric_added_later_pays_only_for_its_own_questions(fake, model, tmp_path):
    cache = str(tmp_path / "cache")
    score(fake, model, rows(3), metrics=("sufficiency",), cache=cache)
    assert fake.decision_calls == 3 and all(questions_of(body)[0] == "sufficiency" for body in fake.requests)
    fake.requests.clear()
    out = score(fake, model, rows(3), cache=cache)
    assert fake.decision_calls == 6
    assert [questions_of(body) for body in fake.requests] == [["completeness"]] * 3
    assert out["sufficiency_cached"].tolist() == [True] * 3 and out["completeness_cached"].tolist() == [False] * 3


def test_a_request_is_split_only_past_the_protocols_limit_of_questions(fake):
    many = pd.DataFrame([{"request": "q?", "context": ["p"], "response": "r", "expected_facts": [f"fact {i}" for i in range(199)]}])
    out = score(fake, "openai-decisions/gpt-6-luna", many)  # 1 + 199 sufficiency questions, then completeness's: 201 > 200
    assert fake.decision_calls == 2 and [len(body["questions"]) for body in fake.requests] == [200, 1]
    assert out["sufficiency_status"].tolist() == ["ok"] and out["completeness_status"].tolist() == ["ok"]


def test_the_dry_run_counts_a_decision_requests_input_and_no_output_and_one_call_a_row(run_cli, fake, tmp_path):
    given = ["sample_data/demo.jsonl", "--model", "systemone/jev-latest", "--api-base", fake.url]
    result = run_cli(["score", *given, "--dry-run"])
    assert result.code == 0, result.stderr
    lines = (result.stdout + result.stderr).splitlines()
    line = next(line for line in lines if line.startswith("sufficiency:"))
    assert "6 calls to make" in line and "completion tokens about 0, at most 0" in line and "prompt tokens 0;" not in line
    total = next(line for line in lines if line.startswith("total:"))
    assert not any(line.startswith("cost by API") for line in lines)  # no batch API to price
    made = run_cli(["score", *given, "-o", str(tmp_path / "out.jsonl"), "--min-pass-rate", "0"])
    assert made.code == 0, made.stderr
    assert total.startswith(f"total: {fake.decision_calls} calls,") and fake.decision_calls == 8  # the run made what the dry run said


JUDGES = [{"name": "polite", "needs": ["response"], "kind": "binary", "prompt": "Is the response polite?\n{{ response }}"},
          {"name": "clarity", "needs": ["response"], "kind": "scale", "min": 1, "max": 5, "prompt": "How clear is the response?\n{{ response }}"}]


@pytest.mark.parametrize("model", PROTOCOLS)
def test_a_custom_yaml_judge_asks_a_predicate_or_a_five_level_score(fake, model):
    fake.p_yes = 0.3
    out = score(fake, model, rows(2), metrics=("polite", "clarity"), judges=JUDGES)
    assert fake.decision_calls == 2  # both custom metrics of a row in one request
    assert questions_of(fake.requests[0]) == ["clarity", "polite"]
    assert out["polite_probability"].tolist() == [0.3, 0.3] and out["polite_score"].tolist() == [0.0, 0.0]
    assert out["clarity_score"].iloc[0] == pytest.approx(1 + 40 / 15, abs=1e-3)
    assert out["clarity_probability"].iloc[0] == pytest.approx(12 / 15, abs=1e-6)  # P(pass): levels 3..5 at the middle of 1..5


def test_completeness_without_facts_is_one_score_question_about_the_expected_response(fake):
    frame = pd.DataFrame([{"request": "Where?", "context": ["Paris."], "response": "Paris.", "expected_response": "It is in Paris."}])
    out = score(fake, "systemone/jev-latest", frame, metrics=("completeness",))
    assert fake.decision_calls == 1 and out["completeness_status"].tolist() == ["ok"]
    assert fake.requests[0]["state"]["expected_response"] == "It is in Paris."


@pytest.mark.parametrize(("frame", "requests"), [(rows(2), 2), (pd.DataFrame([{"request": "Where?", "context": ["Paris."], "response": "Paris.",
                                                                               "expected_response": "It is in Paris."}] * 2), 1)],
                         ids=["facts", "response"])
def test_a_panel_mixes_decision_and_chat_members(fake, frame, requests):
    panel = [{"model": "openai/fake-judge"}, {"model": "openai-decisions/gpt-6-luna"}]
    out = score(fake, "openai/fake-judge", frame, judge={"panel": panel})
    assert (out["sufficiency_status"] == "ok").all() and (out["completeness_status"] == "ok").all()
    assert fake.decision_calls == requests  # the decision member asks a row's two metrics in one request (two alike rows: once)
    assert out["sufficiency_panel_gpt_6_luna_score"].notna().all() and out["completeness_panel_gpt_6_luna_score"].notna().all()


def test_a_row_over_system_ones_token_limit_asks_its_metrics_apart(fake):
    score(fake, "systemone/jev-latest", rows(1))
    together = fake.requests[0]
    fake.requests.clear()
    fake.decision_calls = 0
    alone = score(fake, "systemone/jev-latest", rows(1), metrics=("sufficiency",))
    # a ceiling between the one metric's request and the row's: the row's request is refused, each metric alone is not
    fake.systemone_max_tokens = (len(json.dumps(together)) // 4 + len(json.dumps(fake.requests[0])) // 4) // 2
    fake.requests.clear()
    fake.decision_calls = 0
    out = score(fake, "systemone/jev-latest", rows(1))
    assert alone["sufficiency_status"].tolist() == ["ok"]
    assert fake.decision_calls == 3 and sorted(questions_of(body) for body in fake.requests[1:]) == [
        ["completeness"], ["sufficiency", "sufficiency.fact_1", "sufficiency.fact_2"]]
    assert out["sufficiency_status"].tolist() == ["ok"] and out["completeness_status"].tolist() == ["ok"]
    assert out["sufficiency_cost_usd"].iloc[0] > 0 and out["completeness_cost_usd"].iloc[0] > 0


def test_max_cost_counts_a_decision_requests_input(fake):
    # the first request's input alone passes a budget of a millionth of a dollar: no request starts after it
    out = score(fake, "openai-decisions/gpt-6-luna", rows(5), judge={"max_cost": 1e-6, "concurrency": 1})
    assert fake.decision_calls == 1
    assert out["sufficiency_status"].tolist() == ["ok"] + ["error"] * 4
    assert out["sufficiency_error"].tolist()[1:] == [Reason.BUDGET_REACHED.value] * 4
    assert out["completeness_error"].tolist()[1:] == [Reason.BUDGET_REACHED.value] * 4


def test_openais_base_url_from_the_environment_reaches_the_decisions_api_and_its_cache_key(fake, monkeypatch):
    from ragjudge.config import JudgeSettings
    from ragjudge.model import model_for

    monkeypatch.setenv("OPENAI_BASE_URL", fake.url)
    model = model_for(JudgeSettings(model="openai-decisions/gpt-6-luna"))
    assert (model.api_base, model.transport.where) == (fake.url, fake.url)
    with Scorer(metrics=["sufficiency"], model="openai-decisions/gpt-6-luna", cache={"enabled": False}) as scorer:
        out = scorer.score(rows(1)).frame
    assert out["sufficiency_status"].tolist() == ["ok"] and fake.decision_calls == 1


def test_a_metric_a_decision_model_cannot_answer_is_refused_before_any_call(fake):
    # it was an error row on every row ("this metric asks none"), with exit 3 from the command, as if the provider were down
    from ragjudge.errors import ConfigError

    judges = [{"name": "tone", "needs": ["response"], "kind": "scale", "min": 0, "max": 1, "threshold": 0.7,
               "prompt": "How warm is the tone?\n{{ response }}"}]
    for settings in ({"model": "systemone/jev-latest"}, {"panel": [{"model": "openai/fake"}, {"model": "systemone/jev-latest"}]},
                     {"cascade": ["systemone/jev-latest", "openai/fake"]}):
        with pytest.raises(ConfigError) as info:
            Scorer(metrics=["sufficiency", "tone"], judges=judges, api_base=fake.url, cache={"enabled": False}, judge=settings)
        assert str(info.value).startswith("tone cannot be judged by the decision model systemone/jev-latest: it asks no typed questions")
        assert info.value.exit_code == 2
    assert fake.decision_calls == 0 and fake.calls == 0


def test_a_grounded_rows_question_names_its_ground_truth_and_the_domains_instructions(fake):
    extend = {"sufficiency": {"instructions": "Prices must carry their currency."},
              "completeness": {"instructions": "Dates count as key information."}}
    score(fake, "systemone/jev-latest", rows(1), extend=extend)
    asked = fake.requests[0]["questions"]
    assert "`expected_facts` shows what a full answer contains" in asked["sufficiency"]["instructions"]
    assert asked["sufficiency"]["instructions"].endswith("Prices must carry their currency.")
    assert asked["completeness"]["instructions"].endswith("Dates count as key information.")
    assert "Prices" not in asked["sufficiency.fact_1"]["instructions"]


def test_render_shows_a_decision_models_request(run_cli):
    result = run_cli(["render", "sample_data/demo.jsonl", "-m", "sufficiency", "--row", "1", "--model", "systemone/jev-latest"])
    assert result.code == 0, result.stderr
    body = json.loads(result.stdout.split("\n", 2)[2])
    assert body["model"] == "jev-latest" and list(body["questions"]) == ["sufficiency"]
    assert sorted(body["state"]) == ["context", "expected_response", "request"]


@pytest.mark.parametrize("model", PROTOCOLS)
def test_passage_relevance_asks_a_predicate_per_passage_in_the_rows_one_request_with_sufficiency(fake, model):
    fake.p_yes = 0.7
    fake.decision_p_question = {"passage_relevance.passage_1": 0.2, "passage_relevance.passage_2": 0.9, "passage_relevance.passage_3": 0.55}
    frame = pd.DataFrame([{"request": f"Who founded harbour {i}?", "context": ["Rain fell.", f"Asta founded harbour {i}.", "It is old."]}
                          for i in range(2)])
    out = score(fake, model, frame, metrics=("sufficiency", "passage_relevance"))
    assert fake.decision_calls == 2  # one request a row carries both metrics' questions
    body = fake.requests[0]
    assert questions_of(body) == ["passage_relevance.passage_1", "passage_relevance.passage_2", "passage_relevance.passage_3", "sufficiency"]
    state = body["state"] if "state" in body else json.loads(body["input"])
    assert sorted(state) == ["context", "request"] and state["context"][1] == "Asta founded harbour 0."
    assert out["passage_relevance_status"].tolist() == ["ok", "ok"] and out["sufficiency_probability"].tolist() == [0.7, 0.7]
    assert out["passage_relevance_p_relevant"].iloc[0] == [0.2, 0.9, 0.55]  # each passage's P(relevant), in order
    assert out["passage_relevance_verdicts"].iloc[0] == ["no", "yes", "yes"]  # relevant at P >= 0.5
    assert out["passage_relevance_first_relevant"].tolist() == [2, 2]
    assert out["passage_relevance_precision_at_3"].iloc[0] == pytest.approx(2 / 3)


def test_passage_relevance_under_a_decision_model_follows_yes_threshold_and_a_refusal_is_its_error(fake):
    fake.decision_p_question = {"passage_relevance.passage_1": 0.2, "passage_relevance.passage_2": 0.9, "passage_relevance.passage_3": 0.55}
    frame = pd.DataFrame([{"request": "Who founded it?", "context": ["a", "b", "c"]}])
    out = score(fake, "systemone/jev-latest", frame, metrics=("passage_relevance",), passage_relevance={"yes_threshold": 0.6})
    assert out["passage_relevance_verdicts"].iloc[0] == ["no", "yes", "no"]
    fake.decision_refuse = {"passage_relevance.passage_2"}
    out = score(fake, "openai-decisions/gpt-6-luna", frame, metrics=("passage_relevance",))
    assert out["passage_relevance_status"].iloc[0] == "error" and out["passage_relevance_error"].iloc[0] == Reason.REFUSED.value


@pytest.mark.parametrize("model", PROTOCOLS)
def test_abstention_asks_one_predicate_about_the_request_and_response_in_the_rows_request(fake, model):
    fake.p_yes = 0.7
    fake.decision_p_question = {"abstention": 0.9}
    out = score(fake, model, rows(2), metrics=("sufficiency", "completeness", "abstention"))
    assert fake.decision_calls == 2  # the row's three metrics in one request
    body = fake.requests[0]
    assert questions_of(body) == ["abstention", "completeness", "sufficiency", "sufficiency.fact_1", "sufficiency.fact_2"]
    state = body["state"] if "state" in body else json.loads(body["input"])
    assert sorted(state) == ["context", "expected_facts", "request", "response"]
    assert out["abstention_probability"].tolist() == [0.9, 0.9] and out["abstention_score"].tolist() == [1.0, 1.0]
    assert out["abstention_passed"].tolist() == [True, True]  # declined at P(yes) >= 0.5
    assert out["audit"].tolist() == ["sufficient_abstained"] * 2


@pytest.mark.parametrize(("p_yes", "threshold", "declined"), [(0.3, None, 0.0), (0.3, 0.25, 1.0), (0.8, 0.85, 0.0)])
def test_abstention_under_a_decision_model_follows_yes_threshold_alone_asking_request_and_response(fake, p_yes, threshold, declined):
    fake.p_yes = p_yes
    options = {} if threshold is None else {"abstention": {"yes_threshold": threshold}}
    out = score(fake, "systemone/jev-latest", rows(1), metrics=("abstention",), **options)
    assert out["abstention_score"].tolist() == [declined] and out["abstention_probability"].tolist() == [p_yes]
    body = fake.requests[0]
    assert sorted(body["state"]) == ["request", "response"] and list(body["questions"]) == ["abstention"]
    assert "decline to answer `request`" in body["questions"]["abstention"]["instructions"]


def test_abstention_skips_a_row_without_a_response_and_sends_nothing_for_it(fake):
    frame = pd.DataFrame([{"request": "Where?", "context": ["Paris."], "response": None}])
    out = score(fake, "openai-decisions/gpt-6-luna", frame, metrics=("abstention",), gate={"max_skip_rate": 1.0})
    assert out["abstention_status"].tolist() == ["skipped"] and fake.decision_calls == 0


def gold_rows(ranks: list[int], n: int) -> pd.DataFrame:
    """Rows of ``n`` passages, the one at ``ranks[i]`` (1-based) answering the request, the others another subject's."""
    out = []
    for i, gold in enumerate(ranks):
        passages = [f"Rainfall in district {i}-{j} was measured last spring." for j in range(1, n + 1)]
        passages[gold - 1] = f"The harbour of Velmor{i} was founded by Asta{i} in 1402."
        out.append({"id": f"r{i}", "request": f"Who founded the harbour of Velmor{i}?", "context": passages})
    return pd.DataFrame(out)


def gold_in_state(text: str) -> float:
    """The fake's P(yes) of a sufficiency question: 0.9 when the state's passages hold the founder, else 0.1."""
    return 0.9 if "founded by Asta" in text else 0.1


@pytest.mark.parametrize("model", PROTOCOLS)
def test_sufficient_k_under_a_decision_model_asks_sufficiencys_question_on_each_prefix(fake, model):
    # it was refused before any call ("sufficient_k asks no typed questions", exit 2); each probe is now sufficiency's question
    from ragjudge.judges.sufficient_k import calls_at_most

    fake.decision_p_yes = gold_in_state
    ranks, n = [1, 3, 6, 8], 8
    out = score(fake, model, gold_rows(ranks, n), metrics=("sufficient_k",))
    assert out["sufficient_k_status"].tolist() == ["ok"] * len(ranks)
    assert out["sufficient_k_k"].tolist() == ranks
    assert out["sufficient_k_monotone"].tolist() == [True] * len(ranks)
    assert fake.decision_calls <= len(ranks) * (1 + calls_at_most(n))  # the whole context, then the search and the check
    assert all(questions_of(body) == ["sufficiency"] for body in fake.requests)


@pytest.mark.parametrize("model", PROTOCOLS)
def test_sufficient_k_and_sufficiency_under_a_decision_model_ask_the_whole_context_once(fake, model):
    fake.decision_p_yes = gold_in_state
    out = score(fake, model, gold_rows([2], 4), metrics=("sufficiency", "sufficient_k"))
    assert out["sufficiency_status"].tolist() == ["ok"] and out["sufficient_k_k"].tolist() == [2]
    wholes = [body for body in fake.requests if "Rainfall in district 0-4" in json.dumps(body)]
    assert len(wholes) == 1 and questions_of(wholes[0]) == ["sufficiency"]  # one request, the question asked once


def test_sufficient_k_under_a_decision_model_follows_sufficiencys_yes_threshold(fake):
    fake.decision_p_yes = lambda text: 0.9 if "founded by Asta" in text else (0.6 if "0-3" in text else 0.1)
    out = score(fake, "systemone/jev-latest", gold_rows([4], 4), metrics=("sufficient_k",))
    assert out["sufficient_k_k"].tolist() == [3]  # P(yes) 0.6 on the first 3 passages: sufficient at 0.5
    out = score(fake, "systemone/jev-latest", gold_rows([4], 4), metrics=("sufficient_k",), sufficiency={"yes_threshold": 0.7})
    assert out["sufficient_k_k"].tolist() == [4]


@pytest.mark.parametrize("model", PROTOCOLS)
def test_a_yaml_judge_per_passage_asks_a_decision_model_one_predicate_per_passage(fake, model):
    judges = [{"name": "names_founder", "needs": ["request", "context"], "per": "passage",
               "prompt": "Does the passage name who founded the place asked about?\n{{ request }}\n{{ passages }}"}]
    fake.decision_p_question = {"names_founder.passage_1": 0.1, "names_founder.passage_2": 0.8, "names_founder.passage_3": 0.3}
    frame = pd.DataFrame([{"request": "Who founded Velmor?", "context": ["one", "two", "three"]}])
    out = score(fake, model, frame, metrics=("sufficiency", "names_founder"), judges=judges)
    assert fake.decision_calls == 1  # beside sufficiency's question, in the row's one request
    assert questions_of(fake.requests[0]) == ["names_founder.passage_1", "names_founder.passage_2", "names_founder.passage_3", "sufficiency"]
    assert "Answer for passage 2 of the context alone" in json.dumps(fake.requests[0]["questions"])  # the rendered prompt, of passage 2
    assert out["names_founder_verdicts"].iloc[0] == ["no", "yes", "no"]
    assert out["names_founder_p_relevant"].iloc[0] == [0.1, 0.8, 0.3]
    assert out["names_founder_first_relevant"].tolist() == [2] and out["names_founder_score"].iloc[0] == pytest.approx(1 / 3)


@pytest.mark.parametrize("model", PROTOCOLS)
def test_pairwise_asks_one_choice_question_per_order_and_averages_the_orders_probabilities(fake, model):
    frame = pd.DataFrame([{"request": "Where is Paris?", "expected_response": "Paris is in France, on the Seine.",
                           "response_a": "In France.", "response_b": "In France, on the Seine."}])
    out = score(fake, model, frame, metrics=("pairwise",), pairwise={"responses": ["response_a", "response_b"]})
    assert fake.decision_calls == 2  # one request per order
    first, second = fake.requests
    states = [body["state"] if "state" in body else json.loads(body["input"]) for body in (first, second)]
    assert [(s["response_A"], s["response_B"]) for s in states] == [("In France.", "In France, on the Seine."),
                                                                  ("In France, on the Seine.", "In France.")]
    asked = first["questions"]
    question = asked["pairwise"] if isinstance(asked, dict) else asked[0]
    assert question["type"] == "choice"
    # the fake chooses the first option (A) with 0.7 in both orders: A, then B shown as A: the orders disagree, a tie
    assert out["pairwise_verdict"].tolist() == ["tie"] and out["pairwise_inconsistent"].tolist() == [True]
    # P(A) = (0.7 + 0.15) / 2, P(B) the same, P(tie) 0.15: P(pass) = P(score >= 0) = 0.575
    assert out["pairwise_distribution"].iloc[0] == pytest.approx([0.425, 0.15, 0.425], abs=1e-6)
    assert out["pairwise_probability"].tolist() == pytest.approx([0.575], abs=1e-6)
