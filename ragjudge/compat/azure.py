"""Azure AI Evaluation's ``ResponseCompletenessEvaluator`` call shape on ragjudge's judge.

    from ragjudge.compat.azure import ResponseCompletenessEvaluator
    evaluator = ResponseCompletenessEvaluator(model_config)        # Azure's dict, or model="openai/gpt-4o-mini"
    result = evaluator(response="...", ground_truth="...")
    result["response_completeness"], result["response_completeness_result"]   # 4, "pass"

The result has Azure's keys and types: ``response_completeness`` (int 1..5),
``response_completeness_result`` ("pass" at score >= threshold, else "fail"),
``response_completeness_threshold``, ``response_completeness_reason``, and the token and
model keys (``_prompt_tokens``, ``_completion_tokens``, ``_total_tokens``, ``_finish_reason``,
``_model``, ``_sample_input``, ``_sample_output``). ragjudge judges each key statement of the
ground truth (``missing``: ``response_completeness_missing``, ragjudge's own key). Every call goes
through ``ragjudge.compat.judge_row``.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from typing import Any

from ragjudge.compat import ajudge_row, judge_row

__all__ = ["ResponseCompletenessEvaluator", "model_from_config"]

KEY = "response_completeness"


def model_from_config(model_config: Any) -> tuple[str, dict[str, Any]]:
    """Azure's ``model_config`` -> (litellm model string, ragjudge judge settings).

    ``AzureOpenAIModelConfiguration`` (``azure_endpoint``, ``azure_deployment``, ``api_key``,
    ``api_version``) -> ``azure/DEPLOYMENT`` with ``api_base`` the endpoint; the key is put in
    an environment variable of this process named by ``judge.api_key_env`` (never in a config
    or cache key), the API version in ``AZURE_API_VERSION`` (litellm reads it) unless it is set.
    ``OpenAIModelConfiguration`` (``model``, ``base_url``, ``api_key``) -> ``openai/MODEL``.
    Raises ``ValueError`` naming the missing key."""
    config = dict(model_config)
    settings: dict[str, Any] = {}
    if config.get("azure_deployment") or config.get("azure_endpoint"):
        if not config.get("azure_deployment"):
            raise ValueError("model_config needs azure_deployment (the deployment name of the judge model)")
        model = f"azure/{config['azure_deployment']}"
        if config.get("azure_endpoint"):
            settings["api_base"] = str(config["azure_endpoint"])
        if config.get("api_version") and not os.environ.get("AZURE_API_VERSION"):
            os.environ["AZURE_API_VERSION"] = str(config["api_version"])
    elif config.get("model"):
        model = str(config["model"]) if "/" in str(config["model"]) else f"openai/{config['model']}"
        if config.get("base_url"):
            settings["api_base"] = str(config["base_url"])
    else:
        raise ValueError("model_config needs azure_deployment (Azure OpenAI) or model (OpenAI)")
    if config.get("api_key"):
        name = "RAGJUDGE_COMPAT_KEY_" + hashlib.sha256(str(config["api_key"]).encode()).hexdigest()[:12].upper()
        os.environ[name] = str(config["api_key"])
        settings["api_key_env"] = name
    return model, settings


class ResponseCompletenessEvaluator:
    """``ResponseCompletenessEvaluator(model_config=None, *, threshold=3, model=None)``: call it
    with ``response=`` and ``ground_truth=`` for Azure's result dict (module docstring).
    ``model_config``: Azure's dict (``model_from_config``); ``model``: a litellm model string
    instead (default: the configured judge). ``threshold``: the pass mark on 1..5."""

    id = "azureai://built-in/evaluators/response_completeness"

    def __init__(self, model_config: Any = None, *, threshold: int = 3, model: str | None = None, **kwargs: Any) -> None:
        self.threshold = threshold
        self._model, self._settings = (model, {}) if model_config is None else model_from_config(model_config)
        if model:
            self._model = model

    def _row(self, response: Any, ground_truth: Any) -> dict[str, Any]:
        return {"response": response, "expected_response": ground_truth}

    def _result(self, judged: Any, response: Any, ground_truth: Any) -> dict[str, Any]:
        status = judged.get("completeness_status")
        score = judged.get("completeness_score")
        value = int(round(score)) if status == "ok" and score is not None else math.nan
        prompt, completion = judged.get("completeness_prompt_tokens"), judged.get("completeness_completion_tokens")
        reason = judged.get("completeness_rationale") if status == "ok" else f"{status}: {judged.get('completeness_error')}"
        sample_output = {"score": None if status != "ok" else value, "explanation": reason, "missing": judged.get("completeness_missing")}
        return {
            KEY: value,
            f"{KEY}_result": ("pass" if value >= self.threshold else "fail") if status == "ok" else "fail",
            f"{KEY}_threshold": self.threshold,
            f"{KEY}_reason": reason,
            f"{KEY}_prompt_tokens": int(prompt or 0),
            f"{KEY}_completion_tokens": int(completion or 0),
            f"{KEY}_total_tokens": int(prompt or 0) + int(completion or 0),
            f"{KEY}_finish_reason": "stop" if status == "ok" and not judged.get("completeness_cached") else ("" if status == "ok" else status),
            f"{KEY}_model": str(judged.get("judge_model") or ""),
            f"{KEY}_sample_input": json.dumps([{"role": "user", "content": json.dumps({"response": response, "ground_truth": ground_truth},
                                                                                     ensure_ascii=False, default=str)}], ensure_ascii=False),
            f"{KEY}_sample_output": json.dumps([{"role": "assistant", "content": json.dumps(sample_output, ensure_ascii=False)}],
                                               ensure_ascii=False),
            f"{KEY}_missing": list(judged.get("completeness_missing") or []),
        }

    def __call__(self, *, response: Any, ground_truth: Any, **kwargs: Any) -> dict[str, Any]:
        judged = judge_row("completeness", self._row(response, ground_truth), model=self._model, **self._settings)
        return self._result(judged, response, ground_truth)

    async def acall(self, *, response: Any, ground_truth: Any, **kwargs: Any) -> dict[str, Any]:
        """``__call__`` for async code."""
        judged = await ajudge_row("completeness", self._row(response, ground_truth), model=self._model, **self._settings)
        return self._result(judged, response, ground_truth)
