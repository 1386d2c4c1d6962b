"""Where per-turn context goes in an OpenAI-shaped conversation: re-exported from
:mod:`loomctx.providers.placement`, where the modes are described."""

from loomctx.providers.placement import CONTINUES, JOIN, PLACEMENTS, Placement, place

__all__ = ["CONTINUES", "JOIN", "PLACEMENTS", "Placement", "place"]
