"""OpenAI Chat Completions structural rules, re-exported from
:mod:`loomctx.providers.openai.rules`."""

from loomctx.providers.openai.rules import check_openai

__all__ = ["check_openai"]
