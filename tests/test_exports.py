"""The public surface is pinned: additions and removals are deliberate."""

import loomctx


def test_all_is_sorted_and_importable():
    assert loomctx.__all__ == sorted(loomctx.__all__)
    missing = [name for name in loomctx.__all__ if not hasattr(loomctx, name)]
    assert missing == []


def test_core_names_are_exported():
    for name in ("ContextBuilder", "Session", "BudgetManager", "counter_for_model",
                 "SQLiteStore", "ContextAssembler", "BuildReport", "default_embedder", "Scope",
                 "EventSink", "RecordingSink", "InvalidRequestError", "register_format",
                 "InheritedSource", "BaseSource", "ContextSource"):
        assert name in loomctx.__all__
