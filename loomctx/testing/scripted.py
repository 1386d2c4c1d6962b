"""``ScriptedModel`` for tests; it lives in :mod:`loomctx.models.scripted` (the offline demos run
it too, and production code never imports :mod:`loomctx.testing`)."""

from loomctx.models.scripted import CHARS_PER_TOKEN, ScriptedModel, ScriptStep, Step, ToolCall

__all__ = ["CHARS_PER_TOKEN", "ScriptStep", "ScriptedModel", "Step", "ToolCall"]
