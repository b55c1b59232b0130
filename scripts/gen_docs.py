"""Write the generated documentation: configs/default.yaml and docs/configuration.md, from the
settings' descriptions in ragjudge/config/ (a test fails when they drift).

    python scripts/gen_docs.py
"""

from __future__ import annotations

from pathlib import Path

from ragjudge.configdoc import write

if __name__ == "__main__":
    for path in write(Path(__file__).resolve().parents[1]):
        print(f"wrote {path}")
