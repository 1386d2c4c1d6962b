"""Two embedders as one: a multilingual model everywhere, an English one where the text is English.

Each text's vector is the concatenation ``[sqrt(w) * a, sqrt(1 - w) * b]`` of the two models'
unit vectors, so the dot product of two such vectors is ``w * cos_a + (1 - w) * cos_b``: one
vector, one index, one cosine, and every store and cache works unchanged. A text the English model
cannot read (a language check: most of its letters outside the Latin script) gets ``[a, 0]``
instead, so Chinese matched against Chinese keeps the multilingual model's whole cosine, and an
English question matched against a Chinese memory gets ``sqrt(w) * cos_a``. Both parts are
unit-length, so every row is.

A few texts at once (a question being asked) are embedded by the two models at the same time,
the English one on a thread of its own: both run in onnxruntime, which leaves Python's lock
free, so a question waits for the slower model rather than for both. Larger batches (ingest)
run one model after the other by default; each spreads its own batches over the cores.
``overlap=True`` runs them at the same time too, which can only help where cores sit idle while
USE runs its one thread: on 2 busy cores it saved no wall time and cost 2-8 % more CPU (41.2
against 38.3 s for one LongMemEval history, medians of 2, ``docs/dependencies.md``), so it is
off.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Sequence

import numpy as np

from loomctx.embed.protocol import Embedder, embed_later
from loomctx.errors import ConfigError

_LATIN_SHARE = 0.5
AT_ONCE = 8
"""The default ``at_once``: batches of at most this many texts embed with both models at the
same time."""


def latin_share(text: str) -> float:
    """The share of ``text``'s letters in the Latin script (1.0 for a text with no letters)."""
    letters = [c for c in text if c.isalpha()]
    if not letters:
        return 1.0
    latin = sum(1 for c in letters if c < "\u0250")
    return latin / len(letters)


class JointEmbedder:
    """``multilingual`` everywhere, joined by ``english`` on texts mostly in the Latin script.

    ``weight`` is the multilingual model's share of the cosine between two Latin-script texts
    (0 < weight < 1). A batch of at most ``at_once`` texts (a question) has both models' input
    work done first, then both passes run at the same time, on two threads. A larger batch runs
    the two models at the same time when ``overlap``, one after the other when not (the
    default); ``at_once=0`` is then always one after the other.
    """

    def __init__(self, multilingual: Embedder, english: Embedder, *, weight: float = 0.5,
                 at_once: int = AT_ONCE, overlap: bool = False) -> None:
        if not isinstance(weight, (int, float)) or not 0.0 < float(weight) < 1.0:
            raise ConfigError(f"JointEmbedder weight must be between 0 and 1, got {weight!r}")
        if isinstance(at_once, bool) or not isinstance(at_once, int) or at_once < 0:
            raise ConfigError(f"JointEmbedder at_once must be an int >= 0, got {at_once!r}")
        if not isinstance(overlap, bool):
            raise ConfigError(f"JointEmbedder overlap must be True or False, got {overlap!r}")
        self.at_once = at_once
        self.overlap = overlap
        self.multilingual = multilingual
        self.english = english
        self.weight = float(weight)
        self.name = f"joint({multilingual.name}+{english.name}@{self.weight:g})"
        self.dim = multilingual.dim + english.dim

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Embed ``texts``: float32 unit rows of ``multilingual.dim + english.dim``."""
        return self.embed_later(texts)()

    def embed_later(self, texts: Sequence[str]) -> Callable[[], np.ndarray]:
        """:meth:`embed` in two steps: each model's input work now (for a model that offers
        ``embed_later``), the passes in the returned function; for a question (and, with
        ``overlap``, a batch) the two passes at once, the English one on a thread of its own.

        Why two steps: the input work is Python (tokenising, look-ups) and holds Python's lock,
        the passes run in onnxruntime and leave it free. Done first, in one place, the input
        work no longer takes turns at the lock with the other model's (or with whatever the
        caller's other threads do), and both passes start at once.
        """
        batch = list(texts)
        if not batch:
            return lambda: np.zeros((0, self.dim), dtype=np.float32)
        english = [i for i, text in enumerate(batch) if latin_share(text) >= _LATIN_SHARE]
        texts = [batch[i] for i in english]
        if english and (len(batch) <= self.at_once or self.overlap):
            english_pass: Callable[[], np.ndarray]
            multilingual_pass: Callable[[], np.ndarray]
            if len(batch) <= self.at_once:
                english_pass = embed_later(self.english, texts)
                multilingual_pass = embed_later(self.multilingual, batch)
            else:  # a batch: no input work to do first, both models' work is in their passes
                english_pass = lambda: self.english.embed(texts)  # noqa: E731
                multilingual_pass = lambda: self.multilingual.embed(batch)  # noqa: E731

            def at_once() -> np.ndarray:
                second = _Background(english_pass)
                try:
                    first = multilingual_pass()
                except BaseException:
                    second.join()  # no thread outlives the call; the first error is raised
                    raise
                return self._joined(len(batch), english, first, second.result())

            return at_once

        def in_turn() -> np.ndarray:
            first = self.multilingual.embed(batch)
            second = (self.english.embed(texts) if english
                      else np.zeros((0, self.english.dim), dtype=np.float32))
            return self._joined(len(batch), english, first, second)

        return in_turn

    def _joined(self, n: int, english: list[int], first: np.ndarray,
                second: np.ndarray) -> np.ndarray:
        """The joint rows: the multilingual part everywhere, scaled and joined by the English
        part on the rows ``english``."""
        out = np.zeros((n, self.dim), dtype=np.float32)
        cut = self.multilingual.dim
        out[:, :cut] = first
        if english:
            out[english, :cut] *= math.sqrt(self.weight)
            out[english, cut:] = second
            out[english, cut:] *= math.sqrt(1.0 - self.weight)
        return out


class _Background:
    """``work()`` on a thread of its own; :meth:`result` waits and returns (or raises)."""

    def __init__(self, work: Callable[[], np.ndarray]) -> None:
        self._work = work
        self._value: np.ndarray | None = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="loomctx-joint", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            self._value = self._work()
        except BaseException as exc:  # handed to the caller by result()
            self._error = exc

    def join(self) -> None:
        self._thread.join()

    def result(self) -> np.ndarray:
        self.join()
        if self._error is not None:
            raise self._error
        assert self._value is not None
        return self._value


__all__ = ["AT_ONCE", "JointEmbedder", "latin_share"]
