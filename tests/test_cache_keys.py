"""The response cache's keys do not change: existing caches stay valid (issue 12).

``tests/data/golden_cache_keys.json`` was computed by ragjudge before the library-core
refactor (commit cddcf92), from the rows and settings below; every key must come out the same.
Hosted judges have since been given sufficiency prompts that reason before they decide, under
a prompt version of their own (issue 20): ``reasoning_first: false`` asks for the earlier
order, whose keys must not change.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import read_jsonl, write_jsonl
from helpers import CACHE_KEY_ROWS as ROWS
from helpers import _Resolved
from helpers import landmark_rows as rows
from ragjudge.config import read_raw_config as load_config  # the config as read, untyped
from ragjudge.fakeserver import FakeJudgeServer
from ragjudge.judges import make_judges
from ragjudge.model import Model
from ragjudge.records import Columns, resolve_mapping, to_records
from ragjudge.types import Verdict

GOLDEN = json.loads((Path(__file__).parent / "data" / "golden_cache_keys.json").read_text())

SETTINGS = {
    "default": {"model": "openai/gpt-4o-mini"},
    "bare": {"model": "gpt-4o-mini"},
    "server": {"model": "openai/fake-judge", "api_base": "http://127.0.0.1:9/v1", "seed": 7, "temperature": 0.2, "max_tokens": 500},
    "samples": {"model": "openai/fake-judge", "api_base": "http://127.0.0.1:9/v1", "samples": 3},
    "probabilities": {"model": "openai/fake-judge", "api_base": "http://127.0.0.1:9/v1", "yes_threshold": 0.84, "fact_threshold": 0.55, "fact_evidence": 0.5, "coverage_score": True},
    "local": {"model": "local/qwen2.5-coder-1.5b", "yes_threshold": 0.84, "fact_threshold": 0.55, "fact_evidence": 0.5, "coverage_score": True, "max_tokens": 512, "timeout": 600},
    "expected_score": {"model": "anthropic/claude-3-5-haiku-latest", "expected_score": True},
}
STATEMENTS = ["Ann finds a map.", "She sails to the island.", "She finds gold."]


def current_keys(reasoning_first: bool | None = False) -> dict[str, str]:
    keys = {}
    for name, settings in SETTINGS.items():
        config = load_config(None, {"judge": {**settings, "reasoning_first": reasoning_first}})
        model = Model(config.judge, None, _Resolved(config.judge))
        for row_name, row in ROWS.items():
            record = to_records([row], resolve_mapping(list(row), [row], Columns()), 0, True)[0]
            for judge in make_judges(config):
                call = judge.prepare(record)
                if isinstance(call, Verdict):
                    continue
                steps = [call]
                if not call.final:
                    steps.append(judge.follow_up(call, Verdict(metric=judge.name, status="ok", details={"statements": STATEMENTS})))
                for step in steps:
                    for sample in range(config.judge.samples if step.final else 1):
                        keys[f"{name}/{row_name}/{judge.name}/{step.mode}/{sample}"] = model.key(step, sample)
    return keys


def test_cache_keys_are_those_of_earlier_versions():
    assert current_keys() == GOLDEN


def test_only_hosted_sufficiency_prompts_changed_by_default():
    changed = {name for name, key in current_keys(None).items() if GOLDEN[name] != key}
    assert changed == {name for name in GOLDEN if "/sufficiency/" in name and not name.startswith("local/")}


@pytest.mark.parametrize("change", [{"temperature": 0.3}, {"seed": 1}, {"max_tokens": 100}, {"model": "openai/gpt-4o"}])
def test_a_setting_that_changes_the_reply_changes_the_key(change):
    base = load_config(None, {"judge": SETTINGS["default"]})
    other = load_config(None, {"judge": {**SETTINGS["default"], **change}})
    row = ROWS["reference_free"]
    record = to_records([row], resolve_mapping(list(row), [row], Columns()))[0]
    calls = [make_judges(config)[0].prepare(record) for config in (base, other)]
    keys = [Model(c.judge, None, _Resolved(c.judge)).key(call) for c, call in zip((base, other), calls)]
    assert keys[0] != keys[1]


@pytest.fixture
def second_server():
    with FakeJudgeServer() as fake:
        yield fake


# peer report (issue 29 item 5): the cache key holds the endpoint actually used, however it was given
def test_the_endpoint_from_the_environment_is_in_the_cache_key(run_cli, tmp_path, server, second_server, transport, monkeypatch, cache_dir):
    source = write_jsonl(tmp_path / "in.jsonl", rows(3))
    out = tmp_path / "out.jsonl"
    args = ["score", source, "-m", "sufficiency", "--model", "openai/fake-judge", "--cache-dir", cache_dir, "-o", str(out),
            "--min-pass-rate", "0", "--transport", transport]
    monkeypatch.setenv("OPENAI_BASE_URL", server.url)
    assert run_cli(args, judge=False).code == 0
    assert server.calls == 3 and second_server.calls == 0
    monkeypatch.setenv("OPENAI_BASE_URL", second_server.url)
    assert run_cli(args, judge=False).code == 0
    assert second_server.calls == 3 and server.calls == 3  # B is called, not answered from A's replies
    assert all(r["sufficiency_cached"] is False for r in read_jsonl(out))
    monkeypatch.setenv("OPENAI_BASE_URL", server.url)  # back to A: its replies are in the cache
    assert run_cli(args, judge=False).code == 0
    assert server.calls == 3 and all(r["sufficiency_cached"] is True for r in read_jsonl(out))


# peer report (issue 29 item 5): the cache key holds the endpoint actually used, however it was given
def test_the_key_names_the_endpoint_whatever_gave_it_and_none_keeps_the_old_key(monkeypatch):
    from ragjudge import load_config
    from ragjudge.model import Model
    from ragjudge.types import Call

    class Named:
        free, where = False, ""

        def __init__(self, provider_model: str) -> None:
            self.provider_model = provider_model

    call = Call(metric="sufficiency", version="v", mode=None, messages=[{"role": "user", "content": "q"}], response_format=None)

    def key(judge: dict) -> str:
        config = load_config(None, {"judge": judge})
        return Model(config.judge, None, Named("openai/gpt-4o-mini")).key(call)

    none = key({"model": "openai/gpt-4o-mini"})
    flag = key({"model": "openai/gpt-4o-mini", "api_base": "http://proxy:8000/v1"})
    monkeypatch.setenv("OPENAI_API_BASE", "http://proxy:8000/v1")
    assert key({"model": "openai/gpt-4o-mini"}) == flag  # the same endpoint, from the environment
    monkeypatch.delenv("OPENAI_API_BASE")
    monkeypatch.setenv("OPENAI_BASE_URL", "https://api.openai.com/v1/")
    assert key({"model": "openai/gpt-4o-mini"}) == none  # OpenAI's own URL is the default: the old key
    monkeypatch.setenv("OPENAI_BASE_URL", "http://other:9/v1")
    assert key({"model": "openai/gpt-4o-mini"}) not in (none, flag)
    assert key({"model": "openai/gpt-4o-mini", "api_base": "http://proxy:8000/v1"}) == flag  # the flag wins over the environment
