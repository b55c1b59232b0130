"""Each direct dependency sits at its declared lower bound (issue 60 item 11): run by `make unit-lowest`
in .venv-lowest, which uv filled with `--resolution lowest-direct`, before the unit tier runs there.

A lower bound that no resolution can install (another dependency asks for more: litellm 1.108.14
needs pydantic 2.11, say) is a bound the tests never see, so a user holding that version is promised
something nobody tried. For every requirement of pyproject.toml's [project] dependencies whose
marker holds here, and the test extra's tools the unit tier needs (``--with``: pytest, hypothesis,
markdown-it-py; not its lint tools, as import-linter's own rich>=14.2 would hold up the core's
rich>=13), the installed version (importlib.metadata) must equal the lowest version its specifier
admits (the version in its ``>=``, ``~=`` or ``==`` clause). Exit 0 when so, printing the versions;
1 naming each requirement installed above its bound (raise the bound to that version, or find what
holds it up); 2 for a requirement without a lower bound or not installed.

    python scripts/lower_bounds.py --print [--with pytest ...]      # the tools' requirements to install
    .venv-lowest/bin/python scripts/lower_bounds.py [--with pytest ...]  # the check
"""

from __future__ import annotations

import argparse
import sys
import tomllib
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from packaging.requirements import Requirement
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[1]


def lower_bound(requirement: Requirement) -> Version | None:
    """The lowest version ``requirement``'s specifier names with ``>=``, ``~=`` or ``==`` (None without one)."""
    bounds = [Version(spec.version) for spec in requirement.specifier if spec.operator in (">=", "~=", "==")]
    return max(bounds) if bounds else None


def check(requirements: list[str]) -> tuple[list[str], list[str], list[str]]:
    """(at their bound, above it, without a bound or not installed): one line each."""
    at, above, broken = [], [], []
    for text in requirements:
        requirement = Requirement(text)
        if requirement.marker is not None and not requirement.marker.evaluate({"extra": ""}):
            continue
        bound = lower_bound(requirement)
        try:
            installed = Version(version(requirement.name))
        except PackageNotFoundError:
            broken.append(f"{requirement.name}: not installed")
            continue
        if bound is None:
            broken.append(f"{requirement.name}: no lower bound in {text!r}")
        elif installed == bound:  # Version equality: 2.6 == 2.6.0
            at.append(f"{requirement.name} {installed}")
        else:
            above.append(f"{requirement.name}: {installed} installed, {bound} declared ({text!r})")
    return at, above, broken


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--with", dest="tools", nargs="*", default=["pytest", "hypothesis", "markdown-it-py"],
                        help="the test extra's requirements to add, by name (default: pytest hypothesis markdown-it-py)")
    parser.add_argument("--print", action="store_true", help="print the tools' requirements, one a line, and check nothing")
    args = parser.parse_args()
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    tools = [text for text in project["optional-dependencies"]["test"] if Requirement(text).name in args.tools]
    if args.print:
        print("\n".join(tools))  # ragjudge's own come with `-e .`, direct requirements as well
        return 0
    at, above, broken = check([*project["dependencies"], *tools])
    print(f"at their lower bounds ({len(at)}): {', '.join(at)}")
    for line in above + broken:
        print(f"FAIL {line}", file=sys.stderr)
    return 2 if broken else 1 if above else 0


if __name__ == "__main__":
    sys.exit(main())
