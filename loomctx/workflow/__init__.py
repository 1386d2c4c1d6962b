"""A runnable team over a workspace: the concierge, the orchestrator and the action agents.

:class:`Team` runs the seed's three loops, each model call being its role builder's budgeted
context (:mod:`loomctx.workspace`) plus the role's tools. The scripted offline campaign is in
:mod:`loomctx.workflow.demo` (not imported here: it loads the test doubles).
"""

from loomctx.workflow.calls import RoleCall, call_role
from loomctx.workflow.options import TeamOptions
from loomctx.workflow.team import Team, observe_think

__all__ = ["RoleCall", "Team", "TeamOptions", "call_role", "observe_think"]
