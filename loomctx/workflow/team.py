"""``Team``: a concierge, an orchestrator and action agents over one workspace.

Three entry points, each a small loop whose every model call is its role builder's
context (:mod:`loomctx.workflow.calls`):

- :meth:`Team.chat`: record the user's message, call the
  concierge with :func:`~loomctx.workspace.build_concierge_context`; it may call
  ``dispatch_task(task)``, which *starts* the orchestrator as a background task (the
  "orchestrator running" state), and is then called again with the tool exchange until it
  answers. ``chat`` returns that answer without waiting for the orchestrator, so the user can
  keep talking: a message during the run is answered with the running state in the
  concierge's context. When the orchestrator finishes, the concierge is called once more with
  its outcome (``Labels.finished``) and tells the user what was made; :meth:`Team.wait` waits
  for that and returns it.
- :meth:`Team.run_task` (``process_task``): one orchestrator call, round by round. Each round
  rebuilds :func:`~loomctx.workspace.build_orchestrator_context` (quota, material status, the
  timeline so far); the reply's text gives the round's observe/think, its tool calls are the
  actions (one tool per action type, ``instruction`` the argument). A reply without tool
  calls ends the call with that text as the response.
- :meth:`Team.run_action` (``execute``): one action call with
  :func:`~loomctx.workspace.build_action_context` and the action's model settings; its output
  becomes a note, and the round's execution record names it.

Models may speak the OpenAI or the Anthropic wire format (each role its own); every request is
built in its model's format. Actions named in ``lookups`` (``websearch``, ``knowledge``...) call
the user's function first and write their note from what it found (:mod:`loomctx.workflow.world`).

Actions of one round run one after another, in the model's order, so note numbers and the
record are deterministic. Commands past the quota are not run; the model is told so in the
next round's context (the quota line shows none remaining).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from loomctx._sync import run_sync
from loomctx.agent.replies import assistant_message, text_of
from loomctx.agent.tools import tool_schema
from loomctx.errors import ConfigError
from loomctx.models.protocol import ChatModel
from loomctx.stores import MemoryStore, Scope
from loomctx.workflow.calls import RoleCall, call_role, check_model
from loomctx.workflow.options import TeamOptions
from loomctx.workflow.record import save_calls
from loomctx.workflow.world import Lookup, run_lookup
from loomctx.workspace import (
    ConversationManager,
    WorkSpace,
    action_model_settings,
    build_action_context,
    build_concierge_context,
    build_orchestrator_context,
)
from loomctx.workspace.options import CONCIERGE_MODEL, ORCHESTRATOR_MODEL, Labels

_OBSERVE = re.compile(r"^\s*(?:observe|观察)\s*[:：]\s*(.*)$", re.I)
_THINK = re.compile(r"^\s*(?:think|思考)\s*[:：]\s*(.*)$", re.I)


def dispatch_task(task: str) -> str:
    """Hand a content task to the orchestrator, which plans and runs the action agents.

    Args:
        task: What to make, with every requirement the user gave.
    """
    raise NotImplementedError  # the schema only: Team runs the orchestrator itself


def _action(instruction: str) -> str:
    """Run this action agent.

    Args:
        instruction: What to do; name the notes to use by @id (e.g. @persona1).
    """
    raise NotImplementedError  # the schema only


def observe_think(text: str) -> tuple[str, str]:
    """A round's observe and think from the orchestrator's reply text (``Observe: ...`` and
    ``Think: ...`` lines, or 观察/思考); text with neither is all think."""
    observe: list[str] = []
    think: list[str] = []
    current: list[str] | None = None
    for line in text.splitlines():
        if m := _OBSERVE.match(line):
            current = observe
            line = m.group(1)
        elif m := _THINK.match(line):
            current = think
            line = m.group(1)
        (current if current is not None else think).append(line)
    return "\n".join(observe).strip(), "\n".join(think).strip()


class Team:
    """The three roles over one :class:`WorkSpace` and :class:`ConversationManager`.

    ``action`` is one model for every action, or a mapping action type → model (a type not in
    it uses the ``"*"`` entry). Each model takes OpenAI or Anthropic requests (its ``format``).
    ``lookups`` maps action types to functions of the instruction whose text the action is
    given (:mod:`loomctx.workflow.world`).
    """

    def __init__(self, *, concierge: ChatModel, orchestrator: ChatModel,
                 action: ChatModel | Mapping[str, ChatModel],
                 workspace: WorkSpace | None = None,
                 conversation: ConversationManager | None = None,
                 options: TeamOptions | None = None,
                 lookups: Mapping[str, Lookup] | None = None) -> None:
        self.options = _with_labels(options or TeamOptions())
        self.concierge, self.orchestrator = concierge, orchestrator
        self.action_models = dict(action) if isinstance(action, Mapping) else {"*": action}
        for role, m in (("concierge", concierge), ("orchestrator", orchestrator),
                        *self.action_models.items()):
            check_model(m, role)
        missing = [a for a in self.options.actions if a not in self.action_models]
        if missing and "*" not in self.action_models:
            raise ConfigError(f"no model for the actions {missing!r}: add them, or a '*' "
                              "entry, to action=")
        self.lookups = dict(lookups or {})
        for name, fn in self.lookups.items():
            if name not in self.options.actions or not callable(fn):
                raise ConfigError(f"lookups[{name!r}] must be a callable for one of the "
                                  f"team's actions {self.options.actions!r}, got {fn!r}")
        self.workspace = workspace if workspace is not None else WorkSpace()
        self.conversation = conversation if conversation is not None else ConversationManager()
        self.calls: list[RoleCall] = []
        """Every model call of the team, in order: what it was sent and how it measured."""
        self.run_id = uuid.uuid4().hex[:12]
        """Names this team's calls among those saved in a scope (see :meth:`save`)."""
        self.reports: list[str] = []
        """The concierge's answers to finished orchestrator calls, in order."""
        self._running: asyncio.Task[str] | None = None
        self._dispatch = tool_schema(dispatch_task)
        self._action_tools = [tool_schema(_action, name=a, description=f"Run the {a} action "
                                          "agent; its output becomes a note.")
                              for a in self.options.actions]

    @property
    def running(self) -> bool:
        """True while an orchestrator call runs in the background."""
        return self._running is not None and not self._running.done()

    # -- concierge ------------------------------------------------------------------------
    async def chat(self, message: str, attachments: Sequence[str] = ()) -> str:
        """The concierge's answer to ``message``; ``attachments`` become ``material`` notes.

        A task the concierge dispatches starts in the background: this returns without
        waiting for it (:meth:`wait` does)."""
        o = self.options
        notes = tuple(self.workspace.add_note(o.roles.types.auto_material_type, text,
                                              source="user").id for text in attachments)
        self.conversation.add_user_message(message, notes)
        exchange: list[dict[str, Any]] = []
        dispatched = 0
        for turn in range(o.max_dispatches + 2):
            reply = await self._concierge_call(message, exchange)
            stored, calls = assistant_message(reply, turn)
            if not calls or turn == o.max_dispatches + 1:
                text = text_of(stored)
                self.conversation.add_concierge_response(text, original_response=text)
                return text
            results = []
            for call in calls:
                fn = call["function"]
                if fn["name"] != "dispatch_task":
                    out = f"error: unknown tool {fn['name']!r}: the tool is dispatch_task"
                elif self.running:
                    out = ("not run: the orchestrator is still working on the last task; tell "
                           "the user it will report when done")
                elif dispatched >= o.max_dispatches:
                    out = (f"not run: {o.max_dispatches} task(s) per message; answer the user "
                           "with what was made")
                else:
                    dispatched += 1
                    self._start(_argument(fn["arguments"], "task"))
                    out = ("started: the orchestrator is working on the task in the "
                           "background; tell the user it has started (you will be called "
                           "again with its outcome)")
                results.append({"role": "tool", "tool_call_id": call["id"], "content": out})
            exchange += [stored, *results]
        raise AssertionError("unreachable")  # pragma: no cover

    async def _concierge_call(self, message: str, exchange: Sequence[dict[str, Any]],
                              event: str | None = None) -> dict[str, Any]:
        o = self.options
        record, reply = await call_role(
            "concierge", self.concierge,
            lambda b: build_concierge_context(
                message, self.workspace, self.conversation, budget=b,
                model=o.count_as or self.concierge.model, format=self.concierge.format,
                options=o.roles, placement=o.placement,
                instructions=o.concierge_prompt, event=event),
            budget=o.concierge_budget, settings=CONCIERGE_MODEL,
            tools=[self._dispatch], exchange=exchange, count_as=o.count_as,
            placement=o.placement)
        self.calls.append(record)
        return reply.message

    def _start(self, task: str) -> None:
        index = self.conversation.start_orchestrator_call(task)
        self.conversation.running = index  # shown to the concierge from its next call on
        self._running = asyncio.get_running_loop().create_task(self._orchestrate(task, index))

    async def _orchestrate(self, task: str, index: int) -> str:
        """Run the task, then have the concierge tell the user what came of it."""
        try:
            outcome = await self.run_task(task, call=index)
        finally:
            self.conversation.running = None
        last = next((e.content for e in reversed(self.conversation.history)
                     if e.type == "user"), task)
        reply = await self._concierge_call(last, (), event=outcome)
        text = text_of(reply)
        self.conversation.add_concierge_response(text, original_response=text)
        self.reports.append(text)
        return text

    async def wait(self) -> str | None:
        """Wait for the background orchestrator call; the concierge's report on it (None when
        none was started). Its failure is raised here."""
        task, self._running = self._running, None
        return None if task is None else await task

    async def stop(self) -> None:
        """Cancel the background orchestrator call, if one runs (what it made stays)."""
        task, self._running = self._running, None
        if task is not None and not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self.conversation.running = None

    def chat_sync(self, message: str, attachments: Sequence[str] = ()) -> str:
        """:meth:`chat` for synchronous callers. No loop runs between two sync calls, so this
        also waits for a task the message started; the concierge's report on it is the last
        entry of :attr:`reports`."""
        async def both() -> str:
            answer = await self.chat(message, attachments)
            await self.wait()
            return answer
        return run_sync(both(), name="chat")

    # -- orchestrator ---------------------------------------------------------------------
    async def run_task(self, task: str, *, call: int | None = None) -> str:
        """Run one orchestrator call for ``task``; returns its response and the notes made.
        ``call``: the index of a call already opened for it (else one is opened)."""
        o = self.options
        conv = self.conversation
        index = conv.start_orchestrator_call(task) if call is None else call
        before = set(self.workspace.notes)
        response = f"stopped after {o.max_rounds} rounds"
        for _ in range(o.max_rounds):
            record, reply = await call_role(
                "orchestrator", self.orchestrator,
                lambda b: build_orchestrator_context(
                    task, self.workspace, conv, budget=b,
                    model=o.count_as or self.orchestrator.model,
                    format=self.orchestrator.format, options=o.roles,
                    instructions=o.orchestrator_prompt, placement=o.placement),
                budget=o.orchestrator_budget, settings=ORCHESTRATOR_MODEL,
                tools=self._action_tools, count_as=o.count_as, placement=o.placement)
            self.calls.append(record)
            stored, calls = assistant_message(reply.message, len(self.calls))
            text = text_of(stored)
            if not calls:
                response = text
                break
            observe, think = observe_think(text)
            conv.add_round(observe, think, call=index)
            for tool_call in calls:
                executed = len(conv.execution_log(index))
                if executed >= o.roles.quota.max_commands(len(conv.calls)):
                    break
                action = tool_call["function"]["name"]
                if action not in o.actions:
                    continue  # an unknown tool: nothing runs, nothing is recorded
                instruction = _argument(tool_call["function"]["arguments"], "instruction")
                made = await self.run_action(action, instruction)
                conv.add_action(action, instruction, tuple(made), call=index)
        conv.finish_orchestrator_call(response, call=index)
        made = [n for n in self.workspace.notes if n not in before]
        return f"{response}\nnotes: {' '.join('@' + n for n in made) or '-'}"

    # -- actions --------------------------------------------------------------------------
    async def run_action(self, action: str, instruction: str) -> list[str]:
        """Run one action; its output becomes a note. Returns the ids of the notes made."""
        o = self.options
        model = self.action_models.get(action) or self.action_models["*"]
        settings = action_model_settings(action, o.roles)
        lookup = self.lookups.get(action)
        found = await run_lookup(lookup, action, instruction) if lookup is not None else ""
        record, reply = await call_role(
            "action", model,
            lambda b: build_action_context(
                action, instruction, self.workspace, self.conversation, budget=b,
                model=o.count_as or model.model, format=model.format, options=o.roles,
                instructions=o.action_prompt.format(action=action), found=found,
                placement=o.placement),
            budget=o.action_budget, settings=settings, action=action, count_as=o.count_as,
            placement=o.placement)
        self.calls.append(record)
        text = text_of(reply.message).strip()
        if not text:
            return []
        return [self.workspace.add_note(o.note_type(action), text, source=action).id]

    # -- persistence ----------------------------------------------------------------------
    def save(self, store: MemoryStore, scope: Scope) -> None:
        """Save the workspace, the conversation and the model calls' records into ``scope``."""
        self.workspace.save(store, scope)
        self.conversation.save(store, scope)
        save_calls(self.calls, store, scope, run=self.run_id)


def _with_labels(options: TeamOptions) -> TeamOptions:
    """Options whose labels follow the prompts' language when ``language`` is ``auto``."""
    if options.language == "auto":
        labels = Labels.for_text(options.concierge_prompt, options.orchestrator_prompt,
                                 options.action_prompt)
    else:
        labels = Labels() if options.language == "zh" else Labels.english()
    if options.language != "auto" or options.roles.labels == Labels():
        return replace(options, roles=replace(options.roles, labels=labels))
    return options


def _argument(arguments: str, name: str) -> str:
    """One string argument of a tool call (the whole text when it is not a JSON object)."""
    try:
        value = json.loads(arguments)
    except ValueError:
        return arguments
    return str(value.get(name, "")) if isinstance(value, dict) else str(value)


__all__ = ["Team", "dispatch_task", "observe_think"]
