"""One default embedder: a session and ``loomctx eval`` embed the same way unless told otherwise."""

from __future__ import annotations

from pathlib import Path

import pytest

import loomctx
from loomctx import session as session_module
from loomctx.embed import (
    CachedEmbedder,
    JointEmbedder,
    MiniLMEmbedder,
    UniversalSentenceEncoder,
    default_embedder,
)
from loomctx.embed.default import DEFAULT_WEIGHT
from loomctx.errors import ConfigError
from loomctx.eval.loomctx_system import LoomctxSystem
from loomctx.eval.records import Turn
from loomctx.eval.systems import build_systems


def test_default_embedder_is_the_bare_model_and_one_public_name() -> None:
    made = default_embedder()
    assert isinstance(made, JointEmbedder)  # no cache: the caller picks one
    assert isinstance(made.multilingual, UniversalSentenceEncoder)
    assert isinstance(made.english, MiniLMEmbedder)
    assert made.weight == DEFAULT_WEIGHT
    assert made is not default_embedder()  # a new instance each call (the weights are shared)
    assert loomctx.default_embedder is default_embedder
    assert session_module.default_embedder is default_embedder


def test_session_caches_the_default_over_its_own_store() -> None:
    s = loomctx.Session()
    assert isinstance(s.embedder, CachedEmbedder)
    assert isinstance(s.embedder.inner, JointEmbedder)
    assert s.embedder.store is s.store  # vectors persist with the memories


def test_eval_systems_use_the_same_default_memoised_in_process() -> None:
    (dense,) = build_systems(["dense"])
    assert isinstance(dense.embedder, CachedEmbedder)  # type: ignore[attr-defined]
    assert isinstance(dense.embedder.inner, JointEmbedder)  # type: ignore[attr-defined]
    system = LoomctxSystem()
    assert system.embedder is None  # chosen on first use, so building the registry stays cheap
    history = (Turn(id="t1", role="user", content="hello", timestamp=0.0),)
    session = system._session(history)
    assert isinstance(system.embedder, CachedEmbedder)
    assert isinstance(system.embedder.inner, JointEmbedder)
    assert session.embedder is system.embedder  # a cached embedder is used as given


def test_a_store_written_by_another_embedder_says_which_to_open_it_with(tmp_path: Path) -> None:
    path = tmp_path / "memory.db"
    old = loomctx.Session(store=str(path), embedder=UniversalSentenceEncoder(), id="s")
    old.add_messages_sync([{"role": "user", "content": "My dog is called Biscuit."}])
    old.store.close()
    assert loomctx.default_embedder().dim == 896
    # The joint default fails when the session opens, not by recalling nothing in every build.
    with pytest.raises(ConfigError, match=r"dimension 896.*holds dimension 512.*embedder=.*"
                                          r"loomctx store reembed"):
        loomctx.Session(store=str(path), id="s")
    same = loomctx.Session(store=str(path), embedder=UniversalSentenceEncoder(), id="s")
    same.add_messages_sync([{"role": "user", "content": "And my cat is Miso."}])
    result = same.build_sync("What is my dog called?", max_tokens=300)
    assert "Biscuit" in str(result.rendered.payload)  # the old memory, found with its embedder
