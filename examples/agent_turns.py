"""The turn loop of an agent: add the user's message, build, call the model, add its reply and
tool results, build again — with a scripted model standing in for a real one.

Every request is checked against the provider's rules, and the report says how much of each
request repeats the previous one (what the provider's prompt cache reuses).

Run: python examples/agent_turns.py
"""

import asyncio
import json

from loomctx import HashingEmbedder, Session, check_request

TRACK = {"type": "function", "function": {
    "name": "track_shipment", "description": "Current status of a shipment.",
    "parameters": {"type": "object", "properties": {"shipment_id": {"type": "string"}},
                   "required": ["shipment_id"]}}}


def scripted_model(turn: int, payload: dict) -> dict:
    """Stands in for a chat model: first asks for a tool, then answers."""
    last = payload["messages"][-1]
    if last["role"] == "user":
        sid = f"SHP-{40233 + turn}"
        return {"role": "assistant", "content": None, "tool_calls": [{
            "id": f"c{turn}", "type": "function", "function": {
                "name": "track_shipment", "arguments": json.dumps({"shipment_id": sid})}}]}
    return {"role": "assistant", "content": f"Turn {turn}: it is on customs hold at Lyon."}


def run_tool(call: dict) -> str:
    args = json.loads(call["function"]["arguments"])
    return f"{args['shipment_id']}: customs hold at Lyon cross-dock. " + "scan ok. " * 40


async def main() -> None:
    s = Session(system_prompt="You are the operations assistant of a logistics company.",
                model="gpt-4o", tools=[TRACK], embedder=HashingEmbedder())
    for turn in range(8):
        await s.add_message("user", f"Where is shipment SHP-{40233 + turn}?")
        while True:
            ctx = await s.build(max_tokens=2000)       # the input is that message, once
            assert ctx.tokens <= 2000 and check_request("openai", ctx.payload) == []
            print(f"turn {turn}: {ctx.tokens:5d} tokens, "
                  f"{ctx.report.reused_prefix_tokens:5d} repeat the previous request")
            reply = scripted_model(turn, ctx.payload)
            await s.add_message(**reply)
            if not reply.get("tool_calls"):
                break
            for call in reply["tool_calls"]:
                await s.add_message("tool", run_tool(call), tool_call_id=call["id"])
    await s.end()


if __name__ == "__main__":
    asyncio.run(main())
