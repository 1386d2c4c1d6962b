"""The agent runtime: a loop that rebuilds the context before every model call.

- :class:`Agent` (``loop.py``): build → call the model → run the tools it asked for → add the
  results → build again, until a final answer or a limit; async ``run`` and ``run_sync``.
- :class:`AgentLimits` (``limits.py``): turns, tool calls, tokens spent, wall time.
- :class:`AgentResult`, :class:`TurnRecord` (``result.py``): what a run did, usage per call.
- :func:`tool_schema`, :class:`Tool` (``tools.py``) and :class:`ToolRegistry`
  (``registry.py``): plain Python functions as tools, run concurrently under timeouts.
- :func:`infer_phase` (``phases.py``): the task phase each build is given (early / middle /
  late), which shifts an adaptive budget's shares.
- :func:`recall_tool` (``recall.py``): the ``recall`` tool, the agent's own search of its
  memory (``Agent(recall_tool=True)``).
"""

from loomctx.agent.limits import AgentLimits, StopReason
from loomctx.agent.loop import STEP_DOWN, Agent
from loomctx.agent.phases import infer_phase
from loomctx.agent.recall import RECALL_TOOL, recall_tool
from loomctx.agent.registry import ToolOutcome, ToolRegistry
from loomctx.agent.result import AgentResult, TurnRecord
from loomctx.agent.tools import Tool, parse_docstring, tool_schema

__all__ = ["RECALL_TOOL", "STEP_DOWN", "Agent", "AgentLimits", "AgentResult", "StopReason",
           "Tool", "ToolOutcome", "ToolRegistry", "TurnRecord", "infer_phase", "parse_docstring",
           "recall_tool", "tool_schema"]
