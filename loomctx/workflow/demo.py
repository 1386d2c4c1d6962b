"""The offline campaign: a scripted team that plans and writes a short social-media campaign.

A user attaches a brand brief (a ``material`` note) and asks for a campaign. The concierge
hands the task over and says so (:data:`ACK`); the orchestrator runs a search and a persona
action (round 1), a hitpoint action that ``@refs`` their notes (round 2), an ``xhs_post``
writing action that ``@refs`` the hitpoint (round 3), then answers, and the concierge tells the
user what was made (:data:`REPLY`). Every model is a
:class:`~loomctx.models.scripted.ScriptedModel`, so it runs with no network and each role's
requests can be read back from its model.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from loomctx.models.scripted import ScriptedModel
from loomctx.stores import MemoryStore, Scope
from loomctx.workflow.options import TeamOptions
from loomctx.workflow.team import Team

BRIEF = ("Brand: Driftwood Tea. Product: a cold-brew oolong in a glass bottle.\n"
         "Tone: calm, outdoorsy. Avoid health claims.")
ASK = "Plan a short campaign for our new cold-brew oolong: one Xiaohongshu post to start."
TASK = ("Short campaign for Driftwood Tea's cold-brew oolong (brand brief @material1): research "
        "the market, define the audience, find hitpoints, write one Xiaohongshu post.")
SEARCH = ("Cold-brew tea searches rose through the summer.\nReaders save posts about "
          "picnic drinks and low-sugar bottles; glass bottles read as premium.")
PERSONA = ("Weekend hiker, 25-32, city office job.\nPacks light, photographs views, "
           "avoids sugary drinks, trusts friends' saves over ads.")
HITPOINT = ("Hitpoint: 'the quiet bottle at the top of the trail'. Calm summit moment, "
            "glass bottle in the frame, no sugar to weigh you down (@websearch1, @persona1).")
POST = ("Title: The quiet bottle at the top of the trail\n"
        "Body: Three hours up, one cold oolong in glass, nothing sweet, just the view...")
ACK = "On it: the orchestrator is planning the campaign; I will tell you what it makes."
REPLY = ("The campaign's first post is ready: @xhs1, built on the hitpoint @hitpoint1 from "
         "the market search @websearch1 and the audience @persona1.")


def _calls(*calls: tuple[str, str], content: str) -> dict[str, Any]:
    """An assistant message with text and tool calls (``instruction`` the argument)."""
    return {"content": content, "tool_calls": [
        {"id": f"call_{name}", "type": "function",
         "function": {"name": name, "arguments": json.dumps({"instruction": text})}}
        for name, text in calls]}


@dataclass
class Campaign:
    """The scripted team and its three models (read each one's ``requests``)."""

    team: Team
    concierge: ScriptedModel
    orchestrator: ScriptedModel
    action: ScriptedModel


def campaign(options: TeamOptions | None = None) -> Campaign:
    """A team whose models replay the campaign script."""
    concierge = ScriptedModel([
        {"content": None, "tool_calls": [{"id": "call_task", "type": "function", "function": {
            "name": "dispatch_task", "arguments": json.dumps({"task": TASK})}}]},
        ACK, REPLY])
    orchestrator = ScriptedModel([
        _calls(("websearch", "Search what people post about cold-brew tea this summer."),
               ("persona", "Describe the audience for @material1's cold-brew oolong."),
               content="Observe: a brand brief @material1, nothing else yet.\n"
                       "Think: first the market and the audience."),
        _calls(("hitpoint", "Find the hitpoint from @websearch1 and @persona1."),
               content="Observe: @websearch1 and @persona1 are in.\n"
                       "Think: turn them into one hitpoint."),
        _calls(("xhs_post", "Write one Xiaohongshu post from @hitpoint1."),
               content="Observe: @hitpoint1 is strong.\nThink: write the post from it."),
        "Done: @xhs1 from @hitpoint1."])
    action = ScriptedModel([SEARCH, PERSONA, HITPOINT, POST])
    team = Team(concierge=concierge, orchestrator=orchestrator, action=action, options=options)
    return Campaign(team=team, concierge=concierge, orchestrator=orchestrator, action=action)


def run_campaign(store: MemoryStore | None = None, scope: Scope | None = None,
                 options: TeamOptions | None = None) -> Campaign:
    """Run the campaign offline; with ``store`` and ``scope``, save the workspace there."""
    c = campaign(options)
    c.team.chat_sync(ASK, attachments=[BRIEF])
    if store is not None:
        c.team.save(store, scope or Scope(agent="loomi", session="demo"))
    return c


__all__ = ["ACK", "ASK", "BRIEF", "TASK", "Campaign", "campaign", "run_campaign"]
