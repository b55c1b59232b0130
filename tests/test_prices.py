"""Prices read from litellm's bundled table as data give litellm's own figures (issue 22)."""

from __future__ import annotations

import pytest

from ragjudge import prices


@pytest.mark.parametrize("provider, model", [
    ("openai", "gpt-4o-mini"),
    ("openai", "gpt-4o"),
    ("openai", "gpt-4o-mini-2024-07-18"),
    ("openai", "gpt-3.5-turbo"),
    ("openai", "gpt-4.1-nano"),
    ("anthropic", "claude-haiku-4-5"),
])
@pytest.mark.parametrize("prompt_tokens, completion_tokens", [(1234, 567), (1, 0), (90_000, 1_024)])
def test_cost_is_litellms_completion_cost(provider, model, prompt_tokens, completion_tokens):
    from ragjudge.transports.litellm import import_litellm

    litellm = import_litellm()
    response = litellm.ModelResponse(model=model, choices=[{"message": {"role": "assistant", "content": "{}"}, "finish_reason": "stop"}],
                                      usage={"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                                             "total_tokens": prompt_tokens + completion_tokens})
    expected = litellm.completion_cost(completion_response=response, custom_llm_provider=provider)
    assert expected > 0 or prompt_tokens + completion_tokens <= 1
    assert prices.cost(provider, [model], prompt_tokens, completion_tokens) == pytest.approx(expected, rel=1e-9, abs=1e-15)


def test_an_unknown_model_has_no_price_and_the_reply_model_is_tried_first():
    assert prices.cost("openai", ["fake-judge"], 100, 10) is None
    named = prices.cost("openai", ["gpt-4o-mini-2024-07-18", "fake-judge"], 100, 10)
    assert named == prices.cost("openai", ["gpt-4o-mini"], 100, 10) and named > 0
    assert prices.entry("anthropic", "gpt-4o-mini") is None  # another provider's row is not this one's price
