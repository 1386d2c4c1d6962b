"""Configuration of the role builders: note-type sets, preview lengths, labels, model settings.

Each is one frozen value whose defaults are those of the role-builder design this package
follows (docs/seed-differences.md), so an application with other note types or other actions
changes configuration, not code.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from loomctx.errors import ConfigError


@dataclass(frozen=True, kw_only=True)
class NoteTypes:
    """Which note types and action names play which part."""

    materials: frozenset[str] = frozenset(
        {"websearch", "knowledge", "persona", "resonant", "brand", "content", "material"})
    """Raw material note types: what hitpoint and writing actions draw on."""
    hitpoints: frozenset[str] = frozenset({"hitpoint"})
    """Hitpoint note types (the angles a writing is built on)."""
    writings: frozenset[str] = frozenset({"xhs", "wechat", "tiktok"})
    """Finished-writing note types."""
    flattened: frozenset[str] = frozenset(
        {"hitpoint", "xhs", "wechat", "tiktok", "websearch", "knowledge", "persona", "resonant",
         "brand", "content"})
    """Types whose concierge preview has newlines folded to spaces (others are cut raw)."""
    no_background_actions: frozenset[str] = frozenset({"websearch", "knowledge", "resonant"})
    """Actions that get no task background (they search or recall; the brief would mislead)."""
    writing_actions: tuple[str, ...] = ("xhs_post", "wechat_article", "tiktok_script", "hitpoint")
    """Actions that also get every ``material`` note expanded."""
    hitpoint_actions: frozenset[str] = frozenset({"hitpoint"})
    """Actions whose refs to materials mark those materials as used."""
    auto_material_type: str = "material"
    """The note type writing actions receive without being asked for it."""

    def classify(self, note_type: str) -> str | None:
        """``"material"``, ``"hitpoint"``, ``"writing"`` or None for a note type."""
        if note_type in self.materials:
            return "material"
        if note_type in self.hitpoints:
            return "hitpoint"
        if note_type in self.writings:
            return "writing"
        return None


@dataclass(frozen=True, kw_only=True)
class Previews:
    """Character lengths of the previews: the lengths tried first, before the budget."""

    concierge_round: int = 80
    """Observe/think preview per round in the concierge's timeline."""
    concierge_note: int = 50
    """Preview of every note in the concierge's context."""
    orchestrator_note: int = 100
    """Preview of each created note after its action in the orchestrator's timeline."""
    min_chars: int = 12
    """Shortest preview the budget may shrink a preview to before the item is dropped."""
    chat_limit: int = 100
    """Chat pairs the concierge sees (the most recent ones)."""

    def __post_init__(self) -> None:
        for name in ("concierge_round", "concierge_note", "orchestrator_note", "min_chars",
                     "chat_limit"):
            v = getattr(self, name)
            if not isinstance(v, int) or isinstance(v, bool) or v < 1:
                raise ConfigError(f"Previews.{name} must be an int >= 1, got {v!r}")


@dataclass(frozen=True, kw_only=True)
class Quota:
    """The orchestrator's command quota: ``base`` plus ``per_feedback`` per later call."""

    base: int = 12
    """Commands of the first orchestrator call."""
    per_feedback: int = 3
    """Commands added for each orchestrator call after the first (user feedback)."""

    def max_commands(self, calls: int) -> int:
        return self.base + max(0, calls - 1) * self.per_feedback


@dataclass(frozen=True, kw_only=True)
class ModelSettings:
    """How one role or action calls its model."""

    temperature: float
    """Sampling temperature."""
    max_output_tokens: int
    """Cap on the reply."""
    thinking_budget: int | None = None
    """Reasoning tokens allowed (None: no thinking)."""


CONCIERGE_MODEL = ModelSettings(temperature=0.4, max_output_tokens=4000)
ORCHESTRATOR_MODEL = ModelSettings(temperature=0.5, max_output_tokens=4000)


