"""ragjudge: a batch evaluator for retrieval-augmented generation.

Public Python API (imported lazily so that ``import ragjudge`` stays fast and does not
pull in litellm or pandas):

- ``evaluate(source, config, output=None)`` -> ``RunResult`` (see ``ragjudge.runner``)
- ``load_config(path=None, **overrides)`` -> ``Config`` (see ``ragjudge.config``)
- ``Config``, ``Verdict``, ``RagjudgeError``
"""

from __future__ import annotations

__version__ = "0.1.0"

_LAZY = {
    "evaluate": ("ragjudge.runner", "evaluate"),
    "RunResult": ("ragjudge.runner", "RunResult"),
    "load_config": ("ragjudge.config", "load_config"),
    "Config": ("ragjudge.config", "Config"),
    "Verdict": ("ragjudge.judges.base", "Verdict"),
    "RagjudgeError": ("ragjudge.errors", "RagjudgeError"),
}

__all__ = ["__version__", *_LAZY]


def __getattr__(name: str):
    if name in _LAZY:
        import importlib

        module, attr = _LAZY[name]
        return getattr(importlib.import_module(module), attr)
    raise AttributeError(f"module 'ragjudge' has no attribute {name!r}")
