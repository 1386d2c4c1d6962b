"""One role's model call: its builder's context as the request, within the role's budget.

A role builder returns a :class:`~loomctx.builder.BuildResult` whose payload is the model's
format (OpenAI ``messages``; Anthropic ``system`` + ``messages``). A running role adds two things
the builder does not know about: the tool schemas it may call and, for the concierge, the tool
exchange of the current turn (its ``dispatch_task`` call and the result), both put in the
model's format (:mod:`loomctx.workflow.wire`). Both are counted first and the context is built
with what is left, so the whole request — context, tools, exchange — stays within the role's
budget; the request is then counted once more as sent and checked with
:func:`loomctx.check_request` and, under a strict placement (``first_system``, ``user_block``),
against the strict chat-template rules (:mod:`loomctx.providers.template`): a request that
breaks them is an :class:`InvalidRequestError` here and is never sent.

Model settings: ``max_output_tokens`` is the call's ``max_tokens``; ``temperature`` and
``thinking_budget`` go in the request as the format allows (:func:`~loomctx.workflow.wire.
settings_for`), and what could not be sent is named in the call's ``notes``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from loomctx import providers
from loomctx.builder import MIN_BUDGET, BuildResult
from loomctx.errors import BudgetError, InvalidRequestError
from loomctx.models.protocol import ChatModel, ModelResponse
from loomctx.providers.template import request_template_problems
from loomctx.render.placement import Placement
from loomctx.render.validate import check
from loomctx.tokens import ChatCounter, counter_for_model
from loomctx.workflow.wire import check_format, exchange_for, settings_for, tools_for
from loomctx.workspace import ModelSettings


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
    """The model settings of the call."""
    reply: dict[str, Any]
    """The assistant message the model returned."""
    format: str = "openai"
    """The wire format of ``payload``."""
    notes: tuple[str, ...] = ()
    """Settings the provider could not take as given (dropped or adjusted), one line each."""

    @property
    def expanded(self) -> list[str]:
        """The notes this call's context shows whole or cut (``@ref`` expansions), in order."""
        out = []
        for r in self.build.report.items:
            if r.id.startswith("ref:") and r.included:
                out.append(r.id[4:].split("~")[0])
        return out


STRICT: tuple[Placement, ...] = ("first_system", "user_block")
"""The placements whose requests every strict chat template takes."""


def check_model(model: ChatModel, role: str) -> None:
    """Refuse a model whose request format a team cannot send."""
    check_format(str(getattr(model, "format", None)), role)


def _counter(model: ChatModel, count_as: str | None) -> ChatCounter:
    fmt = str(getattr(model, "format", ""))
    return ChatCounter(counter_for_model(count_as or model.model).counter,
                       providers.get(fmt).name if providers.find(fmt) else "openai")


async def call_role(role: str, model: ChatModel, build: Callable[[int], BuildResult], *,
                    budget: int, settings: ModelSettings,
                    tools: Sequence[Mapping[str, Any]] = (),
                    exchange: Sequence[Mapping[str, Any]] = (),
                    action: str | None = None,
                    count_as: str | None = None,
                    placement: Placement | None = None) -> tuple[RoleCall, ModelResponse]:
    """Build the role's context with the budget left after ``tools`` and ``exchange`` (both
    OpenAI-shaped; sent in the model's format), send it with them, and return the record and
    the reply. ``count_as``: the tokenizer's model name when not the model's own;
    ``placement``: the one ``build`` renders with; a strict one holds the request to the strict
    chat-template rules before it leaves."""
    fmt = model.format
    counter = _counter(model, count_as)
    wire_tools = tools_for(fmt, tools)
    wire_exchange = exchange_for(fmt, exchange)
    fields, notes = settings_for(fmt, settings)
    extra = counter.tools(wire_tools) + sum(counter.message(m) for m in wire_exchange)
    room = budget - extra
    for _ in range(3):  # the count as sent is exact; a rebuild only corrects rounding
        if room < MIN_BUDGET:
            raise BudgetError(f"the {role} budget {budget} leaves {room} tokens for the context "
                              f"after tools and the tool exchange ({extra}); raise the budget "
                              f"to at least {extra + MIN_BUDGET}",
                              required=extra + MIN_BUDGET, available=budget)
        result = build(room)
        payload: dict[str, Any] = {**result.payload,
                                   "messages": [*result.payload["messages"], *wire_exchange]}
        if wire_tools:
            payload["tools"] = wire_tools
        payload.update(fields)
        tokens = counter.messages(payload["messages"], payload.get("tools"),
                                  system=payload.get("system"))
        if tokens <= budget:
            break
        room -= tokens - budget
    else:  # pragma: no cover - the counts are additive, so one rebuild always suffices
        raise BudgetError(f"the {role} request takes {tokens} tokens over its budget {budget}",
                          required=tokens, available=budget)
    problems = check(fmt, payload)
    if problems:
        raise InvalidRequestError(f"the {role} request is not valid: {problems!r}",
                                  problems=problems)
    if placement in STRICT:
        problems = request_template_problems(fmt, payload)
        if problems:
            raise InvalidRequestError(
                f"the {role} request breaks the chat template that placement {placement!r} "
                f"promises, so it was not sent: {problems!r}; report it as a loomctx bug, or "
                "use placement='system' for an endpoint that takes system messages anywhere",
                problems=problems)
    reply = await model.complete(payload, max_tokens=settings.max_output_tokens)
    record = RoleCall(role=role, action=action, budget=budget, tokens=tokens, build=result,
                      payload=payload, settings=settings, reply=dict(reply.message),
                      format=fmt, notes=tuple(notes))
    return record, reply


__all__ = ["STRICT", "RoleCall", "call_role", "check_model"]
