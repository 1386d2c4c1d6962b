"""``Agent``: the loop that rebuilds the context before every model call.

One turn: build the context for the session's history (the input is the last user message) →
call the model → store its reply → run the tool calls it asked for, concurrently → store their
results → the next turn. The run ends at a final answer (a reply without tool calls) or at a
limit (:class:`~loomctx.agent.limits.AgentLimits`), and every step is an event on the
session's sink (``turn_started``, ``context_rebuilt``, ``model_called``, ``tool_started``,
``tool_finished``).

Reactive compaction: when the provider refuses a request as too long
(:class:`~loomctx.errors.ContextLengthError`), the context is rebuilt once with the budget the
error implies — the limit it reported minus the output reserve — or, when it reported none (or
that budget would not be smaller), with :data:`STEP_DOWN` of the refused budget; the call is
retried once, the smaller budget stays for the rest of the agent's life, and the turn record
says what happened. A second refusal raises ``ContextLengthError``.

Cancelling the task that runs :meth:`Agent.run` stops it at once; a message being written
finishes first, so the session stays valid: calls whose results never came are left out of the
next build, or answered as interrupted once the conversation moves on (the Session's rules).
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any, Literal

from loomctx._sync import run_sync
from loomctx.agent.calibration import Calibration
from loomctx.agent.limits import AgentLimits, StopReason
from loomctx.agent.phases import Phase, infer_phase
from loomctx.agent.recall import RECALL_TOOL
from loomctx.agent.recall import recall_tool as make_recall_tool
from loomctx.agent.registry import ToolLike, ToolOutcome, ToolRegistry
from loomctx.agent.replies import assistant_message, text_of
from loomctx.agent.result import AgentResult, TurnRecord
from loomctx.builder import MIN_BUDGET, BuildOptions, BuildResult
from loomctx.errors import ConfigError, ContextLengthError
from loomctx.events import ContextRebuilt, ModelCalled, ToolFinished, ToolStarted, TurnStarted
from loomctx.models.protocol import ChatModel, ModelResponse
from loomctx.session import Session
from loomctx.sources.tools import ToolSource

STEP_DOWN = 0.75
"""Share of a refused budget to rebuild with when the provider's error implies no smaller one."""


