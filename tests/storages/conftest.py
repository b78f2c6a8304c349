"""The server-backed storage tests: a test that needs PostgreSQL + pgvector is reported as skipped, with the reason,
where the installed pgvector cannot run on this CPU (``servers.PgvectorUnavailable``); any other failure stays one."""

from __future__ import annotations

import pytest

from tests.storages.servers import PgvectorUnavailable


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if call.excinfo is not None and call.excinfo.errisinstance(PgvectorUnavailable):
        report.outcome = "skipped"
        report.longrepr = (str(item.path), item.location[1] or 0, f"Skipped: {call.excinfo.value}")
