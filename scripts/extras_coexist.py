"""Installing ragjudge's [mlflow] extra beside a user's own MLflow changes nothing of it (issue 45
item 1): run by `make test` after the tests (it needs PyPI; the tests themselves never reach the
network).

A fresh virtual environment gets a full `mlflow` of another 3.x release than the lock's, with
pandas 3 and a current pyarrow, as a new environment has them today; then pip is asked what
installing `.[mlflow]` from this checkout would do (`pip install --dry-run --report`). It must
install, replace or downgrade none of mlflow, mlflow-skinny, mlflow-tracing, pandas and pyarrow,
and the extra may downgrade nothing else that is there (a downgrade ragjudge's core makes as
well, without the extra, is printed as a note). Exit 0 when so; 1 naming what would change.

    python scripts/extras_coexist.py [--mlflow 3.16.1] [--pandas 3.1.1] [--pyarrow 25.0.1] [--venv DIR]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
THEIRS = ("mlflow", "mlflow-skinny", "mlflow-tracing", "pandas", "pyarrow")


def _run(*args: str) -> str:
    done = subprocess.run(args, capture_output=True, text=True)
    if done.returncode:
        sys.exit(f"failed: {' '.join(args)}\n{done.stderr[-2000:]}")
    return done.stdout


def _key(version: str) -> tuple:
    from packaging.version import Version

    return Version(version).release


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mlflow", default="3.16.1")
    parser.add_argument("--pandas", default="3.1.1")
    parser.add_argument("--pyarrow", default="25.0.1")
    parser.add_argument("--venv", help="the environment to use (made when missing; default: a temporary one)")
    args = parser.parse_args()
    folder = Path(args.venv) if args.venv else Path(tempfile.mkdtemp(prefix="ragjudge-coexist-"))
    python = folder / "bin" / "python"
    if not python.exists():
        _run(sys.executable, "-m", "venv", str(folder))
        _run(str(python), "-m", "pip", "install", "--quiet", "--upgrade", "pip")
    _run(str(python), "-m", "pip", "install", "--quiet", f"mlflow=={args.mlflow}", f"pandas=={args.pandas}", f"pyarrow=={args.pyarrow}")
    before = {item["name"].lower(): item["version"] for item in json.loads(_run(str(python), "-m", "pip", "list", "--format", "json"))}
    def plan(target: str) -> dict[str, str]:
        report = Path(folder) / "report.json"
        _run(str(python), "-m", "pip", "install", "--quiet", "--dry-run", "--report", str(report), target)
        return {item["metadata"]["name"].lower(): item["metadata"]["version"] for item in json.loads(report.read_text())["install"]}

    planned, core = plan(f"{ROOT}[mlflow]"), plan(str(ROOT))
    touched = sorted(name for name in planned if name in THEIRS)
    # a downgrade the core makes too is not the extra's (litellm caps importlib-metadata below 9): said, not failed
    downgrades = sorted(name for name, version in planned.items() if name in before and _key(version) < _key(before[name]))
    downgraded = [name for name in downgrades if name not in core or core[name] != planned[name]]
    for name in sorted(set(downgrades) - set(downgraded)):
        print(f"note: ragjudge's core itself would move {name} {before[name]} -> {planned[name]} (a requirement of its dependencies)")
    print(f"beside mlflow {before.get('mlflow')}, mlflow-skinny {before.get('mlflow-skinny')}, pandas {before.get('pandas')}, "
          f"pyarrow {before.get('pyarrow')}: installing .[mlflow] would install {len(planned)} package(s) "
          f"({', '.join(sorted(planned)[:12])}{' ...' if len(planned) > 12 else ''})")
    if touched or downgraded:
        print(f"FAIL: it would replace {', '.join(f'{n} {before.get(n)} -> {planned[n]}' for n in touched) or 'none of MLflow, pandas, pyarrow'}"
              f" and downgrade {', '.join(f'{n} {before[n]} -> {planned[n]}' for n in downgraded) or 'nothing'}")
        return 1
    print("PASS: nothing of MLflow, pandas or pyarrow changes, and nothing is downgraded")
    return 0


if __name__ == "__main__":
    sys.exit(main())
