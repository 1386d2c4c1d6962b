"""Errors raised by loomctx.

::

    LoomctxError                 base of everything loomctx raises on purpose
    ├── ConfigError              the caller's mistake: bad option, unknown model, bad input data
    │   └── InputError           a malformed input file or record (names the file and line)
    │       └── TooLargeError    an input over a size limit (names the limit and its option)
    ├── BudgetError              pinned (P0) content alone does not fit the budget
    ├── InvalidRequestError      a built request broke its provider's rules (never sent)
    ├── SourceError              a context source failed (reported, never fatal to a build)
    ├── StoreError               a memory store could not read or write
    ├── BusError                 an event bus could not accept or deliver (server unreachable)
    ├── ToolError                a tool failed in a way the model should read and may retry
    ├── ModelError               a model call failed after its retries
    │   ├── ContextLengthError   the provider says the input is too long
    │   ├── RateLimitError       still rate-limited when the retries ran out
    │   └── ModelResponseError   the provider's reply cannot be read
    └── MissingDependencyError   an optional extra is not installed (ImportError too)

Caller mistakes are apart from runtime failures so that an application can tell "fix your call"
from "retry or degrade".
"""

from __future__ import annotations


class LoomctxError(Exception):
    """Base class of every error loomctx raises on purpose."""


class ConfigError(LoomctxError, ValueError):
    """An option, a model name or an input value is wrong; the message says how to fix it."""


class InputError(ConfigError):
    """A malformed input record; ``where`` names the file and line when known."""

    def __init__(self, message: str, *, where: str | None = None) -> None:
        self.where = where
        super().__init__(f"{where}: {message}" if where else message)


class TooLargeError(InputError):
    """An input longer than a documented limit; ``size`` and ``limit`` are in the limit's unit,
    and the message names the option that raises it. The service answers it with a 413."""

    def __init__(self, message: str, *, size: int, limit: int, where: str | None = None) -> None:
        self.size = size
        self.limit = limit
        super().__init__(message, where=where)


class BudgetError(LoomctxError):
    """Pinned content cannot fit the budget.

    ``required`` is the token count of what must be included, ``available`` what the budget allows.
    """

    def __init__(self, message: str, *, required: int, available: int) -> None:
        self.required = required
        self.available = available
        super().__init__(message)


class InvalidRequestError(LoomctxError):
    """The rendered request broke its provider's structural rules, so it was not returned.

    ``problems`` lists each broken rule. The builder's own stages prevent this; the check is the
    last line of defence, so seeing it means a bug to report, not an input to fix.
    """

    def __init__(self, message: str, *, problems: list[str]) -> None:
        self.problems = problems
        super().__init__(message)


class SourceError(LoomctxError):
    """A context source failed or timed out; ``source`` names it.

    A build never raises it: a failed source degrades the build, and the report carries the
    error. A source may raise it itself to say "unavailable" as opposed to a bug.
    """

    def __init__(self, message: str, *, source: str) -> None:
        self.source = source
        super().__init__(message)


class StoreError(LoomctxError):
    """A memory store could not complete a read or a write."""


class BusError(LoomctxError):
    """An event bus could not accept an event (its server stayed unreachable through the
    retries) or could not deliver what it had accepted; the event was not silently dropped."""


class ToolError(LoomctxError):
    """A tool's own failure (a query the database refused): the agent gives the model
    ``error: <message>`` as the result and records the call as ``error``, not ``ok``."""


class ModelError(LoomctxError):
    """A call to a model failed after the client's retries; ``status`` is the HTTP status
    when there was one."""

    def __init__(self, message: str, *, status: int | None = None) -> None:
        self.status = status
        super().__init__(message)


class ContextLengthError(ModelError):
    """The provider refused the input as too long. ``limit`` is the context window it
    reported and ``requested`` the input size it counted, when its error said so."""

    def __init__(self, message: str, *, status: int | None = None, limit: int | None = None,
                 requested: int | None = None) -> None:
        self.limit = limit
        self.requested = requested
        super().__init__(message, status=status)


class RateLimitError(ModelError):
    """Still rate-limited (HTTP 429) when the retries ran out."""


class ModelResponseError(ModelError):
    """The provider answered with something that is not a readable reply."""


class MissingDependencyError(LoomctxError, ImportError):
    """A feature's package is missing; the message names the extra to install (or, for a
    package every install has, ``extra=None``, the package itself)."""

    def __init__(self, feature: str, extra: str | None, package: str) -> None:
        fix = (f"pip install 'loomctx[{extra}]'" if extra is not None else
               f"pip install {package} (loomctx depends on it: this install is incomplete)")
        super().__init__(f"{feature} needs the package {package!r}: install it with {fix}")
        self.extra = extra
        self.package = package


__all__ = [
    "BudgetError",
    "BusError",
    "ConfigError",
    "ContextLengthError",
    "InputError",
    "InvalidRequestError",
    "LoomctxError",
    "MissingDependencyError",
    "ModelError",
    "ModelResponseError",
    "RateLimitError",
    "SourceError",
    "StoreError",
    "TooLargeError",
    "ToolError",
]
