"""One-row calls in each reference's own shape (issue 27, item 5): ``ragjudge.compat.mlflow``,
``.azure`` and ``.axion``, thin adapters over ``ragjudge.compat.judge_row``, through the fake
judge server; MLflow's scorer in a real ``mlflow.genai.evaluate`` run on a local SQLite store."""

from __future__ import annotations

import asyncio
import math
import os

import pytest

from helpers import HAVE_MLFLOW
from ragjudge import compat
from ragjudge.compat.axion import ContextualSufficiency, MetricEvaluationResult
from ragjudge.compat.azure import ResponseCompletenessEvaluator, model_from_config
from ragjudge.compat.mlflow import ais_context_sufficient, is_context_sufficient

PARIS = [{"content": "Paris is the capital of France.", "doc_uri": "geography.txt"}, {"content": "France is in Western Europe."}]


@pytest.fixture
def judge(server, tmp_path):
    compat.configure(model="openai/fake-judge", api_base=server.url, cache={"dir": str(tmp_path / "cache")})
    yield server
    compat.configure()


def test_is_context_sufficient_returns_a_feedback_yes_and_no(judge):
    yes = is_context_sufficient(request="What is the capital of France?", context=PARIS, expected_facts=["Paris is the capital of France."])
    no = is_context_sufficient(request="What is the capital of France?", context=PARIS,
                               expected_response="Paris has 2.1 million inhabitants.", name="my_sufficiency")
    assert (yes.value, yes.name, yes.error) == ("yes", "context_sufficiency", None)
    assert (no.value, no.name, no.error) == ("no", "my_sufficiency", None)
    assert isinstance(yes.rationale, str) and yes.rationale
    assert yes.metadata["ground_truth"] == "expected_facts" and no.metadata["ground_truth"] == "expected_response"
    assert yes.metadata["mode"] == "grounded" and yes.metadata["judge_model"] == "openai/fake-judge"
    if HAVE_MLFLOW:
        from mlflow.entities import Feedback

        assert isinstance(yes, Feedback) and yes.source.source_type == "LLM_JUDGE"


# issue 60 item 13: compat wrote the source as openai/fake-judge and metadata judge: ragjudge, the command line
# openai:/fake-judge and judged_by: one form, MLflow's, the command's
def test_a_compat_feedback_names_its_judge_as_the_commands_feedback_does(judge):
    pytest.importorskip("mlflow")
    from ragjudge import __version__

    feedback = is_context_sufficient(request="What is the capital of France?", context=PARIS,
                                     expected_facts=["Paris is the capital of France."], model="openai/fake-judge")
    assert feedback.source.source_id == "openai:/fake-judge"
    assert feedback.metadata["judged_by"] == f"ragjudge {__version__}" and "judge" not in feedback.metadata
    # a second shape: the response_completeness scorer's feedback, the same form
    from ragjudge.compat.mlflow import response_completeness

    rated = response_completeness(inputs={"question": "What is the capital of France?"}, outputs="Paris is the capital of France.",
                                  expectations={"expected_facts": ["Paris is the capital of France."]})
    assert rated.error is None and 1 <= rated.value <= 5
    assert rated.source.source_id == "openai:/fake-judge" and rated.metadata["judged_by"] == f"ragjudge {__version__}"


# issue 60 item 13: is_context_sufficient(context=None) raised "sufficiency needs a context column": a one-row call has no
# columns. A needed argument given as None is a feedback whose error names it, no call made
def test_a_needed_argument_given_as_none_is_named_in_the_feedback(judge):
    feedback = is_context_sufficient(request="What is the capital of France?", context=None,
                                     expected_facts=["Paris is the capital of France."])
    assert feedback.value is None and judge.calls == 0
    assert "no context given (context=None): sufficiency needs it" in str(feedback.error)
    # a second shape: Azure's evaluator without a response, the same rule through the same row call
    result = ResponseCompletenessEvaluator()(response=None, ground_truth="Paris is the capital of France.")
    assert math.isnan(result["response_completeness"]) and result["response_completeness_result"] == "fail"
    assert "no response given (response=None)" in result["response_completeness_reason"] and judge.calls == 0


def test_is_context_sufficient_without_expectations_is_refused_as_mlflow_does(judge):
    feedback = is_context_sufficient(request="What is the capital of France?", context=PARIS)
    assert feedback.value is None and "no expected_facts or expected_response" in str(feedback.error)
    assert judge.calls == 0


def test_the_expected_response_wins_in_the_one_row_call_too(judge):
    feedback = is_context_sufficient(request="What is the capital of France?", context=PARIS,
                                     expected_facts=["Paris has 2.1 million inhabitants."], expected_response="Paris is the capital of France.")
    assert (feedback.value, feedback.metadata["ground_truth"]) == ("yes", "expected_response")


