"""What the judges are and what they would be sent: ``ragjudge judges`` and ``ragjudge render``.

- ``describe(config)``: one entry per metric the config can run (built-in, bundled, defined in
  the config), with what it needs, its kind, scale, threshold and prompt version.
- ``render(source, config, metric, row)``: the exact messages the judge would receive for one
  row of a table, with no call made (MLflow and ragas users ask for this to debug prompts).
"""

from __future__ import annotations

import json
from typing import Any

from ragjudge.errors import InputError
from ragjudge.io.formats import is_stdin
from ragjudge.settings import Config
from ragjudge.judges import BUILT_IN, bundled_definitions, make_judges
from ragjudge.plan import RunPlan
from ragjudge.records import EMPTY_ROW, to_records
from ragjudge.types import Verdict, decision_model
from ragjudge.transports.decision_models import DecisionTransport
from ragjudge import local


def _settings(config: Config) -> Config:
    """``config`` with the embedded judge's calibrated settings, as a run would use them."""
    if config.judge.model.startswith("local/"):
        config, _ = local.calibrated(config)
    return config


def describe(config: Config) -> list[dict[str, Any]]:
    """Every metric ``config`` can run: ``name``, ``source`` (built-in, bundled, config),
    ``needs``, ``kind``, ``scale`` (low, high), ``threshold``, ``version`` and ``description``;
    ``default`` says whether a run without ``-m`` judges it."""
    config = _settings(config)
    names = [*BUILT_IN, *bundled_definitions(), *(d.name for d in config.judges)]
    judges = make_judges(config.model_copy(update={"metrics": names}))
    out = []
    for judge in judges:
        source = "built-in" if judge.name in BUILT_IN else ("bundled" if judge.name in bundled_definitions() else "config")
        out.append({"name": judge.name, "source": source, "needs": list(judge.needs), "kind": judge.kind, "scale": list(judge.scale),
                    "threshold": config.threshold(judge.name), "version": judge.version, "description": judge.description,
                    "default": judge.name in config.metrics})
    return out


def render(source: str, config: Config, metric: str, row: int, flag_fields: frozenset[str] = frozenset(), input_format: str | None = None) -> str:
    """The messages ``metric``'s judge would receive for row ``row`` (1-based) of ``source``,
    as text: each message with its role, then the call's settings (a decision model: the
    request's JSON body, its questions and state). A row the judge would not
    call for says why (skipped, input error). Raises ``InputError`` for a row out of range and
    for unusable input, as ``ragjudge score`` would."""
    from ragjudge.io import iter_chunks
    config = _settings(config).model_copy(update={"metrics": [metric]})
    judge = make_judges(config)[0]
    if row < 1:
        raise InputError(f"--row {row}: rows are numbered from 1")
    seen = 0
    # as ragjudge score -m refuses it (asked): a need not met is exit 2, not a row skipped
    plan = RunPlan(config, [judge], iter_chunks(source, input_format, config.chunk_size), "<stdin>" if is_stdin(source) else source,
                   flag_fields, asked=True)
    mapping = plan.mapping
    for chunk in plan.chunks():
        if seen + len(chunk) >= row:
            values = chunk.iloc[row - seen - 1].to_dict()
            extra = tuple(n for n in judge.needs if "|" not in n and n not in ("id", "request", "context", "expected_facts",
                                                                                 "expected_response", "response"))
            record = to_records([values], mapping, row - 1, config.judge.strip_instructions, extra)[0]
            return _show(judge, record, row, mapping.describe())
        seen += len(chunk)
    raise InputError(f"--row {row}: the input has {seen} row(s)")


def _show(judge: Any, record: Any, row: int, mapping: str) -> str:
    lines = [f"# {judge.name}, row {row} ({mapping})"]
    if record.removed:
        lines.append("# removed before judging: " + "; ".join(record.removed))
    # as the Scorer decides it before any judge (ragjudge score: an input error for every metric)
    call = Verdict.failed(judge.name, EMPTY_ROW, input_error=True) if record.empty else judge.prepare(record)
    if isinstance(call, Verdict):
        what = call.error if call.status != "ok" else f"{call.score:g} ({call.rationale})"
        lines.append(f"# no call: {call.status}: {what}")
        return "\n".join(lines) + "\n"
    if decision_model(judge.settings.model):  # a decision model reads the questions and the state, as its request sends them
        body = DecisionTransport(judge.settings).client.body(call.state, call.questions)
        lines.append(f"# the request to {judge.settings.model} (this metric's questions; a row's metrics share one request)")
        lines.append(json.dumps(body, indent=2, ensure_ascii=False))
        return "\n".join(lines) + "\n"
    lines.append(f"# call 1: prompt version {call.version}, temperature {call.temperature:g}, "
                 f"log-probabilities {'asked' if call.logprobs else 'not asked'}, reply format {_format_name(call)}")
    for message in call.messages:
        lines += [f"--- {message['role']} ---", str(message["content"])]
    if not call.final:
        lines.append("# call 2 is rendered from the reply to call 1 (render makes no call, so it is not shown)")
    return "\n".join(lines) + "\n"


def _format_name(call: Any) -> str:
    found = (call.response_format or {}).get("json_schema") or {}
    return f"json_schema {found.get('name')} {json.dumps(list((found.get('schema') or {}).get('properties') or {}))}" if found else "none"
