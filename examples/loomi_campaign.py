"""A concierge, an orchestrator and action agents plan a short campaign over a workspace of
notes — offline, with scripted models standing in for real ones.

Each model call is its role's context (concierge: the chat and note previews; orchestrator: the
command quota, the material status and the timeline; action: the instruction with its @refs in
full) within the role's budget. The script prints each call's size and the notes made.

Run: python examples/loomi_campaign.py
"""

from loomctx import check_request
from loomctx.workflow.demo import run_campaign

campaign = run_campaign()
team = campaign.team

for call in team.calls:
    assert check_request("openai", call.payload) == []
    assert call.tokens <= call.budget
    who = call.role if call.action is None else f"{call.role} {call.action}"
    print(f"{who:<20} {call.tokens:>5} / {call.budget} tokens")

print()
for note in team.workspace:
    print(f"@{note.id:<11} {' '.join(note.content.split())[:70]}")

hitpoint_request = "\n".join(m["content"] for m in campaign.action.requests[2]["messages"])
assert "@persona1:" in hitpoint_request and "@material1:" in hitpoint_request
print(f"\nloomi: {team.conversation.history[-1].content}")
