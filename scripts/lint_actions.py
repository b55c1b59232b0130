"""`make lint`: the GitHub Action and the GitHub workflows the docs show, against GitHub's own
schemas: ``action.yml`` against SchemaStore's ``github-action`` schema and every YAML block of
``docs/*.md`` that is a workflow (``on:`` and ``jobs:``) against its ``github-workflow`` schema,
both shipped inside check-jsonschema (``--builtin-schema vendor.github-actions`` and
``vendor.github-workflows``: no network). The shape of each file is checked (keys, a composite
step's ``shell``, ``runs.using``, an output's ``value``...); expressions are not evaluated.
Exit 0 when every file is valid, 1 otherwise (check-jsonschema names the file and the path)."""

from __future__ import annotations

import re
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent


def workflows(text: str) -> list[str]:
    """The fenced ``yaml`` blocks of a Markdown text that are GitHub workflows."""
    found = []
    for block in re.findall(r"```ya?ml\n(.*?)```", text, re.S):
        document = yaml.safe_load(block)
        # YAML 1.1 reads the key `on` as True
        if isinstance(document, dict) and "jobs" in document and ("on" in document or True in document):
            found.append(block)
    return found


def check(schema: str, paths: list[Path]) -> int:
    done = subprocess.run([sys.executable, "-m", "check_jsonschema", "--builtin-schema", schema, *map(str, paths)], check=False)
    return done.returncode


def main() -> int:
    status = check("vendor.github-actions", [ROOT / "action.yml"])
    with tempfile.TemporaryDirectory() as folder:
        paths = []
        for page in sorted((ROOT / "docs").glob("*.md")):
            for number, block in enumerate(workflows(page.read_text(encoding="utf-8")), 1):
                path = Path(folder) / f"{page.stem}-workflow-{number}.yml"
                path.write_text(block, encoding="utf-8")
                paths.append(path)
        if not paths:
            print("lint_actions: no workflow found in docs/*.md", file=sys.stderr)
            return 1
        status = check("vendor.github-workflows", paths) or status
    return 1 if status else 0


if __name__ == "__main__":
    sys.exit(main())
