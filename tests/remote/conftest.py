"""Fixtures of the remote-read tests: loopback HTTP servers over the fixture tree and a time
bound on every test.

Every server binds ``127.0.0.1`` on an ephemeral port, is started and stopped by its fixture
and stops by itself after ``max_lifetime`` seconds. Every test of this folder is bounded: by
pytest-timeout (``REMOTE_TEST_TIMEOUT`` seconds) when it is installed, otherwise by a
``SIGALRM`` watchdog.
"""

from __future__ import annotations

import signal
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from data_paths import data_root

sys.path.insert(0, str(Path(__file__).parent))
from _zv_http import ZVHTTPServer  # noqa: E402

DATA = data_root()
#: Seconds any single test of tests/remote may run.
REMOTE_TEST_TIMEOUT = 120


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if not config.pluginmanager.hasplugin("timeout"):
        return
    here = Path(__file__).parent
    for item in items:
        if here in Path(str(item.fspath)).parents and item.get_closest_marker("timeout") is None:
            item.add_marker(pytest.mark.timeout(REMOTE_TEST_TIMEOUT))


@pytest.fixture(autouse=True)
def _watchdog(request: pytest.FixtureRequest) -> Iterator[None]:
    """Without pytest-timeout: fail a test that runs longer than REMOTE_TEST_TIMEOUT."""
    if request.config.pluginmanager.hasplugin("timeout") or not hasattr(signal, "SIGALRM"):
        yield
        return

    def expire(signum: int, frame: object) -> None:
        raise TimeoutError(f"test exceeded {REMOTE_TEST_TIMEOUT} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.alarm(REMOTE_TEST_TIMEOUT)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


@pytest.fixture(scope="module")
def http_index() -> Iterator[ZVHTTPServer]:
    """The fixture tree over HTTP with directory indexes (like ``python -m http.server``)."""
    with ZVHTTPServer(DATA, index=True) as server:
        yield server


@pytest.fixture(scope="module")
def http_plain() -> Iterator[ZVHTTPServer]:
    """The fixture tree over HTTP without directory indexes (a plain static host / CDN)."""
    with ZVHTTPServer(DATA, index=False) as server:
        yield server