def test_one_cache_and_the_sync_form_inside_a_running_loop(judge):
    args = {"request": "What is the capital of France?", "context": PARIS, "expected_facts": ["Paris is the capital of France."]}

    async def notebook():
        first = is_context_sufficient(**args)  # the sync form, called while this loop runs
        second = await ais_context_sufficient(**args)
        return first, second

    first, second = asyncio.run(notebook())
    assert first.value == second.value == "yes" and judge.calls == 1
    assert second.metadata["cached"] == "true"


def test_the_mlflow_model_form_is_taken(judge):
    feedback = is_context_sufficient(request="What is the capital of France?", context=PARIS, expected_facts=["Paris is the capital of France."],
                                     model="openai:/fake-judge")
    assert feedback.value == "yes" and feedback.metadata["judge_model"] == "openai/fake-judge"


def test_azure_evaluator_returns_azure_keys_and_types(judge):
    evaluator = ResponseCompletenessEvaluator(threshold=3)
    truth = "Ann finds a map. She sails to the island. She finds gold. She returns home rich."
    full = evaluator(response="Ann finds a map, sails to the island, finds gold and returns home rich.", ground_truth=truth)
    half = evaluator(response="Ann finds a map. She finds gold.", ground_truth=truth)
    keys = {"response_completeness", "response_completeness_result", "response_completeness_threshold", "response_completeness_reason",
            "response_completeness_prompt_tokens", "response_completeness_completion_tokens", "response_completeness_total_tokens",
            "response_completeness_finish_reason", "response_completeness_model", "response_completeness_sample_input",
            "response_completeness_sample_output"}
    assert keys <= set(full)
    assert type(full["response_completeness"]) is int and full["response_completeness"] == 5 and full["response_completeness_result"] == "pass"
    assert (half["response_completeness"], half["response_completeness_result"]) == (3, "pass")
    assert half["response_completeness_missing"] == ["She sails to the island.", "She returns home rich."]
    assert full["response_completeness_threshold"] == 3 and isinstance(full["response_completeness_reason"], str)
    assert full["response_completeness_total_tokens"] == full["response_completeness_prompt_tokens"] + full["response_completeness_completion_tokens"] > 0
    assert (full["response_completeness_model"], full["response_completeness_finish_reason"]) == ("openai/fake-judge", "stop")
    strict = ResponseCompletenessEvaluator(threshold=4)(response="Ann finds a map. She finds gold.", ground_truth=truth)
    assert (strict["response_completeness"], strict["response_completeness_result"]) == (3, "fail")


def test_azure_evaluator_without_a_ground_truth_gives_nan_and_fail(judge):
    result = ResponseCompletenessEvaluator()(response="Ann finds a map.", ground_truth="")
    assert math.isnan(result["response_completeness"]) and result["response_completeness_result"] == "fail"
    assert "no expected_response or expected_facts" in result["response_completeness_reason"]


def test_azure_model_config_becomes_a_litellm_azure_model():
    model, settings = model_from_config({"azure_endpoint": "https://my.openai.azure.com", "api_key": "k-123",
                                         "azure_deployment": "gpt-4o", "api_version": "2024-10-21"})
    assert model == "azure/gpt-4o" and settings["api_base"] == "https://my.openai.azure.com"
    assert os.environ[settings["api_key_env"]] == "k-123" and "k-123" not in repr(settings)
    assert model_from_config({"model": "gpt-4o-mini", "base_url": "http://x/v1"}) == ("openai/gpt-4o-mini", {"api_base": "http://x/v1"})
    with pytest.raises(ValueError, match="azure_deployment"):
        model_from_config({"azure_endpoint": "https://my.openai.azure.com"})


def test_azure_model_config_reaches_the_judge(server, tmp_path):
    compat.configure(cache={"dir": str(tmp_path / "cache")})
    try:
        evaluator = ResponseCompletenessEvaluator({"model": "fake-judge", "base_url": server.url, "api_key": "x"})
        result = evaluator(response="Ann finds a map.", ground_truth="Ann finds a map.")
    finally:
        compat.configure()
    assert result["response_completeness"] == 5 and server.calls == 2  # statements, then coverage


class Item:
    def __init__(self, query, retrieved_content, expected_output=None):
        self.query, self.retrieved_content, self.expected_output = query, retrieved_content, expected_output


