"""loomctx."""
