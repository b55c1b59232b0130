"""The Makefile's targets as CI and a new user run them: ``make test`` installs the browser before
the tests and names the browser tests it skipped, and how to install what they need."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from conftest import ROOT

pytestmark = pytest.mark.integration  # runs make and the CI script


# peer report (issue 29 item 17): make test names the browser tests it skipped
def test_without_chromium_the_test_command_names_what_it_skipped_and_how_to_install_it(tmp_path):
    empty = tmp_path / "bin"
    empty.mkdir()  # a PATH with no chromium, no chromedriver, no apt-get
    check = subprocess.run(["/bin/bash", str(ROOT / "scripts" / "browser.sh"), "check"], env={"PATH": str(empty)}, capture_output=True, text=True)
    assert check.returncode == 0
    assert check.stderr.strip() == ("make test: skipped the browser tests of tests/test_report.py (the HTML report in headless Chromium): "
                                    "chromium and chromedriver are not installed; install them with: "
                                    "sudo apt-get install -y chromium chromium-driver (then run make test again)")
    install = subprocess.run(["/bin/bash", str(ROOT / "scripts" / "browser.sh"), "install"], env={"PATH": str(empty)}, capture_output=True,
                             text=True)
    assert install.returncode == 0  # not root, no apt-get: nothing installed, the check after the tests says so


# peer report (issue 29 item 17): make test names the browser tests it skipped
def test_ci_runs_the_readmes_test_command_and_it_installs_the_browser_first():
    run = (ROOT / ".ci" / "run").read_text(encoding="utf-8").strip().splitlines()
    assert run[-1] == "make test" and "make test" in (ROOT / "README.md").read_text(encoding="utf-8")
    planned = subprocess.run(["make", "-n", "test", "BIN=/nonexistent/bin"], cwd=ROOT, capture_output=True, text=True).stdout.splitlines()
    install = next(i for i, line in enumerate(planned) if line == "bash scripts/browser.sh install")
    tests = next(i for i, line in enumerate(planned) if "-m pytest -q" in line)
    assert install < tests and "bash scripts/browser.sh check" in planned[tests]


# issue 60 item 21: make test reported 5 skips without a reason (the shared data folder absent)
@pytest.mark.slow
def test_without_the_shared_data_the_summary_says_why_each_test_is_skipped(tmp_path):
    absent = tmp_path / "no-shared-data"
    env = {**os.environ, "RAGJUDGE_SHARED_DATA": str(absent), "PYTHONPATH": str(ROOT)}
    ran = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/unit/test_scoring.py",
                          "tests/test_diagnosis.py::test_the_whole_sample_rows_are_what_the_script_builds"],
                         cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert ran.returncode == 0, ran.stdout[-2000:]
    skipped = [line for line in ran.stdout.splitlines() if line.startswith("SKIPPED")]  # pytest's -rs, from pyproject.toml's addopts
    why = "(the folder RAGJUDGE_SHARED_DATA names, else shared/data beside the checkout; not part of the repository)"
    assert len(skipped) == 3 and all(why in line for line in skipped), ran.stdout[-2000:]
    assert [line.split(": ")[0].split()[-1].split(":")[0] for line in skipped] == ["tests/unit/test_scoring.py"] * 2 + ["tests/test_diagnosis.py"]
    assert f"shared data not present: {absent / 'squad2_goldremoved_sufficiency_dev.jsonl'} " in skipped[0]
    assert f"shared data not present: {absent / 'clapnq_sufficiency_dev.jsonl'} " in skipped[2]  # a skipif's reason too


# issue 60 item 11: every declared lower bound is tested, in make test, bounded
def test_make_test_runs_the_unit_tier_at_the_lowest_versions_the_ranges_allow_after_checking_them():
    planned = subprocess.run(["make", "-n", "test", "BIN=/nonexistent/bin"], cwd=ROOT, capture_output=True, text=True).stdout
    assert "unit-newest || status=1" in planned and "unit-lowest || status=1" in planned
    lowest = subprocess.run(["make", "-n", "unit-lowest", "BIN=/nonexistent/bin"], cwd=ROOT, capture_output=True, text=True).stdout.splitlines()
    install = next(i for i, line in enumerate(lowest) if "--resolution lowest-direct -e ." in line)
    check = lowest.index(".venv-lowest/bin/python scripts/lower_bounds.py")
    tier = next(i for i, line in enumerate(lowest) if "-m pytest" in line)
    assert lowest[install - 1].startswith("rm -rf .venv-lowest")  # afresh: what an earlier run left never raises a version
    assert install < check < tier and lowest[tier].startswith("timeout ") and lowest[tier].endswith("tests/unit tests/test_dependency_bounds.py")
