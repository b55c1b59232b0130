"""Prices read from litellm's bundled table as data give litellm's own figures (issue 22), and the
tokens ragjudge counts itself are litellm's count."""

from __future__ import annotations

import pytest

from conftest import SAMPLE
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


# new user's first hour (issue 44 item 13): the dry run counts tokens itself, as litellm does
def test_the_token_count_is_litellms_on_the_sample_prompts():
    import pandas as pd

    from ragjudge import load_config
    from ragjudge.prices import TokenCounter, _litellm
    from ragjudge.scoring import Scorer
    from ragjudge.types import Call

    frame = pd.read_json(SAMPLE / "rag_eval.jsonl", lines=True)
    litellm = _litellm()
    counter = TokenCounter("openai/gpt-4o-mini")
    with Scorer(load_config(None, {"judge": {"model": "openai/gpt-4o-mini"}, "cache": {"enabled": False}})) as scorer:
        records = scorer.records(frame, scorer.resolve(frame))
        calls = [call for record in records for judge in scorer.judges if isinstance(call := judge.prepare(record), Call)]
    assert len(calls) > 20
    from litellm.litellm_core_utils.token_counter import TIKTOKEN_ENCODE_CHUNK_SIZE_CHARS as piece

    for call in calls:  # litellm encodes a long text in pieces and adds them up: a token more or less at each piece's edge
        ours, theirs = counter(call.messages), litellm.token_counter(model="gpt-4o-mini", messages=call.messages)
        edges = sum(len(m["content"]) // piece for m in call.messages)
        assert abs(ours - theirs) <= 3 * edges, (ours, theirs, edges)  # tiktoken on the whole text: OpenAI's own count
    reply = '{"verdict": "yes", "rationale": "The passage says the tower is in Paris — façade included."}'
    assert counter.text(reply) == litellm.token_counter(model="gpt-4o-mini", text=reply)
