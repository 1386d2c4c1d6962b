"""loomctx as a service: the context proxy and the HTTP API (``pip install 'loomctx[service]'``).

Nothing in the core imports this package: it needs FastAPI and uvicorn, which the library does
not. ``loomctx serve --upstream URL`` runs it; :func:`serve_in_thread` runs it in a test.
"""

from loomctx.service.app import create_app
from loomctx.service.conversations import BuildRecord
from loomctx.service.core import Service
from loomctx.service.options import ServiceOptions
from loomctx.service.pages import Pages, TablePages
from loomctx.service.run import RunningServer, serve, serve_in_thread
from loomctx.service.tenants import KeyFile, load_keys

__all__ = ["BuildRecord", "KeyFile", "Pages", "RunningServer", "Service", "ServiceOptions",
           "TablePages", "create_app", "load_keys", "serve", "serve_in_thread"]
