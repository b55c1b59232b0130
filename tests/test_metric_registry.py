"""A metric added by one module and one registry line, in a fresh Python process (the registry is
read once per process): judged, configured, gated and documented. The registry in-process:
tests/unit/test_metric_registry.py."""

from __future__ import annotations

import pytest
import json
import subprocess
import sys
import textwrap

from conftest import ROOT

pytestmark = pytest.mark.integration  # a fresh Python process

JUDGE = '''
from ragjudge.judges.base import Judge
from ragjudge.strict import Strict
from ragjudge.types import Verdict
from pydantic import Field


class BrevitySettings(Strict):
    max_words: int = Field(12, ge=1, description="the most words a brief response has")


class BrevityJudge(Judge):
    """Brief responses pass: no model call, a decision on the response's length."""

    name = "brevity"
    version = "brevity-1"
    needs = ("response",)
    description = "is the response brief"
    Settings = BrevitySettings

    def prepare(self, record):
        if not record.response:
            return Verdict.skipped(self.name, "no response")
        words = len(record.response.split())
        brief = words <= self.options.max_words
        return Verdict(self.name, "ok", score=1.0 if brief else 0.0, passed=brief, rationale=f"{words} words")
'''


RUN = '''
import json, sys
sys.path.insert(0, sys.argv[1])
from ragjudge import metrics
metrics.register(metrics.Metric("brevity", "brevity_judge", "BrevityJudge", "brevity's own settings: how brief is brief", default=False))

import pandas as pd
import ragjudge
from ragjudge.configdoc import default_yaml
from ragjudge.errors import ConfigError
from ragjudge.gate import check_gate

rows = pd.DataFrame([{"id": "a", "request": "q", "response": "Paris."}, {"id": "b", "request": "q", "response": "It is in Paris, the capital."}])
scored = ragjudge.score(rows, metrics=["brevity"], brevity={"max_words": 3}, gate={"min_pass_rate": {"brevity": 0.9}}, model="openai/fake")
try:
    ragjudge.load_config(None, {"brevity": {"max_words": 0}})
    refused = None
except ConfigError as exc:
    refused = str(exc)
print(json.dumps({"scores": scored.frame["brevity_score"].tolist(), "rationale": scored.frame["brevity_rationale"].tolist(),
                  "exit": check_gate(scored.summary).exit_code, "default_metrics": ragjudge.load_config().metrics,
                  "refused": refused, "documented": "brevity:" in default_yaml() and "max_words: 12" in default_yaml()}))
'''


def test_a_metric_added_by_one_module_and_one_registry_line_is_judged_configured_gated_and_documented(tmp_path):
    (tmp_path / "brevity_judge.py").write_text(textwrap.dedent(JUDGE), encoding="utf-8")
    done = subprocess.run([sys.executable, "-c", RUN, str(tmp_path)], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout.strip().splitlines()[-1])
    assert found["scores"] == [1.0, 0.0] and found["rationale"] == ["1 words", "6 words"]  # its own settings: max_words 3
    assert found["exit"] == 1  # the gate bound on it: 1 of 2 passed < 0.9
    assert found["default_metrics"] == ["sufficiency", "completeness"]  # default=False: judged when asked for
    assert found["refused"] is not None and "brevity.max_words" in found["refused"]
    assert found["documented"]
