"""Review fixes on the traces pages and readers (p4-fixb): install lines, trace-file errors, an
empty experiment, row names of trace rows, the fake server on a busy port."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from ragjudge.errors import ConfigError

ROOT = Path(__file__).resolve().parents[1]


# -- 2. install lines: from the checkout, never the PyPI name (another project's) ---------------
def test_no_page_installs_the_pypi_name_with_an_extra():
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    found = [f"{p.name}: {m.group(0)}" for p in pages for m in re.finditer(r"ragjudge\[\w+\]", p.read_text(encoding="utf-8"))]
    assert found == []
    assert 'pip install ".[mlflow]"' in (ROOT / "docs" / "from-mlflow.md").read_text(encoding="utf-8")
    assert 'pip install ".[phoenix]"' in (ROOT / "docs" / "from-phoenix.md").read_text(encoding="utf-8")


def test_the_missing_mlflow_error_names_the_checkout_install(monkeypatch):
    import ragjudge.traces.mlflow as mt

    monkeypatch.setitem(sys.modules, "mlflow", None)  # import mlflow raises ImportError
    with pytest.raises(ConfigError) as err:
        mt._mlflow()
    assert str(err.value) == 'reading or writing MLflow traces needs MLflow: pip install ".[mlflow]" in a ragjudge checkout'
