"""Test helpers that ship with loomctx so users can test their agents offline."""
