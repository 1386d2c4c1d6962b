"""Tool definitions as the model sees them, re-exported from :mod:`loomctx.providers._schema`
(each provider's counting rules render them its own way)."""

from loomctx.providers._schema import (
    NAMESPACE_FOOTER,
    NAMESPACE_HEADER,
    as_function,
    render_json,
    render_typescript,
)

__all__ = ["NAMESPACE_FOOTER", "NAMESPACE_HEADER", "as_function", "render_json",
           "render_typescript"]
