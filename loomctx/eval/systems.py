"""The registry of systems ``loomctx eval`` can run, by name.

A registry rather than a fixed list so that any experiment can be added with one ``register``
call and the CLI picks it up by name. ``loomctx`` (the library's own session-based pipeline) is
imported only when chosen, so the baselines run even while it is being changed.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from loomctx.embed import CachedEmbedder, HashingEmbedder, default_embedder
from loomctx.embed.protocol import Embedder
from loomctx.errors import ConfigError
from loomctx.eval.baselines import (
    BM25Baseline,
    DenseBaseline,
    EvalSystem,
    FusionBaseline,
    RecencyBaseline,
)


def cached(embedder: Embedder) -> Embedder:
    """``embedder`` memoised by text, so turns shared by many questions are embedded once."""
    return embedder if isinstance(embedder, CachedEmbedder) else CachedEmbedder(embedder)


def hashing_embedder() -> Embedder:
    """The fast fake embedder (for smoke runs and tests), memoised by text."""
    return cached(HashingEmbedder())


_DEFAULT: list[Embedder] = []


def _shared_default() -> Embedder:
    """One memoised default embedder for the dense and fusion baselines of a process: the model
    loads once and a turn both rank is embedded once."""
    if not _DEFAULT:
        _DEFAULT.append(cached(default_embedder()))
    return _DEFAULT[0]


def _loomctx(embedder: Embedder | None = None) -> EvalSystem:
    """loomctx's session-based system (the process's shared default embedder when None, so a
    turn that loomctx and the dense baselines both index is embedded once, not twice)."""
    from loomctx.eval.loomctx_system import LoomctxSystem  # lazy: see the module docstring

    return LoomctxSystem(embedder if embedder is not None else _shared_default())


SYSTEMS: dict[str, Callable[[], EvalSystem]] = {
    "loomctx": _loomctx,
    "recency": RecencyBaseline,
    "bm25": BM25Baseline,
    "dense": lambda: DenseBaseline(_shared_default()),
    "fusion": lambda: FusionBaseline(_shared_default()),
}
"""System name → factory, in the default run order."""

WITH_EMBEDDER: dict[str, Callable[[Embedder], EvalSystem]] = {
    "loomctx": _loomctx,
    "dense": DenseBaseline,
    "fusion": FusionBaseline,
}
"""Factories used instead of :data:`SYSTEMS` when the caller chooses the embedder."""


def register(
    name: str,
    factory: Callable[[], EvalSystem],
    *,
    with_embedder: Callable[[Embedder], EvalSystem] | None = None,
) -> None:
    """Add (or replace) a system; ``with_embedder`` builds it around a chosen embedder."""
    if not name or "," in name:
        raise ConfigError(f"system name {name!r} must be non-empty and without commas")
    SYSTEMS[name] = factory
    if with_embedder is not None:
        WITH_EMBEDDER[name] = with_embedder


def build_systems(
    names: Sequence[str] | None = None, *, embedder: Embedder | None = None
) -> list[EvalSystem]:
    """Instantiate ``names`` (all registered systems when None), in the order given.

    ``embedder`` replaces the default embedder of the systems that use one (memoised by text).
    """
    chosen = list(SYSTEMS) if names is None else list(dict.fromkeys(names))
    unknown = [name for name in chosen if name not in SYSTEMS]
    if unknown:
        raise ConfigError(
            f"unknown system {unknown[0]!r}: choose from {', '.join(sorted(SYSTEMS))}"
        )
    if not chosen:
        raise ConfigError("no system to evaluate: name at least one of " + ", ".join(SYSTEMS))
    systems: list[EvalSystem] = []
    for name in chosen:
        if embedder is not None and name in WITH_EMBEDDER:
            systems.append(WITH_EMBEDDER[name](cached(embedder)))
        else:
            systems.append(SYSTEMS[name]())
    return systems


__all__ = [
    "SYSTEMS",
    "WITH_EMBEDDER",
    "build_systems",
    "cached",
    "hashing_embedder",
    "register",
]
