"""The Makefile's targets as CI and a new user run them: ``make test`` installs the browser before
the tests and names the browser tests it skipped, and how to install what they need."""

from __future__ import annotations

import subprocess

from conftest import ROOT


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
