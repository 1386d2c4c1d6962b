"""The event bus: session events carried to consumer groups, in process or across processes.

``protocol.py`` is the contract (:class:`EventBus`), ``codec.py`` the wire form of an event,
``inprocess.py`` the embedded asyncio backend, ``redis.py`` the Redis Streams backend (the
``redis`` extra; import it from ``loomctx.bus.redis``), ``config.py`` a bus from a URL.
"""

from loomctx.bus.codec import decode, encode, new_event_id
from loomctx.bus.config import open_bus
from loomctx.bus.inprocess import BusOptions, InProcessEventBus
from loomctx.bus.protocol import DeadLetter, Envelope, EventBus, Handler

__all__ = ["BusOptions", "DeadLetter", "Envelope", "EventBus", "Handler", "InProcessEventBus",
           "decode", "encode", "new_event_id", "open_bus"]
