"""A runnable team over a workspace: the concierge, the orchestrator and the action agents.

:class:`Team` runs the three roles' loops, each model call being its role builder's budgeted
context (:mod:`loomctx.workspace`) plus the role's tools. The scripted offline campaign is in
:mod:`loomctx.workflow.demo` (not imported here: it loads the test doubles). Actions that need
the world get a lookup (:mod:`loomctx.workflow.world`); every model call is recorded
(:mod:`loomctx.workflow.record`) for ``loomctx workspace show --contexts``.
"""

from loomctx.workflow.calls import RoleCall, call_role
from loomctx.workflow.options import TeamOptions
from loomctx.workflow.team import Team, observe_think
from loomctx.workflow.world import Lookup, knowledge_lookup

__all__ = ["Lookup", "RoleCall", "Team", "TeamOptions", "call_role", "knowledge_lookup",
           "observe_think"]
