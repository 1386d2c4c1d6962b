"""One role's model call: its builder's context as the request, within the role's budget.

A role builder returns a :class:`~loomctx.builder.BuildResult` whose payload is an OpenAI
``messages`` list. A running role adds two things the builder does not know about: the tool
schemas it may call and, for the concierge, the tool exchange of the current turn (its
``dispatch_task`` call and the result). Both are counted first and the context is built with
what is left, so the whole request — context, tools, exchange — stays within the role's budget;
the request is then counted once more as sent and checked with :func:`loomctx.check_request`.

Model settings: ``max_output_tokens`` is the call's ``max_tokens`` and ``temperature`` goes in
the request; ``thinking_budget`` is recorded (:class:`RoleCall`) but not sent, since Chat
Completions has no field for it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from loomctx.builder import MIN_BUDGET, BuildResult
from loomctx.errors import BudgetError, ConfigError, InvalidRequestError
from loomctx.models.protocol import ChatModel, ModelResponse
from loomctx.render.validate import check
from loomctx.tokens import ChatCounter, counter_for_model
from loomctx.workspace import ModelSettings

FORMAT: Literal["openai"] = "openai"
"""The request format of every role call (the tool exchange is OpenAI-shaped)."""


@dataclass(frozen=True, kw_only=True)
class RoleCall:
    """What one role's model call was sent, and how it measured."""

    role: str
    """``concierge``, ``orchestrator`` or ``action``."""
    action: str | None
    """The action type for an action call, else None."""
    budget: int
    """The role's budget for the whole request."""
    tokens: int
    """The whole request as sent (context + tools + exchange), counted."""
    build: BuildResult
    """The builder's result (its report names what was shortened or left out)."""
    payload: dict[str, Any]
    """The request as sent."""
    settings: ModelSettings
    """The model settings of the call (``thinking_budget`` recorded, not sent)."""
    reply: dict[str, Any]
    """The assistant message the model returned."""


def check_model(model: ChatModel, role: str) -> None:
    """Refuse a model that does not take OpenAI-shaped requests."""
    if getattr(model, "format", None) != FORMAT:
        raise ConfigError(f"the {role} model takes {getattr(model, 'format', None)!r} requests"
                          f"; the workflow sends {FORMAT!r} ones: use a model with "
                          f"format={FORMAT!r}")


def _counter(model: ChatModel) -> ChatCounter:
    return ChatCounter(counter_for_model(model.model).counter, FORMAT)


async def call_role(role: str, model: ChatModel, build: Callable[[int], BuildResult], *,
                    budget: int, settings: ModelSettings,
                    tools: Sequence[Mapping[str, Any]] = (),
                    exchange: Sequence[Mapping[str, Any]] = (),
                    action: str | None = None) -> tuple[RoleCall, ModelResponse]:
    """Build the role's context with the budget left after ``tools`` and ``exchange``, send
    it with them, and return the record and the reply."""
    counter = _counter(model)
    extra = counter.tools(list(tools)) + sum(counter.message(m) for m in exchange)
    room = budget - extra
    for _ in range(3):  # the count as sent is exact; a rebuild only corrects rounding
        if room < MIN_BUDGET:
            raise BudgetError(f"the {role} budget {budget} leaves {room} tokens for the context "
                              f"after tools and the tool exchange ({extra}); raise the budget "
                              f"to at least {extra + MIN_BUDGET}",
                              required=extra + MIN_BUDGET, available=budget)
        result = build(room)
        payload: dict[str, Any] = {**result.payload,
                                   "messages": [*result.payload["messages"], *exchange]}
        if tools:
            payload["tools"] = [dict(t) for t in tools]
        payload["temperature"] = settings.temperature
        tokens = counter.messages(payload["messages"], payload.get("tools"))
        if tokens <= budget:
            break
        room -= tokens - budget
    else:  # pragma: no cover - the counts are additive, so one rebuild always suffices
        raise BudgetError(f"the {role} request takes {tokens} tokens over its budget {budget}",
                          required=tokens, available=budget)
    problems = check(FORMAT, payload)
    if problems:
        raise InvalidRequestError(f"the {role} request is not valid: {problems!r}",
                                  problems=problems)
    reply = await model.complete(payload, max_tokens=settings.max_output_tokens)
    record = RoleCall(role=role, action=action, budget=budget, tokens=tokens, build=result,
                      payload=payload, settings=settings, reply=dict(reply.message))
    return record, reply


__all__ = ["FORMAT", "RoleCall", "call_role", "check_model"]
