"""How a :class:`~loomctx.workflow.team.Team` runs: budgets per role, limits, prompts, note types.

The role contexts themselves are configured by :class:`~loomctx.workspace.RoleOptions`; this
adds what only a running team needs: how many tokens each role's request may take (tools and
the in-flight tool exchange included), how many rounds and tasks a message may cost, which
actions exist and what note type each one's output becomes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from loomctx.errors import ConfigError
from loomctx.render.placement import PLACEMENTS, Placement
from loomctx.workspace import RoleOptions

ACTIONS: tuple[str, ...] = ("websearch", "knowledge", "persona", "resonant", "hitpoint",
                            "xhs_post", "wechat_article", "tiktok_script")
"""The action types, each a tool of the orchestrator."""

NOTE_TYPES: Mapping[str, str] = {"xhs_post": "xhs", "wechat_article": "wechat",
                                 "tiktok_script": "tiktok"}
"""Action → note type of its output where they differ (the writing note types)."""

CONCIERGE_PROMPT = (
    "You are Loomi, the concierge. Talk with the user; hand every content task to the "
    "orchestrator with dispatch_task(task), then tell the user what was made, citing notes "
    "by @id.")
ORCHESTRATOR_PROMPT = (
    "You are the orchestrator. Each round, write 'Observe: ...' and 'Think: ...' and call "
    "action tools with an instruction that names the notes to use by @id. Stay within the "
    "command quota. Reply without tool calls when the task is done.")
ACTION_PROMPT = "You are the {action} agent. Do exactly the instruction; use the references."


@dataclass(frozen=True, kw_only=True)
class TeamOptions:
    """Budgets, limits and prompts of a team."""

    concierge_budget: int = 8_000
    """Tokens of one concierge request: context + tool schema + the tool exchange so far."""
    orchestrator_budget: int = 16_000
    """Tokens of one orchestrator request (context + action tool schemas)."""
    action_budget: int = 16_000
    """Tokens of one action request."""
    max_rounds: int = 8
    """Rounds one orchestrator call may run before it is stopped."""
    max_dispatches: int = 1
    """Tasks the concierge may hand over per user message (later calls are answered as not
    run, so a model that keeps dispatching cannot loop)."""
    actions: tuple[str, ...] = ACTIONS
    """The action types the orchestrator may call (one tool each)."""
    note_types: Mapping[str, str] = field(default_factory=lambda: dict(NOTE_TYPES))
    """Action → note type of its output; an action not listed writes notes of its own name."""
    roles: RoleOptions = field(default_factory=RoleOptions)
    """How the three role contexts are built (note types, previews, quota, labels, models)."""
    count_as: str | None = None
    """The model name, encoding or ``tokenizer.json`` path whose tokenizer counts every
    request (None: each model's own name; set it for a model loomctx has no tokenizer for)."""
    placement: Placement = "user_block"
    """Where each request puts the turn's state and evidence (the choices of
    :attr:`~loomctx.options.BuildOptions.placement`). A role's request is its system message
    and one user turn (then the tool exchange), and the turn's context sits right before the
    input either way, so ``"user_block"`` (joined into that user turn) keeps the same cached
    prefix as ``"system"`` and passes every chat template; ``"system"`` (a system message
    before the input) is for endpoints that take one. With a strict placement every request
    is checked against the strict template rules before it is sent
    (:func:`loomctx.providers.template.request_template_problems`)."""
    language: str = "auto"
    """The labels' language: ``zh``, ``en``, or ``auto``: the prompts' language
    (:func:`~loomctx.workspace.language_of`) unless ``roles.labels`` was set by hand."""
    concierge_prompt: str = CONCIERGE_PROMPT
    """The concierge's instructions (the pinned system item of its context)."""
    orchestrator_prompt: str = ORCHESTRATOR_PROMPT
    """The orchestrator's instructions."""
    action_prompt: str = ACTION_PROMPT
    """Every action's instructions; ``{action}`` is replaced by the action type."""

    def __post_init__(self) -> None:
        for name in ("concierge_budget", "orchestrator_budget", "action_budget", "max_rounds",
                     "max_dispatches"):
            v = getattr(self, name)
            if not isinstance(v, int) or isinstance(v, bool) or v < 1:
                raise ConfigError(f"TeamOptions.{name} must be an int >= 1, got {v!r}")
        if self.placement not in PLACEMENTS:
            raise ConfigError(f"TeamOptions.placement must be one of {list(PLACEMENTS)!r}, got "
                              f"{self.placement!r}")
        if self.language not in ("auto", "zh", "en"):
            raise ConfigError(f"TeamOptions.language must be 'auto', 'zh' or 'en', got "
                              f"{self.language!r}")
        if not self.actions or len(set(self.actions)) != len(self.actions):
            raise ConfigError(f"TeamOptions.actions must name distinct actions, got "
                              f"{self.actions!r}")

    def note_type(self, action: str) -> str:
        """The note type an action's output is stored as."""
        return self.note_types.get(action, action)


__all__ = ["ACTIONS", "ACTION_PROMPT", "CONCIERGE_PROMPT", "NOTE_TYPES", "ORCHESTRATOR_PROMPT",
           "TeamOptions"]
