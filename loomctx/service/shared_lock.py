"""A session's lock across ``loomctx serve`` processes (see :mod:`loomctx.service.shared`)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Literal

from loomctx.service.conversations import Conversation
from loomctx.service.lock_lines import Held
from loomctx.service.shared import SharedSessions

log = logging.getLogger("loomctx.service")


class SharedLock(asyncio.Lock):
    """A session's lock across processes: this process's lock, then the advisory lock.

    Taking it increments the session's version and, when another process changed the session
    since this one loaded it, calls ``reload`` first; releasing it calls ``flush`` (what the
    holder changed goes to the session's row and builds) and then frees the advisory lock, so
    the next holder, here or elsewhere, sees it all. ``release`` is synchronous as
    :class:`asyncio.Lock`'s is: the rest runs in a task, and the lock stays held until it is
    done."""

    def __init__(self, shared: SharedSessions, tenant: str, conv: Conversation,
                 reload: Callable[[str, Conversation], Awaitable[None]],
                 flush: Callable[[str, Conversation, int, Held], Awaitable[None]]) -> None:
        super().__init__()
        self.shared, self.tenant, self.conv = shared, tenant, conv
        self._reload, self._flush = reload, flush
        self._held: Held | None = None
        self._since = 0
        self._tasks: set[asyncio.Task[None]] = set()

    @property
    def held(self) -> Held | None:
        """The session's lock in PostgreSQL, while this process holds it."""
        return self._held

    async def acquire(self) -> Literal[True]:
        await super().acquire()
        conv, sid = self.conv, self.conv.session.id
        try:
            self._held, version = await self.shared.lock_and_bump(self.tenant, sid)
            try:
                if version is not None and version - 1 != conv.version:
                    await self._reload(self.tenant, conv)
                conv.version = version if version is not None else 1
            except BaseException:
                held, self._held = self._held, None
                await asyncio.shield(self.shared.unlock(held))
                raise
        except BaseException:
            super().release()
            raise
        self._since = len(conv.builds)
        return True

    def release(self) -> None:
        held, self._held = self._held, None
        if held is None:  # never taken in the database (it failed): only the local part
            super().release()
            return
        task = asyncio.get_running_loop().create_task(self._release(held))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _release(self, held: Held) -> None:
        try:
            await self._flush(self.tenant, self.conv, self._since, held)
        except Exception as exc:  # the next holder reloads from the store: logged, not lost
            self.conv.version = -1  # this process's holder too
            log.warning("session %s: saving its state failed: %s", self.conv.session.id, exc)
        finally:
            try:
                await self.shared.unlock(held)
            finally:
                super().release()


__all__ = ["SharedLock"]
