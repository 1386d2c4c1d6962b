"""loomctx: build the context window for every LLM call an agent makes.

One exact token budget over every source (system prompt, input, history, tools, skills, memory,
knowledge), the Gather → Select → Compress → Structure pipeline, tiered memory, and a report of
every candidate item: in or out, why, its tokens and score.

Importing ``loomctx`` loads :mod:`loomctx.errors` and nothing else; every other public name is
imported the first time it is used (``loomctx.ContextBuilder``, ``from loomctx import Session``).
So ``import loomctx.errors`` and ``loomctx --help`` stay quick, a build loads what a build needs
(the builder, the tokenizers, numpy) and an agent, the embedders' ONNX runtime, httpx and the
service load only for code that uses them.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from loomctx.errors import (
    BudgetError,
    BusError,
    ConfigError,
    ContextLengthError,
    InputError,
    InvalidRequestError,
    LoomctxError,
    MissingDependencyError,
    ModelError,
    ModelResponseError,
    RateLimitError,
    SourceError,
    StoreError,
    TooLargeError,
    ToolError,
)

if TYPE_CHECKING:
    from loomctx.agent import (
        Agent,
        AgentLimits,
        AgentResult,
        Tool,
        ToolOutcome,
        ToolRegistry,
        TurnRecord,
        tool_schema,
    )
    from loomctx.assembler import ComponentPriority, ContextAssembler
    from loomctx.budget.manager import (
        DEFAULT_RATIOS,
        AdaptiveBudgetManager,
        Allocation,
        BudgetManager,
        Limit,
    )
    from loomctx.builder import BuildOptions, BuildResult, ContextBuilder
    from loomctx.bus import BusOptions, Envelope, EventBus, InProcessEventBus
    from loomctx.compress.summarize import ExtractiveSummarizer, Summarizer
    from loomctx.controller import ContextController, Task, TaskStatus
    from loomctx.embed import (
        CachedEmbedder,
        Embedder,
        HashingEmbedder,
        JointEmbedder,
        MiniLMEmbedder,
        UniversalSentenceEncoder,
        default_embedder,
    )
    from loomctx.events import (
        BuildCompleted,
        ContextRebuilt,
        Event,
        EventSink,
        MessageAdded,
        ModelCalled,
        NullSink,
        RecordingSink,
        SessionEnded,
        TierMoved,
        ToolFinished,
        ToolStarted,
        TurnStarted,
    )
    from loomctx.items import ContextItem, Tier
    from loomctx.memory.importance import HeuristicImportance, ImportanceScorer
    from loomctx.memory.tiers import MemoryOptions, TieredMemory
    from loomctx.models.anthropic import AnthropicChatModel
    from loomctx.models.openai import OpenAIChatModel
    from loomctx.models.protocol import ChatModel, ModelResponse, StreamEvent, Usage
    from loomctx.render.protocol import Layout, Rendered, Renderer
    from loomctx.render.registry import formats, register_format
    from loomctx.render.validate import check as check_request
    from loomctx.report import BuildReport, ItemReport, SourceReport
    from loomctx.retrieval.dynamic import (
        ContextRetriever,
        DynamicContextSource,
        DynamicOptions,
        RetrievedDocument,
    )
    from loomctx.retrieval.inherited import InheritedSource
    from loomctx.retrieval.pool import SharedPool, SharedPoolSource
    from loomctx.retrieval.reranker import RerankWeights, UnifiedReranker
    from loomctx.retrieval.rewriter import QueryRewriter
    from loomctx.retrieval.source import L2ImportantSource, UnifiedRetrievalSource
    from loomctx.retrieval.task import TaskContextSource
    from loomctx.select.scoring import SelectOptions
    from loomctx.session import Session, SessionState
    from loomctx.sources.agent_output import AgentOutput, AgentOutputSource
    from loomctx.sources.function import FunctionSource
    from loomctx.sources.history import HistorySource
    from loomctx.sources.knowledge import Document, KnowledgeSource
    from loomctx.sources.protocol import BaseSource, ContextSource, SourceRequest
    from loomctx.sources.skills import Skill, SkillSource
    from loomctx.sources.static import SystemPromptSource, UserInputSource
    from loomctx.sources.tools import ToolSource
    from loomctx.stores import Hit, InMemoryStore, MemoryRecord, MemoryStore, Scope, SQLiteStore
    from loomctx.tokens import (
        BPECounter,
        CachedCounter,
        ChatCounter,
        EstimatingCounter,
        HFTokenizerCounter,
        ModelTokenizer,
        TokenCounter,
        counter_for_model,
    )
    from loomctx.workflow import Team, TeamOptions
    from loomctx.workspace import (
        ConversationManager,
        Note,
        RoleOptions,
        WorkSpace,
        build_action_context,
        build_concierge_context,
        build_orchestrator_context,
    )

__version__ = "0.1.0"

_EXPORTS: dict[str, tuple[str, ...]] = {
    "loomctx.agent": (
        "Agent", "AgentLimits", "AgentResult", "Tool", "ToolOutcome", "ToolRegistry",
        "TurnRecord", "tool_schema",
    ),
    "loomctx.assembler": ("ComponentPriority", "ContextAssembler"),
    "loomctx.budget.manager": (
        "DEFAULT_RATIOS", "AdaptiveBudgetManager", "Allocation", "BudgetManager", "Limit",
    ),
    "loomctx.builder": ("BuildOptions", "BuildResult", "ContextBuilder"),
    "loomctx.bus": ("BusOptions", "Envelope", "EventBus", "InProcessEventBus"),
    "loomctx.compress.summarize": ("ExtractiveSummarizer", "Summarizer"),
    "loomctx.controller": ("ContextController", "Task", "TaskStatus"),
    "loomctx.embed": (
        "CachedEmbedder", "Embedder", "HashingEmbedder", "JointEmbedder", "MiniLMEmbedder",
        "UniversalSentenceEncoder", "default_embedder",
    ),
    "loomctx.events": (
        "BuildCompleted", "ContextRebuilt", "Event", "EventSink", "MessageAdded",
        "ModelCalled", "NullSink", "RecordingSink", "SessionEnded", "TierMoved",
        "ToolFinished", "ToolStarted", "TurnStarted",
    ),
    "loomctx.items": ("ContextItem", "Tier"),
    "loomctx.memory.importance": ("HeuristicImportance", "ImportanceScorer"),
    "loomctx.memory.tiers": ("MemoryOptions", "TieredMemory"),
    "loomctx.models.anthropic": ("AnthropicChatModel",),
    "loomctx.models.openai": ("OpenAIChatModel",),
    "loomctx.models.protocol": ("ChatModel", "ModelResponse", "StreamEvent", "Usage"),
    "loomctx.render.protocol": ("Layout", "Rendered", "Renderer"),
    "loomctx.render.registry": ("formats", "register_format"),
    "loomctx.report": ("BuildReport", "ItemReport", "SourceReport"),
    "loomctx.retrieval.dynamic": (
        "ContextRetriever", "DynamicContextSource", "DynamicOptions", "RetrievedDocument",
    ),
    "loomctx.retrieval.reranker": ("RerankWeights", "UnifiedReranker"),
    "loomctx.retrieval.rewriter": ("QueryRewriter",),
    "loomctx.retrieval.source": ("L2ImportantSource", "UnifiedRetrievalSource"),
    "loomctx.retrieval.task": ("TaskContextSource",),
    "loomctx.retrieval.inherited": ("InheritedSource",),
    "loomctx.retrieval.pool": ("SharedPool", "SharedPoolSource"),
    "loomctx.select.scoring": ("SelectOptions",),
    "loomctx.session": ("Session", "SessionState"),
    "loomctx.sources.agent_output": ("AgentOutput", "AgentOutputSource"),
    "loomctx.sources.function": ("FunctionSource",),
    "loomctx.sources.history": ("HistorySource",),
    "loomctx.sources.knowledge": ("Document", "KnowledgeSource"),
    "loomctx.sources.protocol": ("BaseSource", "ContextSource", "SourceRequest"),
    "loomctx.sources.skills": ("Skill", "SkillSource"),
    "loomctx.sources.static": ("SystemPromptSource", "UserInputSource"),
    "loomctx.sources.tools": ("ToolSource",),
    "loomctx.stores": (
        "Hit", "InMemoryStore", "MemoryRecord", "MemoryStore", "Scope", "SQLiteStore",
    ),
    "loomctx.tokens": (
        "BPECounter", "CachedCounter", "ChatCounter", "EstimatingCounter",
        "HFTokenizerCounter", "ModelTokenizer", "TokenCounter", "counter_for_model",
    ),
    "loomctx.workflow": ("Team", "TeamOptions"),
    "loomctx.workspace": (
        "ConversationManager", "Note", "RoleOptions", "WorkSpace", "build_action_context",
        "build_concierge_context", "build_orchestrator_context",
    ),
}
"""Module → the public names it defines, imported on first use."""

_RENAMED: dict[str, tuple[str, str]] = {"check_request": ("loomctx.render.validate", "check")}
"""Public name → (module, the name it has there)."""

_WHERE: dict[str, tuple[str, str]] = {
    **{name: (module, name) for module, names in _EXPORTS.items() for name in names},
    **_RENAMED,
}


def __getattr__(name: str) -> Any:
    """Import a public name on first use and keep it (PEP 562)."""
    try:
        module, attr = _WHERE[name]
    except KeyError:
        raise AttributeError(f"module 'loomctx' has no attribute {name!r}") from None
    value = getattr(importlib.import_module(module), attr)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


__all__ = [
    "AdaptiveBudgetManager",
    "Agent",
    "AgentLimits",
    "AgentOutput",
    "AgentOutputSource",
    "AgentResult",
    "Allocation",
    "AnthropicChatModel",
    "BPECounter",
    "BaseSource",
    "BudgetError",
    "BudgetManager",
    "BuildCompleted",
    "BuildOptions",
    "BuildReport",
    "BuildResult",
    "BusError",
    "BusOptions",
    "CachedCounter",
    "CachedEmbedder",
    "ChatCounter",
    "ChatModel",
    "ComponentPriority",
    "ConfigError",
    "ContextAssembler",
    "ContextBuilder",
    "ContextController",
    "ContextItem",
    "ContextLengthError",
    "ContextRebuilt",
    "ContextRetriever",
    "ContextSource",
    "ConversationManager",
    "DEFAULT_RATIOS",
    "Document",
    "DynamicContextSource",
    "DynamicOptions",
    "Embedder",
    "Envelope",
    "EstimatingCounter",
    "Event",
    "EventBus",
    "EventSink",
    "ExtractiveSummarizer",
    "FunctionSource",
    "HFTokenizerCounter",
    "HashingEmbedder",
    "HeuristicImportance",
    "HistorySource",
    "Hit",
    "ImportanceScorer",
    "InMemoryStore",
    "InProcessEventBus",
    "InheritedSource",
    "InputError",
    "InvalidRequestError",
    "ItemReport",
    "JointEmbedder",
    "KnowledgeSource",
    "L2ImportantSource",
    "Layout",
    "Limit",
    "LoomctxError",
    "MemoryOptions",
    "MemoryRecord",
    "MemoryStore",
    "MessageAdded",
    "MiniLMEmbedder",
    "MissingDependencyError",
    "ModelCalled",
    "ModelError",
    "ModelResponse",
    "ModelResponseError",
    "ModelTokenizer",
    "Note",
    "NullSink",
    "OpenAIChatModel",
    "QueryRewriter",
    "RateLimitError",
    "RecordingSink",
    "Rendered",
    "Renderer",
    "RerankWeights",
    "RetrievedDocument",
    "RoleOptions",
    "SQLiteStore",
    "Scope",
    "SelectOptions",
    "Session",
    "SessionEnded",
    "SessionState",
    "SharedPool",
    "SharedPoolSource",
    "Skill",
    "SkillSource",
    "SourceError",
    "SourceReport",
    "SourceRequest",
    "StoreError",
    "StreamEvent",
    "Summarizer",
    "SystemPromptSource",
    "Task",
    "TaskContextSource",
    "TaskStatus",
    "Team",
    "TeamOptions",
    "Tier",
    "TierMoved",
    "TieredMemory",
    "TokenCounter",
    "TooLargeError",
    "Tool",
    "ToolError",
    "ToolFinished",
    "ToolOutcome",
    "ToolRegistry",
    "ToolSource",
    "ToolStarted",
    "TurnRecord",
    "TurnStarted",
    "UnifiedReranker",
    "UnifiedRetrievalSource",
    "UniversalSentenceEncoder",
    "Usage",
    "UserInputSource",
    "WorkSpace",
    "__version__",
    "build_action_context",
    "build_concierge_context",
    "build_orchestrator_context",
    "check_request",
    "counter_for_model",
    "default_embedder",
    "formats",
    "register_format",
    "tool_schema",
]