@dataclass(frozen=True, kw_only=True)
class ActionModels:
    """Per-action model settings (three groups of actions), with per-action overrides."""

    knowledge: ModelSettings = ModelSettings(temperature=0.3, max_output_tokens=8000)
    """The ``knowledge`` action: recall, kept cold."""
    writing: ModelSettings = ModelSettings(temperature=0.6, max_output_tokens=8000,
                                           thinking_budget=1200)
    """Writing actions (``NoteTypes.writing_actions``): warmer, with room to think."""
    default: ModelSettings = ModelSettings(temperature=0.4, max_output_tokens=8000,
                                           thinking_budget=500)
    """Every other action."""
    overrides: Mapping[str, ModelSettings] = field(default_factory=dict)
    """Settings for named actions, ahead of the groups."""

    def for_action(self, action: str, types: NoteTypes | None = None) -> ModelSettings:
        if action in self.overrides:
            return self.overrides[action]
        if action == "knowledge":
            return self.knowledge
        if action in (types or NoteTypes()).writing_actions:
            return self.writing
        return self.default


@dataclass(frozen=True, kw_only=True)
class Labels:
    """The fixed words of the role contexts (Chinese by default; ``english()``)."""

    user: str = "**用户**"
    assistant: str = "Loomi（你）"
    new_message: str = "（新消息）"
    user_message: str = "用户消息"
    observe: str = "🔍 观察"
    think: str = "💭 思考"
    produced: str = "产出"
    quota: str = "🎯 命令执行状态: 已执行 {executed}/{max} 条命令，剩余 {remaining} 条"
    background: str = "[写作任务背景]（注意这是背景，并非你的任务）"
    supplement: str = "补充"
    instruction: str = "[任务指令]"
    references: str = "[参考资料]"
    missing_ref: str = "[未找到或不可引用]"
    materials: str = "原材料库"
    hitpoints: str = "hitpoint库"
    writings: str = "写作内容库"
    used: str = "已使用"
    unused: str = "未使用"
    chat: str = "[聊天历史]"
    timeline: str = "[Orchestrator时间线]"
    notes: str = "[已创建的Notes]"
    tactics: str = "[tactics]"
    running: str = "[Orchestrator运行中] 正在执行: {task}（已执行 {executed} 条命令）"
    finished: str = "[Orchestrator已完成] 请告诉用户产出了什么:"
    results: str = "[检索结果]"

    @classmethod
    def english(cls) -> Labels:
        return cls(user="**User**", assistant="Loomi (you)", new_message="(new message)",
                   user_message="User message", observe="🔍 Observe", think="💭 Think",
                   produced="Produced",
                   quota="🎯 Commands: executed {executed}/{max}, remaining {remaining}",
                   background="[Task background] (context only, not your task)",
                   supplement="Supplement", instruction="[Instruction]",
                   references="[References]", missing_ref="[not found or not referenceable]",
                   materials="Materials", hitpoints="Hitpoints", writings="Writings",
                   used="used", unused="unused", chat="[Chat history]",
                   timeline="[Orchestrator timeline]", notes="[Notes created]",
                   tactics="[Tactics]",
                   running="[Orchestrator running] working on: {task} ({executed} commands "
                           "executed so far)",
                   finished="[Orchestrator finished] tell the user what was made:",
                   results="[Search results]")

    @classmethod
    def for_text(cls, *texts: str) -> Labels:
        """The Chinese labels for mostly-Chinese ``texts``, English ones otherwise."""
        return cls() if language_of(*texts) == "zh" else cls.english()


_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_LATIN_WORD = re.compile(r"[A-Za-z]{2,}")


def language_of(*texts: str) -> str:
    """``"zh"`` when the texts hold at least as many CJK characters as Latin words, else
    ``"en"`` (a Chinese character carries about a word; labels follow the prompts' language)."""
    joined = "\n".join(texts)
    cjk = len(_CJK.findall(joined))
    return "zh" if cjk and cjk >= len(_LATIN_WORD.findall(joined)) else "en"


@dataclass(frozen=True, kw_only=True)
class RoleOptions:
    """Everything the three role builders are configured by."""

    types: NoteTypes = NoteTypes()
    """The note-type and action sets."""
    previews: Previews = Previews()
    """Preview lengths tried first."""
    quota: Quota = Quota()
    """The orchestrator's command quota."""
    labels: Labels = Labels()
    """Fixed words of the contexts."""
    actions: ActionModels = ActionModels()
    """Per-action model settings."""


__all__ = ["CONCIERGE_MODEL", "ORCHESTRATOR_MODEL", "ActionModels", "Labels", "ModelSettings",
           "NoteTypes", "Previews", "Quota", "RoleOptions", "language_of"]
