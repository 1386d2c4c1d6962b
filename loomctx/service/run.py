"""Running the service: in the foreground (``loomctx serve``) or on a background thread.

:func:`serve_in_thread` starts uvicorn on a loopback port in a daemon thread and returns once
it accepts connections — what tests, benchmarks and the README's example use to talk to a real
server over real HTTP.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import uvicorn

from loomctx.errors import ConfigError
from loomctx.service.app import create_app
from loomctx.service.guard import guarded
from loomctx.service.options import ServiceOptions


class RunningServer:
    """A service on a background thread; a context manager that stops it on exit."""

    def __init__(self, server: uvicorn.Server, thread: threading.Thread, app: Any) -> None:
        self._server, self._thread, self.app = server, thread, app

    @property
    def port(self) -> int:
        sockets = self._server.servers[0].sockets
        return int(sockets[0].getsockname()[1])

    @property
    def url(self) -> str:
        """``http://127.0.0.1:PORT``; OpenAI SDKs take ``url + "/v1"``, Anthropic's ``url``."""
        return f"http://127.0.0.1:{self.port}"

    def close(self) -> None:
        self._server.should_exit = True
        self._thread.join(timeout=10)

    def __enter__(self) -> RunningServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def serve_in_thread(options: ServiceOptions, *, port: int = 0, **app_kwargs: Any,
                    ) -> RunningServer:
    """Start the service on ``127.0.0.1:port`` (0: a free port) and wait until it is up."""
    app = create_app(options, **app_kwargs)
    config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning",
                            lifespan="on", access_log=False, http=guarded(options.edge),
                            timeout_keep_alive=options.edge.idle_timeout)  # type: ignore[arg-type]
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, name="loomctx-serve", daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            server.should_exit = True
            raise ConfigError(f"the service did not start on 127.0.0.1:{port}")
        time.sleep(0.01)
    return RunningServer(server, thread, app)


def serve(options: ServiceOptions, *, host: str = "127.0.0.1", port: int = 8080) -> None:
    """Run the service in the foreground until interrupted (the process is the service's:
    see :mod:`loomctx.service.heap`)."""
    uvicorn.run(create_app(options, own_process=True), host=host, port=port, log_level="info",
                http=guarded(options.edge),
                timeout_keep_alive=options.edge.idle_timeout)  # type: ignore[arg-type]


__all__ = ["RunningServer", "serve", "serve_in_thread"]
