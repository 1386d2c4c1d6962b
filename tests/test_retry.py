"""The one retry policy: the schedules every retrying loop waits by."""

from __future__ import annotations

import math

import pytest

from loomctx.errors import ConfigError
from loomctx.retry import DEFAULT_BACKOFF, RECONNECT, Backoff, exact


def test_exact_schedules_double_up_to_their_ceiling() -> None:
    assert [exact(0.05, 0.2).delay(n) for n in range(4)] == [0.05, 0.1, 0.2, 0.2]
    assert [RECONNECT.delay(n) for n in range(6)] == [0.05, 0.1, 0.2, 0.4, 0.8, 1.0]
    assert exact(0.0).delay(3) == 0.0  # a bus configured not to wait never waits


def test_jitter_stays_under_the_ceiling_and_retry_after_wins() -> None:
    assert DEFAULT_BACKOFF.delay(2, lambda: 0.5) == 0.5 * min(30.0, 0.5 * 4)
    assert DEFAULT_BACKOFF.delay(2, lambda: 0.5, retry_after=7.0) == 7.0
    assert DEFAULT_BACKOFF.delay(0, lambda: 0.5, retry_after=999.0) == 30.0


def test_a_long_outage_waits_the_ceiling_instead_of_overflowing() -> None:
    assert Backoff(jitter=False).delay(5000) == 30.0
    assert exact(1.0).delay(5000) == math.inf


def test_a_negative_schedule_is_refused() -> None:
    with pytest.raises(ConfigError, match="base >= 0"):
        Backoff(base=-1)
