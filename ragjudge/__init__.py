"""ragjudge: a batch evaluator for retrieval-augmented generation.

Public Python API (imported lazily so that ``import ragjudge`` stays fast and does not
pull in litellm or pandas):

- ``Scorer(config=None, **settings)``: built once, ``score(df)`` / ``await ascore(df)`` ->
  ``Scored(frame, summary, notes)``, ``output_schema(input_schema)`` (see ``ragjudge.scoring``)
- ``score(df, metrics=None, config=None, **settings)`` / ``ascore(...)``: the one-line form
- ``evaluate(source, config, output=None)`` -> ``RunResult``: a file (or DataFrame) in,
  a scored file out, with the gate (see ``ragjudge.run.engine``)
- ``load_config(path=None, overrides=None, **settings)`` -> ``Config`` (see ``ragjudge.settings``; ``ragjudge.config`` reads the raw one)
- ``Config``, ``Verdict``, ``Summary``, ``Usage``, ``RagjudgeError``
- ``ragjudge.testing``: ``assert_sufficient``, ``assert_complete``, ``assert_passes`` (tests; the
  pytest plugin ``ragjudge.pytest_plugin`` shares one ``Scorer`` per test session, docs/pytest.md)
"""

from __future__ import annotations

__version__ = "0.1.0"

_LAZY = {
    "Scorer": ("ragjudge.scoring", "Scorer"),
    "Scored": ("ragjudge.scoring", "Scored"),
    "score": ("ragjudge.scoring", "score"),
    "ascore": ("ragjudge.scoring", "ascore"),
    "evaluate": ("ragjudge.run", "evaluate"),
    "RunResult": ("ragjudge.run.engine", "RunResult"),
    "load_config": ("ragjudge.settings", "load_config"),
    "Config": ("ragjudge.settings", "Config"),
    "Verdict": ("ragjudge.types", "Verdict"),
    "Usage": ("ragjudge.types", "Usage"),
    "Summary": ("ragjudge.gate", "Summary"),
    "RagjudgeError": ("ragjudge.errors", "RagjudgeError"),
}

__all__ = ["__version__", *_LAZY]


def __getattr__(name: str):
    if name == "traces":  # the trace sources and sinks: ragjudge.traces.mlflow.read_traces(...)
        import importlib

        return importlib.import_module("ragjudge.traces")
    if name in _LAZY:
        import importlib

        module, attr = _LAZY[name]
        return getattr(importlib.import_module(module), attr)
    raise AttributeError(f"module 'ragjudge' has no attribute {name!r}")
