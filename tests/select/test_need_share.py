"""How much a turn needs from outside its window is read from what retrieval found for the
message, not from what the user asked to be kept (shown in every turn whatever it asks)."""

from __future__ import annotations

from loomctx import BuildOptions, ContextBuilder
from loomctx.budget.manager import Allocation
from loomctx.buildstate import BuildState
from loomctx.items import ContextItem
from loomctx.retrieval.source import STANDING_KEY
from loomctx.select.window import TurnWindow


def _evidence(i: int, source: str, **metadata: object) -> ContextItem:
    return ContextItem(id=f"m{i}", source=source, content=f"memory {i}", kind="evidence",
                       role="user", metadata=dict(metadata))


def _window() -> TurnWindow:
    return ContextBuilder([], options=BuildOptions(model="gpt-4o")).window


def test_what_the_user_asked_to_keep_does_not_lower_the_need() -> None:
    st = BuildState(question="What activities does Melanie partake in?", turn=True, now=0.0,
                    allocation=Allocation(total=16384, shares={}))
    st.candidates = {
        "L2_important": [_evidence(i, "L2_important", **{STANDING_KEY: True}) for i in range(4)],
        "L4_semantic": [_evidence(10 + i, "L4_semantic") for i in range(4)]}
    shown = {f"m{i}" for i in range(4)}  # the window still shows the standing requests
    need = _window().need(st, shown)
    assert need == 1.0  # all of what retrieval found is out of view
    for it in st.candidates["L2_important"]:
        it.metadata.pop(STANDING_KEY)
    assert _window().need(st, shown) == 0.5
