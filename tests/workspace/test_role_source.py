"""A role's workspace view as a source of an ordinary session: an orchestrator on
``loomctx.Agent`` dispatches an action whose output becomes a note, and its next model call
sees the note, the quota and the timeline, read fresh from the live workspace."""

from __future__ import annotations

import json

from loomctx import Agent, Session, Tool
from loomctx.testing.fake_script import ToolCall
from loomctx.testing.scripted import ScriptedModel
from loomctx.workspace import (
    ConversationManager,
    RoleSource,
    WorkSpace,
    build_action_context,
    orchestrator_items,
)


def test_orchestrator_agent_sees_notes_its_actions_created() -> None:
    ws, cm = WorkSpace(), ConversationManager()
    ws.add_note("material", "品牌手册：冷萃12小时")
    cm.add_user_message("写一篇冷萃咖啡的小红书")
    task = "为冷萃咖啡写小红书文案"
    cm.start_orchestrator_call(task)
    cm.add_round("工作区只有品牌手册", "先做人群画像")
    action_model = ScriptedModel(["画像：25岁白领，通勤喝咖啡"])
    seen: list[str] = []

    async def dispatch(action: str, instruction: str) -> str:
        """Run an action agent; its output becomes a note."""
        ctx = build_action_context(action, instruction, ws, cm, budget=2000)
        seen.append(ctx.text)
        reply = await action_model.complete({"messages": [{"role": "user",
                                                            "content": ctx.text}]})
        note = ws.add_note(action, reply.message["content"] or "", source=action)
        cm.add_action(action, instruction, (note.id,))
        return f"created @{note.id}"

    source = RoleSource(lambda: orchestrator_items(task, ws, cm), name="workspace")
    tool = Tool.from_function(dispatch)
    session = Session(system_prompt="You are the orchestrator.", sources=[source],
                      tools=[tool.schema])
    model = ScriptedModel([ToolCall("dispatch", {"action": "persona",
                                                 "instruction": "基于 @material1 画像"}),
                           "done"])
    agent = Agent(model, tools=[tool], session=session, budget=3000)
    result = agent.run_sync(task)
    assert result.output == "done"
    assert "@material1:\n品牌手册：冷萃12小时" in seen[0] and task in seen[0]
    first, second = (json.dumps(r, ensure_ascii=False) for r in model.requests)
    assert "@persona1" not in first and "已执行 0/12" in first
    assert "产出 @persona1: 画像：25岁白领" in second and "已执行 1/12" in second
    assert "<call agent=persona instruction=基于 @material1 画像/>" in second
