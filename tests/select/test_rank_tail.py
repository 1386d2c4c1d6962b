"""The history tail: the oldest messages that cannot fit stand in one unmeasured unit."""

from hypothesis import given, settings
from hypothesis import strategies as st

from loomctx.items import ContextItem
from loomctx.select.rank import tail_units
from loomctx.select.scoring import SelectOptions


def _history(n: int) -> list[ContextItem]:
    return [ContextItem(id=f"m{i}", source="h", content=f"message {i}", kind="message",
                        role="user", seq=i, timestamp=float(i)) for i in range(n)]


def test_the_unmeasured_rest_reads_as_the_oldest_items_in_order():
    items = _history(50)
    units, unmeasured = tail_units(items, 40, "message", 100.0, SelectOptions(),
                                   lambda it: 10)
    rest = units[-1].items
    assert unmeasured == len(rest) > 0 and rest[0] is items[0]
    assert list(rest) == items[:unmeasured] and rest[-1] is items[unmeasured - 1]
    assert rest[1:3] == items[1:3] and len(rest[::2]) == len(items[:unmeasured:2])
    assert [it.tokens for it in rest] == [None] * unmeasured  # the source's, unmeasured
    try:
        rest[unmeasured]
    except IndexError:
        pass
    else:
        raise AssertionError("the view must end where the measured tail begins")
    # Every measured unit holds a copy, newest first, after the unmeasured ones.
    measured = [it for u in units[:-1] for it in u.items]
    assert [it.id for it in measured] == [f"m{i}" for i in range(49, unmeasured - 1, -1)]


@settings(max_examples=80, deadline=None)
@given(groups=st.lists(st.one_of(st.none(), st.sampled_from(["g1", "g2", "g3"])), max_size=12))
def test_a_window_keeps_the_order_its_units_would_hold(groups: list[str | None]) -> None:
    """The window's copies come in the order of :func:`make_units` (a group's members right
    after its first one), each measured once, and the source's items stay untouched."""
    from loomctx.select.packer import make_units
    from loomctx.select.rank import window_items

    items = [ContextItem(id=f"m{i}", source="history", content="x" * (i + 1), kind="message",
                         role="user", group=g, seq=i) for i, g in enumerate(groups)]
    measured: list[str] = []

    def cost(it: ContextItem) -> int:
        measured.append(it.id)
        it.tokens = len(it.content)
        return it.tokens

    got = window_items(items, cost)
    want = [it for u in make_units(items, lambda it: len(it.content)) for it in u.items]
    assert [it.id for it in got] == [it.id for it in want]
    assert measured == [it.id for it in items]  # once each, in history order
    assert all(a is not b for a, b in zip(got, want, strict=True))  # copies, not the items
    assert all(it.tokens is None for it in items) and all(it.tokens for it in got)
    measured.clear()  # given the costs already summed, nothing is measured again
    known = window_items(items, cost, [len(it.content) for it in items])
    assert measured == [] and [(it.id, it.tokens) for it in known] == \
        [(it.id, it.tokens) for it in got]
