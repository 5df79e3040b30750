"""The API's tests against a running Gleaner pool: run by
``crates/cli/tests/python_api`` as a Unix user of a ``glean up`` pool,
with ``GLEAN_HOME`` naming the user's pool directory and the current
directory the user's own. Each test works in a fresh directory of its
own under it."""

import os
import time

import pytest


@pytest.fixture
def workdir(tmp_path, monkeypatch):
    """A directory of the test's own, the current one while it runs (jobs
    take it as their submit directory)."""
    base = os.environ.get("GLEANER_TEST_WORK")
    if base:
        import tempfile

        d = tempfile.mkdtemp(dir=base)
        os.chmod(d, 0o755)
    else:
        d = str(tmp_path)
    monkeypatch.chdir(d)
    return d


def wait_for(what, predicate, timeout=90, every=0.5):
    """Polls ``predicate`` until it returns something true."""
    deadline = time.time() + timeout
    while True:
        got = predicate()
        if got:
            return got
        if time.time() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(every)
