"""``Team``: a concierge, an orchestrator and action agents over one workspace.

The seed's three entry points, each a small loop whose every model call is its role builder's
context (:mod:`loomctx.workflow.calls`):

- :meth:`Team.chat` (the seed's ``process_user_input``): record the user's message, call the
  concierge with :func:`~loomctx.workspace.build_concierge_context`; it may call
  ``dispatch_task(task)``, which runs the orchestrator, and is then called again with the
  context rebuilt (the new rounds and notes in it) plus the tool exchange, until it answers.
- :meth:`Team.run_task` (``process_task``): one orchestrator call, round by round. Each round
  rebuilds :func:`~loomctx.workspace.build_orchestrator_context` (quota, material status, the
  timeline so far); the reply's text gives the round's observe/think, its tool calls are the
  actions (one tool per action type, ``instruction`` the argument). A reply without tool
  calls ends the call with that text as the response.
- :meth:`Team.run_action` (``execute``): one action call with
  :func:`~loomctx.workspace.build_action_context` and the action's model settings; its output
  becomes a note, and the round's execution record names it.

Actions of one round run one after another, in the model's order, so note numbers and the
record are deterministic. Commands past the quota are not run; the model is told so in the
next round's context (the quota line shows none remaining).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from loomctx._sync import run_sync
from loomctx.agent.replies import assistant_message, text_of
from loomctx.agent.tools import tool_schema
from loomctx.errors import ConfigError
from loomctx.models.protocol import ChatModel
from loomctx.stores import MemoryStore, Scope
from loomctx.workflow.calls import RoleCall, call_role, check_model
from loomctx.workflow.options import TeamOptions
from loomctx.workspace import (
    ConversationManager,
    WorkSpace,
    action_model_settings,
    build_action_context,
    build_concierge_context,
    build_orchestrator_context,
)
from loomctx.workspace.options import CONCIERGE_MODEL, ORCHESTRATOR_MODEL

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
    it uses the ``"*"`` entry). Every model must take OpenAI-shaped requests.
    """

    def __init__(self, *, concierge: ChatModel, orchestrator: ChatModel,
                 action: ChatModel | Mapping[str, ChatModel],
                 workspace: WorkSpace | None = None,
                 conversation: ConversationManager | None = None,
                 options: TeamOptions | None = None) -> None:
        self.options = options or TeamOptions()
        self.concierge, self.orchestrator = concierge, orchestrator
        self.action_models = dict(action) if isinstance(action, Mapping) else {"*": action}
        for role, m in (("concierge", concierge), ("orchestrator", orchestrator),
                        *self.action_models.items()):
            check_model(m, role)
        missing = [a for a in self.options.actions if a not in self.action_models]
        if missing and "*" not in self.action_models:
            raise ConfigError(f"no model for the actions {missing!r}: add them, or a '*' "
                              "entry, to action=")
        self.workspace = workspace if workspace is not None else WorkSpace()
        self.conversation = conversation if conversation is not None else ConversationManager()
        self.calls: list[RoleCall] = []
        """Every model call of the team, in order: what it was sent and how it measured."""
        self._dispatch = tool_schema(dispatch_task)
        self._action_tools = [tool_schema(_action, name=a, description=f"Run the {a} action "
                                          "agent; its output becomes a note.")
                              for a in self.options.actions]

    # -- concierge ------------------------------------------------------------------------
    async def chat(self, message: str, attachments: Sequence[str] = ()) -> str:
        """The concierge's answer to ``message``; ``attachments`` become ``material`` notes."""
        o = self.options
        notes = tuple(self.workspace.add_note(o.roles.types.auto_material_type, text,
                                              source="user").id for text in attachments)
        self.conversation.add_user_message(message, notes)
        exchange: list[dict[str, Any]] = []
        dispatched = 0
        for turn in range(o.max_dispatches + 2):
            record, reply = await call_role(
                "concierge", self.concierge,
                lambda b: build_concierge_context(
                    message, self.workspace, self.conversation, budget=b,
                    model=self.concierge.model, format="openai", options=o.roles,
                    instructions=o.concierge_prompt),
                budget=o.concierge_budget, settings=CONCIERGE_MODEL, tools=[self._dispatch],
                exchange=exchange)
            self.calls.append(record)
            stored, calls = assistant_message(reply.message, turn)
            if not calls or turn == o.max_dispatches + 1:
                text = text_of(stored)
                self.conversation.add_concierge_response(text, original_response=text)
                return text
            results = []
            for call in calls:
                fn = call["function"]
                if fn["name"] != "dispatch_task":
                    out = f"error: unknown tool {fn['name']!r}: the tool is dispatch_task"
                elif dispatched >= o.max_dispatches:
                    out = (f"not run: {o.max_dispatches} task(s) per message; answer the user "
                           "with what was made")
                else:
                    dispatched += 1
                    out = await self.run_task(_argument(fn["arguments"], "task"))
                results.append({"role": "tool", "tool_call_id": call["id"], "content": out})
            exchange += [stored, *results]
        raise AssertionError("unreachable")  # pragma: no cover

    def chat_sync(self, message: str, attachments: Sequence[str] = ()) -> str:
        """:meth:`chat` for synchronous callers."""
        return run_sync(self.chat(message, attachments), name="chat")

    # -- orchestrator ---------------------------------------------------------------------
    async def run_task(self, task: str) -> str:
        """Run one orchestrator call for ``task``; returns its response and the notes made."""
        o = self.options
        conv = self.conversation
        index = conv.start_orchestrator_call(task)
        before = set(self.workspace.notes)
        response = f"stopped after {o.max_rounds} rounds"
        for _ in range(o.max_rounds):
            record, reply = await call_role(
                "orchestrator", self.orchestrator,
                lambda b: build_orchestrator_context(
                    task, self.workspace, conv, budget=b, model=self.orchestrator.model,
                    format="openai", options=o.roles, instructions=o.orchestrator_prompt),
                budget=o.orchestrator_budget, settings=ORCHESTRATOR_MODEL,
                tools=self._action_tools)
            self.calls.append(record)
            stored, calls = assistant_message(reply.message, len(self.calls))
            text = text_of(stored)
            if not calls:
                response = text
                break
            observe, think = observe_think(text)
            conv.add_round(observe, think, call=index)
            for call in calls:
                executed = len(conv.execution_log(index))
                if executed >= o.roles.quota.max_commands(len(conv.calls)):
                    break
                action = call["function"]["name"]
                if action not in o.actions:
                    continue  # an unknown tool: nothing runs, nothing is recorded
                instruction = _argument(call["function"]["arguments"], "instruction")
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
        record, reply = await call_role(
            "action", model,
            lambda b: build_action_context(
                action, instruction, self.workspace, self.conversation, budget=b,
                model=model.model, format="openai", options=o.roles,
                instructions=o.action_prompt.format(action=action)),
            budget=o.action_budget, settings=settings, action=action)
        self.calls.append(record)
        text = text_of(reply.message).strip()
        if not text:
            return []
        return [self.workspace.add_note(o.note_type(action), text, source=action).id]

    # -- persistence ----------------------------------------------------------------------
    def save(self, store: MemoryStore, scope: Scope) -> None:
        """Save the workspace and the conversation into ``scope``."""
        self.workspace.save(store, scope)
        self.conversation.save(store, scope)


def _argument(arguments: str, name: str) -> str:
    """One string argument of a tool call (the whole text when it is not a JSON object)."""
    try:
        value = json.loads(arguments)
    except ValueError:
        return arguments
    return str(value.get(name, "")) if isinstance(value, dict) else str(value)


__all__ = ["Team", "dispatch_task", "observe_think"]
