"""The history tail: the oldest messages that cannot fit stand in one unmeasured unit."""

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
