"""The system registry used by ``loomctx eval``."""

from __future__ import annotations

import numpy as np
import pytest

from loomctx.embed.fake import HashingEmbedder
from loomctx.errors import ConfigError
from loomctx.eval import systems as registry
from loomctx.eval.baselines import DenseBaseline, RecencyBaseline
from loomctx.eval.systems import SYSTEMS, build_systems, cached, register


def test_default_systems_are_registered() -> None:
    assert {"loomctx", "recency", "bm25", "dense"} <= set(SYSTEMS)


def test_register_and_build(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(registry, "SYSTEMS", dict(SYSTEMS))
    monkeypatch.setattr(registry, "WITH_EMBEDDER", dict(registry.WITH_EMBEDDER))

    class Mine(RecencyBaseline):
        name = "mine"

    register("mine", Mine)
    built = build_systems(["mine", "recency", "mine"])
    assert [s.name for s in built] == ["mine", "recency"]
    chosen: list[object] = []
    register("mine", Mine, with_embedder=lambda e: chosen.append(e) or Mine())
    build_systems(["mine"], embedder=HashingEmbedder())
    assert len(chosen) == 1 and chosen[0].dim == 256  # type: ignore[attr-defined]
    with pytest.raises(ConfigError, match="'nope'"):
        build_systems(["nope"])
    with pytest.raises(ConfigError):
        register("a,b", Mine)
    with pytest.raises(ConfigError):
        build_systems([])


def test_dense_takes_the_given_embedder_memoised() -> None:
    (dense,) = build_systems(["dense"], embedder=HashingEmbedder(dim=64))
    assert isinstance(dense, DenseBaseline)
    assert dense.embedder.dim == 64


def test_cached_embedder_matches_the_inner_one() -> None:
    inner = HashingEmbedder()
    memo = cached(inner)
    texts = ["a cat", "a dog", "a cat"]
    np.testing.assert_allclose(memo.embed(texts), inner.embed(texts))
    assert memo.embed([]).shape == (0, inner.dim)
