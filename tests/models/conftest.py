"""Fixtures for the model-client tests: a fake server per test and a sleep that only records.

Every client here talks real HTTP to :class:`~loomctx.testing.FakeModelServer` on loopback;
the injected sleep makes retries instant while keeping the waits the client asked for.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from model_helpers import SleepRecorder

from loomctx.testing import FakeModelServer


@pytest.fixture
def server() -> Iterator[FakeModelServer]:
    with FakeModelServer() as srv:
        yield srv


@pytest.fixture
def sleeps() -> SleepRecorder:
    return SleepRecorder()
