"""An Anthropic request the proxy reads: refused before anything is stored when nothing in it
can be read."""

from __future__ import annotations

import pytest

from loomctx import providers
from loomctx.errors import InputError


def test_a_request_with_no_readable_block_is_refused() -> None:
    body = {"max_tokens": 10, "messages": [
        {"role": "user", "content": [{"type": "odd", "id": "ok", "content": ""}]}]}
    with pytest.raises(InputError, match="no block loomctx can read"):
        providers.get("anthropic").read_request(body)


def test_a_readable_request_is_read() -> None:
    body = {"system": "s", "messages": [{"role": "user", "content": [
        {"type": "odd"}, {"type": "text", "text": "hi"}]}]}
    assert providers.get("anthropic").read_request(body) == (
        "s", [{"role": "user", "content": "hi"}])