@pytest.mark.parametrize("shape", ["dict", "object"])
def test_axion_metric_execute_gives_score_signals_and_pretty(judge, shape):
    metric = ContextualSufficiency()
    good = {"query": "What is the capital of France?", "retrieved_content": ["Paris is the capital of France."]}
    bad = {"query": "What is the capital of France?", "retrieved_content": "Berlin is the capital of Germany."}
    items = [good, bad] if shape == "dict" else [Item(**good, expected_output="Lyon"), Item(**bad)]
    results = [asyncio.run(metric.execute(item)) for item in items]
    assert all(isinstance(r, MetricEvaluationResult) for r in results)
    assert [r.score for r in results] == [1.0, 0.0]
    assert [r.signals["is_sufficient"] for r in results] == [True, False]
    assert set(results[0].signals) >= {"sufficiency_score", "is_sufficient", "reasoning", "query", "context"}
    assert results[0].signals["query"] == "What is the capital of France?"
    assert results[0].signals["context"] == ["Paris is the capital of France."]
    assert results[0].pretty().startswith("Contextual Sufficiency: 1.0 (sufficient)")


def test_axion_ignores_a_reference_on_the_item(judge):
    # reference-free even with a reference: a grounded judge would say "no" (Lyon is not in the passage)
    result = ContextualSufficiency().execute_sync({"query": "What is the capital of France?", "retrieved_content": ["Paris is the capital of France."],
                                                   "expected_output": "Lyon"})
    assert result.score == 1.0


@pytest.mark.slow  # a real mlflow.genai.evaluate run (3 to 11 s measured)
@pytest.mark.skipif(not HAVE_MLFLOW, reason="the [mlflow] extra is not installed")
def test_a_real_mlflow_genai_evaluate_run_logs_ragjudge_feedback(judge, tmp_path, monkeypatch):
    monkeypatch.setenv("MLFLOW_DISABLE_TELEMETRY", "true")
    monkeypatch.setenv("MLFLOW_ENABLE_ASYNC_TRACE_LOGGING", "false")
    import mlflow
    from mlflow.entities import Document, SpanType

    from ragjudge.compat.mlflow import RetrievalSufficiency

    mlflow.set_tracking_uri(f"sqlite:///{tmp_path / 'mlflow.db'}")
    mlflow.set_experiment("ragjudge-compat")

    @mlflow.trace(span_type=SpanType.RETRIEVER)
    def retrieve_docs(query: str) -> list:
        if "france" in query.lower():
            return [Document(id="doc_1", page_content="Paris is the capital of France.", metadata={"doc_uri": "geography.txt"})]
        return [Document(id="doc_3", page_content="MLflow has several components, among them Tracking and Projects.")]

    @mlflow.trace
    def rag_app(query: str) -> dict:
        return {"response": " ".join(doc.page_content for doc in retrieve_docs(query))}

    data = [{"inputs": {"query": "What is the capital of France?"}, "expectations": {"expected_facts": ["Paris is the capital of France."]}},
            {"inputs": {"query": "What are all the MLflow components?"},
             "expectations": {"expected_facts": ["Components include Tracking", "Components include Models and Registry"]}}]
    try:
        result = mlflow.genai.evaluate(data=data, predict_fn=rag_app, scorers=[RetrievalSufficiency()])
        traces = mlflow.search_traces(run_id=result.run_id, return_type="list")
    finally:
        mlflow.set_tracking_uri(None)
    found = {}
    for trace in traces:
        query = trace.data.spans[0].inputs["query"]
        feedback = [a for a in trace.info.assessments if a.name == "retrieval_sufficiency"]
        assert len(feedback) == 1 and feedback[0].metadata["judged_by"].startswith("ragjudge ") and feedback[0].span_id
        assert feedback[0].source.source_id == "openai:/fake-judge"  # issue 60 item 13: as the command writes it
        found[query] = feedback[0].value
    assert found == {"What is the capital of France?": "yes", "What are all the MLflow components?": "no"}


# -- issue 45 item 4: MLflow's own shapes ---------------------------------------------------------------

def test_the_value_is_mlflows_categorical_rating_and_the_columns_are_checked_as_mlflow_does(judge):
    pytest.importorskip("mlflow")
    from mlflow.genai.judges import CategoricalRating
    from mlflow.genai.scorers.builtin_scorers import MissingColumnsException

    from ragjudge.compat.mlflow import RetrievalSufficiency

    feedback = is_context_sufficient(request="What is the capital of France?", context=PARIS,
                                     expected_facts=["Paris is the capital of France."])
    assert feedback.value is CategoricalRating.YES and feedback.value == "yes"
    scorer = RetrievalSufficiency()
    assert scorer.required_columns == {"inputs", "trace"}
    scorer.validate_columns({"inputs", "trace", "outputs"})
    with pytest.raises(MissingColumnsException):
        scorer.validate_columns({"inputs"})