class Agent:
    """A model, its tools and a session, run turn by turn.

    Without ``session`` the agent creates one from ``session_kwargs`` with the tools' schemas
    and the model's format. ``phases`` passes each build the phase of its turn;
    ``recall_tool=True`` offers the model a ``recall`` tool over the session's memory. With
    ``session``, it must have been created with the same tools' schemas:
    ``Session(tools=ToolRegistry(fns).schemas, ...)`` (or ``[tool_schema(f) ...]``).
    """

    def __init__(
        self, model: ChatModel, *, tools: Sequence[ToolLike] = (), session: Session | None = None,
        limits: AgentLimits | None = None, budget: int | None = None,
        output_tokens: int | None = None, tool_timeout: float = 30.0,
        timer: Callable[[], float] = time.monotonic, phases: bool = True,
        recall_tool: bool = False, **session_kwargs: Any,
    ) -> None:
        self.model = model
        if recall_tool:
            tools = [*tools, make_recall_tool(lambda: self.session)]
        self.tools = ToolRegistry(tools, timeout=tool_timeout)
        self.recall_tool = recall_tool
        """Whether the model is offered ``recall`` (:mod:`loomctx.agent.recall`): a search of
        the session's memory whose results come back as a tool result."""
        self.limits = limits if limits is not None else AgentLimits()
        for name, v in (("budget", budget), ("output_tokens", output_tokens)):
            if v is not None and (isinstance(v, bool) or not isinstance(v, int) or v < 1):
                raise ConfigError(f"{name} must be an int >= 1 or None, got {v!r}")
        self.budget = budget
        """Tokens per build (None: the model's window minus the session's reserve); lowered
        for good when the provider refuses a request as too long."""
        self.output_tokens = output_tokens
        """``max_tokens`` of each model call, and the output reserve of a compaction."""
        self.timer = timer
        """Seconds for ``max_wall_time`` (monotonic; a test may pass a fake)."""
        self.phases = phases
        """Pass each build the phase of its turn (:func:`~loomctx.agent.phases.infer_phase`),
        so an adaptive budget (a Session's default) shifts the sources' shares; False builds
        without a phase."""
        self.session = session if session is not None else self._new_session(session_kwargs)
        if session is not None:
            if session_kwargs:
                raise ConfigError(f"got session= and session options {sorted(session_kwargs)!r}:"
                                  " configure the session you pass, or pass no session")
            self._check_tools(session)
        fmt = self.session.builder.renderer.format
        if fmt != model.format:
            raise ConfigError(f"the session builds {fmt!r} requests but the model takes "
                              f"{model.format!r}: build with BuildOptions(format={model.format!r})")
        self.calibration = Calibration(self.session.builder.tokenizer.counter)

    def _new_session(self, kwargs: dict[str, Any]) -> Session:
        if "tools" in kwargs:
            raise ConfigError("pass the tool functions as Agent(tools=[...]); their schemas go "
                              "to the session")
        options = kwargs.pop("options", None) or BuildOptions(
            model=kwargs.pop("model", self.model.model), format=self.model.format)
        if options.format is None:
            options = replace(options, format=self.model.format)
        return Session(tools=self.tools.schemas, options=options, **kwargs)

    def _check_tools(self, session: Session) -> None:
        known = {t["function"]["name"] for s in session.builder.sources
                 if isinstance(s, ToolSource) for t in s.tools}
        missing = sorted(set(self.tools.tools) - known)
        if missing == [RECALL_TOOL] and self.recall_tool:
            raise ConfigError("recall_tool=True but the session does not show the recall tool: "
                              "create it with Session(tools=[*ToolRegistry(fns).schemas, "
                              "recall_tool(None).schema], ...) or let the Agent create it")
        if missing:
            raise ConfigError(f"the session does not show the tools {missing!r} to the model: "
                              "create it with Session(tools=ToolRegistry(fns).schemas, ...)")

    # -- the loop --------------------------------------------------------------------------
    async def run(self, prompt: str | None = None) -> AgentResult:
        """Add ``prompt`` as the user's message (None: go on from the session as it is) and
        run turns until a final answer or a limit."""
        s, start = self.session, self.timer()
        if prompt is not None:
            await self._add([{"role": "user", "content": prompt}])
        turns: list[TurnRecord] = []
        used_calls = spent = 0
        last: dict[str, Any] | None = None

        def done(stop: StopReason, output: str | None = None) -> AgentResult:
            return AgentResult(output=output, stop=stop, turns=tuple(turns), message=last)

        while True:
            elapsed = self.timer() - start
            stop = self.limits.reached(turns=len(turns), tool_calls=used_calls,
                                       tokens_spent=spent, elapsed=elapsed)
            if stop is not None:
                return done(stop)
            turn = len(turns)
            s.events.emit(TurnStarted(tenant=s.tenant, session=s.id, turn=turn, at=s.clock()))
            phase = self._phase(turn)
            try:
                built, reply, refused, note = await asyncio.wait_for(
                    self._call(turn, phase), self.limits.remaining(elapsed))
            except asyncio.TimeoutError:
                if self.limits.max_wall_time is None:
                    raise  # not the wall time: something inside timed out
                return done("max_wall_time")
            usage = reply.usage
            spent += usage.prompt_tokens + usage.completion_tokens
            self.calibration.add(built.payload, predicted=built.tokens,
                                 prompt_tokens=usage.prompt_tokens)
            last, calls = assistant_message(reply.message, turn)
            await self._add([last])
            s.events.emit(ModelCalled(
                tenant=s.tenant, session=s.id, turn=turn, model=self.model.model,
                prompt_tokens=usage.prompt_tokens, completion_tokens=usage.completion_tokens,
                cached_tokens=usage.cached_tokens, predicted_tokens=built.tokens,
                predicted_reusable_tokens=built.report.reused_prefix_tokens,
                tool_calls=len(calls), finish_reason=reply.finish_reason, at=s.clock()))
            record = TurnRecord(turn=turn, phase=phase, budget=built.report.budget,
                                tokens=built.tokens,
                                reused_prefix_tokens=built.report.reused_prefix_tokens,
                                usage=usage, finish_reason=reply.finish_reason,
                                refused_budget=refused, compaction=note)
            if not calls:
                turns.append(record)
                return done("final", text_of(last))
            room = (len(calls) if self.limits.max_tool_calls is None
                    else max(0, self.limits.max_tool_calls - used_calls))
            outcomes = await self._run_tools(turn, calls[:room],
                                             self.limits.remaining(self.timer() - start))
            outcomes += [_not_run(c, self.limits.max_tool_calls) for c in calls[room:]]
            used_calls += min(room, len(calls))
            await self._add([{"role": "tool", "content": o.content, "tool_call_id": o.id}
                             for o in outcomes])
            turns.append(replace(record, tool_calls=tuple(outcomes)))
            if room < len(calls):
                return done("max_tool_calls")

    def run_sync(self, prompt: str | None = None) -> AgentResult:
        """The same as :meth:`run`, for synchronous callers (inside a running loop too)."""
        return run_sync(self.run(prompt), name="run")

    # -- steps -----------------------------------------------------------------------------
    async def _build(self, turn: int, budget: int | None,
                     reason: Literal["turn", "context_length"], phase: Phase | None,
                     ) -> BuildResult:
        s = self.session
        built = await s.build(max_tokens=budget, phase=phase)
        s.events.emit(ContextRebuilt(
            tenant=s.tenant, session=s.id, turn=turn, budget=built.report.budget,
            tokens=built.tokens, reused_prefix_tokens=built.report.reused_prefix_tokens,
            reason=reason,
            report=built.report, at=s.clock()))
        return built

    def _phase(self, turn: int) -> Phase | None:
        if not self.phases:
            return None
        items = self.session.memory.history.items
        return infer_phase(turn, items[-1].role if items else None,
                           max_turns=self.limits.max_turns)

    async def _call(self, turn: int, phase: Phase | None,
                    ) -> tuple[BuildResult, ModelResponse, int | None, str | None]:
        """Build and call the model; on a context-length refusal, rebuild smaller and retry
        once. Returns the build sent, the reply, the refused budget and a note, if any."""
        built = await self._build(turn, self.budget, "turn", phase)
        try:
            reply = await self.model.complete(built.payload, max_tokens=self.output_tokens)
            return built, reply, None, None
        except ContextLengthError as refusal:
            exc = refusal
        refused = built.report.budget
        smaller, how = self._smaller(refused, exc)
        self.budget = smaller
        built = await self._build(turn, smaller, "context_length", phase)
        note = (f"the provider refused {refused} tokens as too long ({exc}); rebuilt with "
                f"{how}: {smaller} tokens, and retried")
        try:
            reply = await self.model.complete(built.payload, max_tokens=self.output_tokens)
        except ContextLengthError as again:
            raise ContextLengthError(
                f"the provider refused the request as too long twice: first at a budget of "
                f"{refused} tokens, then at {smaller} ({again}); pass a smaller budget= to "
                "Agent, or a larger output reserve", status=again.status,
                limit=again.limit if again.limit is not None else exc.limit,
                requested=again.requested) from again
        return built, reply, refused, note

    def _smaller(self, refused: int, exc: ContextLengthError) -> tuple[int, str]:
        """The budget to rebuild with after ``exc``, and how it was found."""
        new, how = math.floor(refused * STEP_DOWN), f"a step down to {STEP_DOWN:.0%}"
        if exc.limit is not None:
            reserve = (self.output_tokens if self.output_tokens is not None else
                       math.ceil(exc.limit * self.session.builder.budget.reserve))
            implied = exc.limit - reserve
            if MIN_BUDGET <= implied < refused:
                new, how = implied, (f"the provider's limit {exc.limit} minus the output "
                                     f"reserve {reserve}")
        if new < MIN_BUDGET:
            raise ContextLengthError(f"the provider refused {refused} tokens as too long and "
                                     f"a smaller budget would be under {MIN_BUDGET} tokens",
                                     status=exc.status, limit=exc.limit,
                                     requested=exc.requested) from exc
        return new, how

    async def _run_tools(self, turn: int, calls: Sequence[Mapping[str, Any]],
                         remaining: float | None) -> list[ToolOutcome]:
        s = self.session

        async def one(call: Mapping[str, Any]) -> ToolOutcome:
            name = str((call.get("function") or {}).get("name", ""))
            s.events.emit(ToolStarted(tenant=s.tenant, session=s.id, turn=turn,
                                      call_id=str(call["id"]), name=name, at=s.clock()))
            out = await self.tools.run(call, timeout=remaining)
            s.events.emit(ToolFinished(tenant=s.tenant, session=s.id, turn=turn,
                                       call_id=out.id, name=out.name, status=out.status,
                                       at=s.clock()))
            return out

        return list(await asyncio.gather(*(one(c) for c in calls)))

    async def _add(self, messages: list[dict[str, Any]]) -> None:
        """Store messages; a cancellation waits for the write, so none is half-done."""
        write = asyncio.ensure_future(self.session.add_messages(messages))
        try:
            await asyncio.shield(write)
        except asyncio.CancelledError:
            await write
            raise


def _not_run(call: Mapping[str, Any], limit: int | None) -> ToolOutcome:
    return ToolOutcome(id=str(call["id"]), name=str((call.get("function") or {}).get("name")),
                       content=f"error: not run: the limit of {limit} tool calls per run was "
                               "reached", status="not_run")


__all__ = ["STEP_DOWN", "Agent"]
