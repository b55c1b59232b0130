"""Installing ragjudge beside what a user already has changes none of it (issue 45 item 1, issue 60
item 11): run by `make test` after the tests (it needs PyPI; the tests themselves never reach the
network).

Each scenario gets a fresh virtual environment holding what a user may have there today, then pip is
asked what installing ragjudge (or one of its extras) from this checkout would do
(`pip install --dry-run --report`):

- mlflow: a full `mlflow` of another 3.x release than the lock's, with pandas 3 and a current
  pyarrow; installing `.[mlflow]` must touch none of mlflow, mlflow-skinny, mlflow-tracing, pandas
  and pyarrow;
- litellm: a newer litellm than the lock's (1.110.2, which brings huggingface_hub 2.x and
  importlib-metadata 9) and rich 15; installing `.` must touch none of litellm, huggingface-hub,
  importlib-metadata and rich (a pin litellm==1.108.14 and rich<15 replaced all four);
- phoenix: the Phoenix server, arize-phoenix 20.26 (which keeps tenacity 9.1.4); installing
  `.[phoenix]` must touch none of arize-phoenix, its client and tenacity.

In every scenario nothing already there may be downgraded either, but for a downgrade litellm itself
makes, installed alone from ragjudge's range (it caps importlib-metadata below 9), printed as a
note. Exit 0 when so; 1 naming what
would change.

    python scripts/extras_coexist.py [--only mlflow|litellm|phoenix ...] [--mlflow 3.16.1] [--pandas 3.1.1]
        [--pyarrow 25.0.1] [--litellm 1.110.2] [--rich 15.0.0] [--phoenix 20.26.1] [--venv DIR]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _run(*args: str) -> str:
    done = subprocess.run(args, capture_output=True, text=True)
    if done.returncode:
        sys.exit(f"failed: {' '.join(args)}\n{done.stderr[-2000:]}")
    return done.stdout


def _name(name: str) -> str:
    """A distribution's name as PEP 503 normalises it (huggingface_hub and huggingface-hub are one)."""
    import re

    return re.sub(r"[-_.]+", "-", name).lower()


def _key(version: str) -> tuple:
    from packaging.version import Version

    return Version(version).release


def _dependencies() -> list[str]:
    import tomllib

    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]


def scenarios(args: argparse.Namespace) -> dict[str, tuple[list[str], str, tuple[str, ...]]]:
    """name -> (what the user has, what is installed beside it, the packages that must stay as they are)."""
    return {
        "mlflow": ([f"mlflow=={args.mlflow}", f"pandas=={args.pandas}", f"pyarrow=={args.pyarrow}"], f"{ROOT}[mlflow]",
                   ("mlflow", "mlflow-skinny", "mlflow-tracing", "pandas", "pyarrow")),
        "litellm": ([f"litellm=={args.litellm}", f"rich=={args.rich}"], str(ROOT),
                    ("litellm", "huggingface-hub", "importlib-metadata", "rich")),
        "phoenix": ([f"arize-phoenix=={args.phoenix}"], f"{ROOT}[phoenix]", ("arize-phoenix", "arize-phoenix-client", "tenacity")),
    }


def check(name: str, theirs: list[str], target: str, kept: tuple[str, ...], folder: Path) -> bool:
    """Whether installing ``target`` beside ``theirs`` (installed in a venv at ``folder``) leaves ``kept``
    as they are and downgrades nothing; says which either way."""
    python = folder / "bin" / "python"
    if not python.exists():
        _run(sys.executable, "-m", "venv", str(folder))
        _run(str(python), "-m", "pip", "install", "--quiet", "--upgrade", "pip")
    _run(str(python), "-m", "pip", "install", "--quiet", *theirs)
    before = {_name(item["name"]): item["version"] for item in json.loads(_run(str(python), "-m", "pip", "list", "--format", "json"))}

    def plan(what: str) -> dict[str, str]:
        report = folder / "report.json"
        _run(str(python), "-m", "pip", "install", "--quiet", "--dry-run", "--report", str(report), what)
        return {_name(item["metadata"]["name"]): item["metadata"]["version"] for item in json.loads(report.read_text())["install"]}

    planned = plan(target)
    touched = sorted(n for n in planned if n in kept)
    downgrades = sorted(n for n, version in planned.items() if n in before and _key(version) < _key(before[n]))
    # a downgrade litellm itself makes (it caps importlib-metadata below 9), installed alone from ragjudge's own
    # range, is litellm's, not ragjudge's: said, not failed
    litellm = plan(next(text for text in _dependencies() if _name(text).startswith("litellm")).split(";")[0]) if downgrades and "litellm" not in before else {}
    downgraded = [n for n in downgrades if litellm.get(n) != planned[n]]
    for n in sorted(set(downgrades) - set(downgraded)):
        print(f"note: litellm itself would move {n} {before[n]} -> {planned[n]} (installed alone, from ragjudge's range)")
    label = ".[" + target.split("[")[1] if "[" in target else "."
    print(f"{name}: beside {', '.join(f'{n} {before.get(n)}' for n in kept if n in before)}: installing {label} would install "
          f"{len(planned)} package(s) ({', '.join(sorted(planned)[:12])}{' ...' if len(planned) > 12 else ''})")
    if touched or downgraded:
        print(f"FAIL {name}: it would replace {', '.join(f'{n} {before.get(n)} -> {planned[n]}' for n in touched) or 'none of ' + ', '.join(kept)}"
              f" and downgrade {', '.join(f'{n} {before[n]} -> {planned[n]}' for n in downgraded) or 'nothing'}")
        return False
    print(f"PASS {name}: none of {', '.join(kept)} changes, and nothing is downgraded")
    return True


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*", choices=["mlflow", "litellm", "phoenix"], help="the scenarios to run (default: all)")
    parser.add_argument("--mlflow", default="3.16.1")
    parser.add_argument("--pandas", default="3.1.1")
    parser.add_argument("--pyarrow", default="25.0.1")
    parser.add_argument("--litellm", default="1.110.2")
    parser.add_argument("--rich", default="15.0.0")
    parser.add_argument("--phoenix", default="20.26.1")
    parser.add_argument("--venv", help="the folder of the scenarios' environments, one each (made when missing; default: a temporary one)")
    args = parser.parse_args()
    parent = Path(args.venv) if args.venv else Path(tempfile.mkdtemp(prefix="ragjudge-coexist-"))
    passed = [check(name, theirs, target, kept, parent / name)
              for name, (theirs, target, kept) in scenarios(args).items() if not args.only or name in args.only]
    return 0 if all(passed) else 1


if __name__ == "__main__":
    sys.exit(main())
