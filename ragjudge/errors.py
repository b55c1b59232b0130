"""One exception hierarchy; the CLI maps each class to one line and one exit code.

Exit codes (``../DESIGN.md``): 0 gate passed, 1 a quality gate failed, 2 usage, config or
input error, 3 the judges could not run (provider down, auth, quota, unreadable replies), 4
submitted to the provider's batch API, not yet judged (``--batch``; run again to collect).
"""

from __future__ import annotations

EXIT_OK = 0
EXIT_GATE_FAILED = 1
EXIT_USAGE = 2
EXIT_JUDGE_ERRORS = 3
EXIT_SUBMITTED = 4


class RagjudgeError(Exception):
    """Base class: ``str(err)`` is the one line shown to the user; ``exit_code`` the status."""

    exit_code = EXIT_USAGE


class ConfigError(RagjudgeError):
    """The YAML config or a flag is invalid (unknown key, bad value). Exit 2."""


class InputError(RagjudgeError):
    """The input file cannot be read or a mapped column does not exist. Exit 2."""


class OutputError(RagjudgeError):
    """An output cannot be written (disk full, folder gone); the previous file stays. Exit 2."""


class ProviderFatalError(RagjudgeError):
    """The provider refused in a way that retrying cannot fix (auth, not found, quota). Exit 3."""

    exit_code = EXIT_JUDGE_ERRORS


class BatchSubmitted(RagjudgeError):
    """``ragjudge.evaluate`` with ``judge.batch``: the calls are submitted to the provider's batch
    API (or its batches still run) and the rows are not judged yet; ``str(err)`` says how to
    collect, ``folder`` is the run's batch folder. Exit 4: call again to collect and finish."""

    exit_code = EXIT_SUBMITTED

    def __init__(self, message: str, folder: str | None = None) -> None:
        super().__init__(message)
        self.folder = folder
