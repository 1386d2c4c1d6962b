"""A runnable team over a workspace: the concierge, the orchestrator and the action agents.

:class:`Team` runs the seed's three loops, each model call being its role builder's budgeted
context (:mod:`loomctx.workspace`) plus the role's tools; :func:`run_campaign` runs a scripted
campaign offline.
"""

from loomctx.workflow.calls import RoleCall, call_role
from loomctx.workflow.demo import Campaign, campaign, run_campaign
from loomctx.workflow.options import TeamOptions
from loomctx.workflow.team import Team, observe_think

__all__ = ["Campaign", "RoleCall", "Team", "TeamOptions", "call_role", "campaign",
           "observe_think", "run_campaign"]
