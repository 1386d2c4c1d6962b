"""The rules a strict open-model chat template puts on a conversation, as a checker.

The rules live with the wire formats (:mod:`loomctx.providers.template`), where the team's
pre-send check reads them; they are re-exported here for tests.
``FakeModelServer(strict_template=True)`` refuses a request that breaks them the way vLLM,
llama.cpp or TGI do (HTTP 400), in either wire format, so a test proves a request is accepted
over real HTTP.
"""

from __future__ import annotations

from loomctx.providers.template import (
    anthropic_conversation,
    request_template_problems,
    template_problems,
)

__all__ = ["anthropic_conversation", "request_template_problems", "template_problems"]
