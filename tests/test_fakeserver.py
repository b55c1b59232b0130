"""The loopback fake judge server (``ragjudge.fakeserver``) as a command and a class: on a port in
use it exits 2 with one line, or raises at once, never leaving a live process or thread behind."""

from __future__ import annotations

import os
import re
import sys

import pytest

from conftest import ROOT

pytestmark = pytest.mark.integration  # the fake judge server itself, on loopback


@pytest.fixture
def busy_port():
    import socket

    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        yield held.getsockname()[1]


# review of the traces pages and readers (p4-fixb) item 6: the fake server on a port in use: exit 2 with one line, not a live process
def test_the_fake_server_exits_2_on_a_port_in_use(busy_port):
    import subprocess

    result = subprocess.run([sys.executable, "-m", "ragjudge.fakeserver", "--port", str(busy_port)], capture_output=True, text=True,
                            timeout=120, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr == (f"fakeserver: port {busy_port} on 127.0.0.1 is already in use; pick a free one with --port N "
                             "(--port 0 picks one)\n")


# review of the traces pages and readers (p4-fixb) item 6: the fake server on a port in use: exit 2 with one line, not a live process
def test_starting_the_fake_server_on_a_port_in_use_raises_at_once(busy_port):
    import errno
    import threading

    from ragjudge.fakeserver import FakeJudgeServer

    before = threading.active_count()
    with pytest.raises(OSError) as err:
        FakeJudgeServer(port=busy_port).start()
    assert err.value.errno == errno.EADDRINUSE
    with FakeJudgeServer(port=0) as free:  # a free port still starts, listening
        assert re.fullmatch(r"http://127\.0\.0\.1:\d+/v1", free.url) and not free.url.endswith(f":{busy_port}/v1")
    assert threading.active_count() <= before + 1
