"""The hash-locked install (issue 19): the lock files hold no known-bad release, and agree
with pyproject.toml."""

from __future__ import annotations

import re
import tomllib

import pytest

from conftest import ROOT

BAD_LITELLM = {"1.82.7", "1.82.8"}  # published with a credential stealer in them (2026-03-24)
LOCKS = sorted((ROOT / "requirements").glob("*.txt"))


def pins(path) -> dict[str, str]:
    return {m.group(1).lower(): m.group(2) for m in re.finditer(r"^([A-Za-z0-9_.\-]+)==([^\s;\\]+)", path.read_text(), re.M)}


@pytest.mark.parametrize("lock", LOCKS, ids=lambda p: p.name)
def test_a_lock_holds_no_known_bad_litellm_and_hashes_every_package(lock):
    found = pins(lock)
    assert found.get("litellm") and found["litellm"] not in BAD_LITELLM
    blocks = re.split(r"\n(?=\S)", lock.read_text())
    packages = [block for block in blocks if re.match(r"[A-Za-z0-9_.\-]+==", block)]
    assert packages and all("--hash=sha256:" in block for block in packages)


def test_the_locks_are_those_pyproject_asks_for():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    pinned = [d for d in project["project"]["dependencies"] if d.startswith("litellm")]
    assert pinned == ["litellm==" + pins(ROOT / "requirements" / "test.txt")["litellm"]]
    assert {lock.name for lock in LOCKS} == {"demo.txt", "test.txt"}
    assert pins(ROOT / "requirements" / "test.txt")["ray"] == project["project"]["optional-dependencies"]["ray"][0].split("==")[1]
