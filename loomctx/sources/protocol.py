"""The :class:`ContextSource` contract: where candidate context comes from."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Protocol, runtime_checkable

from loomctx.errors import ConfigError
from loomctx.items import ContextItem
from loomctx.tokens.protocol import TokenCounter


@dataclass(frozen=True, kw_only=True)
class SourceRequest:
    """What a source is told about the build it contributes to (one request per source and
    build: what the source records on it belongs to that build alone)."""

    query: str
    """What to search for: the part of the current question / user input that carries its need
    (:func:`~loomctx.text.need.need_text`; may be empty, e.g. for small talk)."""
    now: float
    """Build time, epoch seconds (sources use it for recency, never ``time.time()``)."""
    counter: TokenCounter
    """The target model's counter, for sources that chunk or cut by tokens."""
    budget: int
    """Tokens allocated to this source (a hint: the packer enforces the real limit)."""
    total: int = 0
    """Tokens of the whole build (sources that rank candidates size their recall by it)."""
    phase: str | None = None
    """Task phase (early / middle / late) when the caller knows it."""
    context: dict[str, Any] = field(default_factory=dict)
    """Free-form request data (e.g. recent messages for query rewriting)."""
    message: str | None = None
    """The current user input as written, to be shown (None: the same as ``query``)."""
    _failures: dict[str, str] = field(default_factory=dict, init=False, repr=False,
                                      compare=False)

    def failed(self, part: str, error: BaseException | str) -> None:
        """Record that ``part`` of the source (one knowledge base of several, one backend)
        failed in this build while the source still answered with the rest; the report names
        it. A request made with :func:`dataclasses.replace` starts with none."""
        self._failures[part] = (error if isinstance(error, str)
                                else f"{type(error).__name__}: {error}")

    @property
    def failures(self) -> Mapping[str, str]:
        """Part → error, as recorded by :meth:`failed` (empty when every part worked)."""
        return MappingProxyType(self._failures)


@runtime_checkable
class ContextSource(Protocol):
    """Produces candidate items for one build.

    Contract:
    - ``name`` is unique within a builder and is the key of the source's budget allocation.
    - ``history`` is True only for a conversation's messages: the builder keeps them in
      chronological order, shows the newest as one contiguous tail (a turn's window) and never
      ranks them by score. Default False.
    - ``share`` is the fraction of every build's budget the source claims, in (0, 1]; None (the
      default) leaves it to the budget manager's ratio for ``name``. A builder reads it once,
      when it is made.
    - ``collect`` may return more than fits: the selector decides. It must not mutate items it
      returned in earlier builds (return fresh items or treat them as read-only). The builder
      scores and measures copies of them, unless the source says ``fresh`` (True: every call
      returns items made for that call alone, which nothing else holds): then the items
      themselves.
    - ``eager`` (default False) says that ``collect`` uses nothing bound to the task it runs
      in (``asyncio.timeout``, ``asyncio.current_task``, setting a context variable): what it
      waits on is threads (``asyncio.to_thread``) or tasks of its own. The builder then runs
      it in the build's own task up to its first wait, instead of starting a task for it: most
      sources answer from memory, and a task, its timer and a turn of the event loop per
      source were a tenth of a warm build. Only the class that defines ``collect`` can say so
      (a subclass that overrides it is not eager unless it says so too).
    - It may be slow or fail: the builder runs it under a timeout and reports the failure. A
      source that answers while a part of it failed records the part with
      ``request.failed(part, error)`` (:meth:`SourceRequest.failed`) and the report names it.
      The failure belongs to that build, not to the source object: two concurrent builds of
      one session never see each other's.

    :class:`BaseSource` holds the defaults, to inherit. A source written to the first form of
    this contract (``name`` and ``collect`` only) still works: :func:`is_history` and
    :func:`declared_share` read it with the defaults. It is no longer an ``isinstance`` of
    this runtime-checkable protocol, which asks for all four members; :func:`check_source` is
    the check the builder and ``Session.add_source`` make.
    """

    name: str

    @property
    def history(self) -> bool: ...

    @property
    def share(self) -> float | None: ...

    async def collect(self, request: SourceRequest) -> Sequence[ContextItem]: ...


class BaseSource:
    """The contract's defaults for a source to inherit: not history, no share of its own."""

    history: bool = False
    """True only for a conversation's messages (see :class:`ContextSource`)."""
    share: float | None = None
    """Budget ratio; None uses the budget manager's ratio for the source's name."""
    fresh: bool = False
    """True when every ``collect`` returns new items that nothing else holds: the builder
    scores them in place instead of copying each (see :class:`ContextSource`)."""
    eager: bool = False
    """True when ``collect`` needs no task of its own (see :class:`ContextSource`); read from
    the class that defines ``collect`` (:func:`starts_eager`)."""


def is_history(source: ContextSource) -> bool:
    """Whether the source is conversation history (kept in order, never ranked by score);
    False for a source that does not say."""
    return getattr(source, "history", False) is True


def makes_fresh(source: ContextSource) -> bool:
    """Whether the source's items are made for each build alone (``fresh``); False for a
    source that does not say."""
    return getattr(source, "fresh", False) is True


def starts_eager(source: ContextSource) -> bool:
    """Whether the builder may run ``source.collect`` in the build's own task until it first
    waits (``eager``): declared by the class that defines ``collect``, so an override of an
    eager source's ``collect`` is not eager unless it says so too."""
    for cls in type(source).__mro__:
        if "collect" in vars(cls):
            return vars(cls).get("eager", False) is True
    return False


def declared_share(source: ContextSource) -> float | None:
    """The budget ratio the source claims, or None (the default) when it claims none."""
    share = getattr(source, "share", None)
    return None if share is None else float(share)


def check_source(source: object) -> ContextSource:
    """``source`` when it keeps the contract's shape; a :class:`ConfigError` saying what to fix
    otherwise (a builder checks each source once, when it is made)."""
    name = getattr(source, "name", None)
    if not isinstance(name, str) or not name:
        raise ConfigError(f"{source!r:.80} is not a ContextSource: give it a non-empty str "
                          f"name (got {name!r}) and an async collect(request)")
    if not callable(getattr(source, "collect", None)):
        raise ConfigError(f"source {name!r} is not a ContextSource: give it an async "
                          "collect(request) returning its items")
    history = getattr(source, "history", False)
    if not isinstance(history, bool):
        raise ConfigError(f"source {name!r} has history={history!r}: it must be True (a "
                          "conversation's messages) or False")
    share = getattr(source, "share", None)
    if share is not None and (isinstance(share, bool) or not isinstance(share, int | float)
                              or not 0 < share <= 1):
        raise ConfigError(f"source {name!r} has share={share!r}: it must be a fraction of the "
                          "budget in (0, 1], or None to use the budget manager's ratio")
    return source  # type: ignore[return-value]


__all__ = ["BaseSource", "ContextSource", "SourceRequest", "check_source", "declared_share",
           "is_history", "makes_fresh", "starts_eager"]
