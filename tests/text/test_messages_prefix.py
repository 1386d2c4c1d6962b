"""``common_prefix_length``: the characters a prefix cache can reuse."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from loomctx.text.messages import common_prefix_length


@given(st.text(), st.text(), st.text())
def test_it_is_the_longest_common_prefix(shared: str, a: str, b: str) -> None:
    x, y = shared + a, shared + b
    n = common_prefix_length(x, y)
    assert x[:n] == y[:n]
    assert n == len(x) or n == len(y) or x[n] != y[n]
    assert n >= len(shared)
