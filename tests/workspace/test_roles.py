"""The seed's rules for the three role contexts, each in Chinese and in English content."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from loomctx.errors import ConfigError
from loomctx.workspace import (
    ActionModels,
    ConversationManager,
    Labels,
    ModelSettings,
    NoteTypes,
    RoleOptions,
    WorkSpace,
    action_model_settings,
    build_action_context,
    build_concierge_context,
    build_orchestrator_context,
    language_of,
    material_status,
)

BIG = 20_000


@dataclass
class Lang:
    name: str
    options: RoleOptions
    ask: str
    task: str
    feedback: str
    persona: str
    search: str
    material: str
    observe: str
    think: str


ZH = Lang("zh", RoleOptions(), "帮我写一篇咖啡的小红书", "为新品冷萃咖啡写小红书文案",
          "语气再轻松一点",
          "目标用户：\n25-30岁一线城市白领，早上通勤赶时间，喜欢精品咖啡，"
          "对价格敏感，常在小红书搜索测评。",
          "搜索结果：冷萃咖啡市场增长迅速，\n年轻人偏爱低糖、便携的即饮产品。",
          "品牌手册：冷萃12小时，低酸顺滑，每瓶250ml。",
          "用户需要一篇小红书文案，目前工作区没有任何关于目标用户和市场的资料，"
          "需要先调研市场、再刻画人群，然后提炼打动人心的卖点，最后动笔写作。\n"
          "写作时要兼顾品牌调性、平台风格和用户的阅读习惯，避免堆砌卖点。",
          "先并行执行websearch和persona两个动作，收集素材以后再决定hitpoint的方向。")
EN = Lang("en", RoleOptions(labels=Labels.english()), "Write a coffee post for me",
          "Write a social post for the new cold brew", "Make the tone lighter",
          "Target users:\nurban office workers aged 25-30 who commute early, love specialty coffee "
          "and compare prices before buying.",
          "Search results: the cold brew market is growing fast;\nyoung buyers prefer low-sugar "
          "ready-to-drink bottles.", "Brand book: brewed cold for 12 hours, smooth, 250ml.",
          "The user wants a social post and the workspace holds nothing about the audience or the "
          "market yet, so research comes first, then the persona, then the hook, then writing.",
          "Run websearch and persona in parallel, then decide the hitpoint from what they find.")


def scenario(lang: Lang) -> tuple[WorkSpace, ConversationManager]:
    ws, cm = WorkSpace(), ConversationManager()
    cm.add_user_message(lang.ask)
    cm.add_concierge_response("ok", original_response=f"ORIGINAL {lang.ask}")
    cm.add_user_message(lang.task)
    cm.start_orchestrator_call(lang.task)
    cm.add_round(lang.observe, lang.think)
    w = ws.add_note("websearch", lang.search, source="websearch")
    cm.add_action("websearch", f"@x {lang.task}", (w.id,))
    p = ws.add_note("persona", lang.persona, source="persona")
    cm.add_action("persona", lang.task, (p.id,))
    ws.add_note("material", lang.material, source="user")
    cm.add_round(lang.think, lang.observe)
    h = ws.add_note("hitpoint", f"HOOK {lang.persona}", source="hitpoint")
    cm.add_action("hitpoint", f"@{w.id} @{p.id}", (h.id,))
    cm.finish_orchestrator_call("done")
    cm.add_concierge_response("sent", original_response="sent")
    cm.add_user_message(lang.feedback)
    cm.start_orchestrator_call(lang.feedback)
    return ws, cm


LANGS = pytest.mark.parametrize("lang", [ZH, EN], ids=lambda x: x.name)


# ---- concierge ---------------------------------------------------------------------------
@LANGS
def test_concierge_numbers_chat_and_marks_only_a_new_message(lang: Lang) -> None:
    ws, cm = scenario(lang)
    lb = lang.options.labels
    text = build_concierge_context(lang.feedback, ws, cm, budget=BIG, options=lang.options).text
    assert f"#1 {lb.user}: {lang.ask}" in text
    assert f"#2 {lb.assistant}: ORIGINAL {lang.ask}" in text  # the original response
    assert f"#5 {lb.user}: {lang.feedback}" in text and lb.new_message not in text
    new = build_concierge_context("and one more", ws, cm, budget=BIG, options=lang.options).text
    assert f"#6 {lb.user}: and one more {lb.new_message}" in new


@LANGS
def test_concierge_timeline_is_one_line_80_char_previews(lang: Lang) -> None:
    ws, cm = scenario(lang)
    lb = lang.options.labels
    text = build_concierge_context(lang.feedback, ws, cm, budget=BIG, options=lang.options).text
    assert f"# {lb.user_message}1: {lang.task}" in text
    assert f"# {lb.user_message}2: {lang.feedback}" in text
    flat = " ".join(lang.observe.split())
    assert len(flat) > 80
    assert f"{lb.observe}: {flat[:80]}...\n" in text and flat[:81] not in text
    assert "## Round2:" in text and "<call" not in text


@LANGS
def test_concierge_shows_every_note_as_a_50_char_preview(lang: Lang) -> None:
    ws, cm = scenario(lang)
    text = build_concierge_context(lang.feedback, ws, cm, budget=BIG, options=lang.options).text
    for note in ws:
        flat = " ".join(note.content.split())
        shown = flat[:50] + "..." if len(flat) > 50 else flat
        assert f"@{note.id}: {shown}\n" in text + "\n"
    assert "\n" in lang.persona and lang.persona not in text  # newlines folded


def test_concierge_cuts_raw_for_types_outside_the_flattened_set() -> None:
    ws, cm = WorkSpace(), ConversationManager()
    ws.add_note("memo", "line one\nline two " + "x" * 60)
    text = build_concierge_context("hi", ws, cm, budget=BIG).text
    assert "@memo1: line one\nline two " + "x" * 32 + "..." in text


# ---- orchestrator ------------------------------------------------------------------------
@LANGS
def test_orchestrator_quota_grows_by_3_per_later_call(lang: Lang) -> None:
    ws, cm = scenario(lang)
    lb = lang.options.labels
    text = build_orchestrator_context(lang.feedback, ws, cm, budget=BIG,
                                      options=lang.options).text
    assert lb.quota.format(executed=0, max=15, remaining=15) in text
    cm.add_action("xhs_post", "write")
    cm.add_action("xhs_post", "write")
    text = build_orchestrator_context(lang.feedback, ws, cm, budget=BIG,
                                      options=lang.options).text
    assert lb.quota.format(executed=2, max=15, remaining=13) in text
    first = ConversationManager()
    first.start_orchestrator_call(lang.task)
    text = build_orchestrator_context(lang.task, ws, first, budget=BIG, options=lang.options).text
    assert lb.quota.format(executed=0, max=12, remaining=12) in text


@LANGS
def test_orchestrator_classifies_notes_and_finds_used_ones_from_refs(lang: Lang) -> None:
    ws, cm = scenario(lang)
    lb = lang.options.labels
    cm.add_action("xhs_post", "@hitpoint1 @material1 @persona9")
    status = material_status(ws, cm.execution_log())
    assert status == {"material": {"websearch1": False, "persona1": False, "material1": True},
                      "hitpoint": {"hitpoint1": True}, "writing": {}}
    hit_only = material_status(ws, [*cm.execution_log(0)])  # the hitpoint action's refs
    assert hit_only["material"] == {"websearch1": True, "persona1": True, "material1": False}
    text = build_orchestrator_context(lang.feedback, ws, cm, budget=BIG,
                                      options=lang.options).text
    assert f"{lb.hitpoints}: @hitpoint1 ({lb.used})" in text
    assert f"@material1 ({lb.used})" in text and f"@websearch1 ({lb.used})" in text


@LANGS
def test_orchestrator_timeline_in_full_with_created_notes_after_each_call(lang: Lang) -> None:
    ws, cm = scenario(lang)
    lb = lang.options.labels
    text = build_orchestrator_context(lang.feedback, ws, cm, budget=BIG,
                                      options=lang.options).text
    assert f"{lb.observe}: {' '.join(lang.observe.split())}\n" in text
    call = f"⚡ <call agent=persona instruction={lang.task}/>"
    flat = " ".join(lang.persona.split())
    produced = f"   {lb.produced} @persona1: {flat[:100]}" + ("..." if len(flat) > 100 else "")
    assert f"{call}\n{produced}\n" in text
    assert text.index("## Round1:") < text.index(call) < text.index("## Round2:")


# ---- action ------------------------------------------------------------------------------
@LANGS
def test_action_background_requirement_then_supplements(lang: Lang) -> None:
    ws, cm = scenario(lang)
    lb = lang.options.labels
    text = build_action_context("persona", "who?", ws, cm, budget=BIG, options=lang.options).text
    assert f"{lb.background}\n{lang.task}\n{lb.supplement}: {lang.feedback}" in text
    for action in ("websearch", "knowledge", "resonant"):
        quiet = build_action_context(action, "go", ws, cm, budget=BIG, options=lang.options).text
        assert lb.background not in quiet and lang.task not in quiet


@LANGS
def test_action_expands_refs_once_and_says_when_missing(lang: Lang) -> None:
    ws, cm = scenario(lang)
    ws.add_note("brand", "secret", referenceable=False)
    lb = lang.options.labels
    instruction = "@persona1 @websearch1 @persona1 @nope4 @brand1"
    text = build_action_context("persona", instruction, ws, cm, budget=BIG,
                                options=lang.options).text
    assert text.count(f"@persona1:\n{lang.persona}") == 1
    assert f"@websearch1:\n{lang.search}" in text
    assert f"@nope4: {lb.missing_ref}" in text and f"@brand1: {lb.missing_ref}" in text
    assert "secret" not in text and lang.material not in text  # not a writing action


@LANGS
@pytest.mark.parametrize("action", ["xhs_post", "wechat_article", "tiktok_script", "hitpoint"])
def test_writing_actions_get_every_material(lang: Lang, action: str) -> None:
    ws, cm = scenario(lang)
    ws.add_note("material", "second material")
    text = build_action_context(action, "@hitpoint1", ws, cm, budget=BIG,
                                options=lang.options).text
    assert f"@material1:\n{lang.material}" in text and "@material2:\nsecond material" in text
    assert text.index("@hitpoint1:") < text.index("@material1:")


def test_model_settings_are_the_seeds_and_configurable() -> None:
    assert action_model_settings("knowledge") == ModelSettings(temperature=0.3,
                                                               max_output_tokens=8000)
    assert action_model_settings("xhs_post").thinking_budget == 1200
    assert action_model_settings("hitpoint").temperature == 0.6
    assert action_model_settings("persona").thinking_budget == 500
    custom = RoleOptions(types=NoteTypes(writing_actions=("blog",)),
                         actions=ActionModels(overrides={"persona": ModelSettings(
                             temperature=0.0, max_output_tokens=10)}))
    assert action_model_settings("blog", custom).thinking_budget == 1200
    assert action_model_settings("xhs_post", custom).thinking_budget == 500
    assert action_model_settings("persona", custom).max_output_tokens == 10


def test_type_sets_are_configuration() -> None:
    ws, cm = scenario(ZH)
    opts = RoleOptions(types=NoteTypes(no_background_actions=frozenset({"persona"}),
                                       writing_actions=("persona",)))
    text = build_action_context("persona", "go", ws, cm, budget=BIG, options=opts).text
    assert ZH.task not in text and ZH.material in text
    assert material_status(ws, [], NoteTypes(materials=frozenset({"persona"})))["material"] == {
        "persona1": False}


def test_repeated_rounds_and_calls_are_all_shown_and_builds_are_deterministic() -> None:
    ws, cm = WorkSpace(), ConversationManager()
    for _ in range(2):
        cm.start_orchestrator_call("same task")
        cm.add_round("same observation", "same thought")
        cm.add_action("websearch", "same search")
    text = build_orchestrator_context("go", ws, cm, budget=BIG).text
    assert text.count("⚡ <call agent=websearch instruction=same search/>") == 2
    assert text.count("## Round1:\n🔍 观察: same observation") == 2
    concierge = build_concierge_context("go", ws, cm, budget=BIG).text
    assert concierge.count("## Round1:") == 2
    again = build_orchestrator_context("go", ws, cm, budget=BIG)
    assert again.text == text and again.report.to_dict()["items"] == build_orchestrator_context(
        "go", ws, cm, budget=BIG).report.to_dict()["items"]


def test_orchestrator_takes_the_seeds_dict_log_too() -> None:
    ws, cm = scenario(ZH)
    log = [{"action": "xhs_post", "instruction": "@hitpoint1"}]
    assert material_status(ws, log)["hitpoint"] == {"hitpoint1": True}
    text = build_orchestrator_context(ZH.feedback, ws, cm, log, budget=BIG).text
    assert "已执行 1/15" in text
    with pytest.raises(ConfigError, match="'oops'"):
        material_status(ws, ["oops"])  # type: ignore[list-item]


def test_language_of_counts_cjk_characters_against_latin_words() -> None:
    assert language_of("Plan a short campaign for our tea") == "en"
    assert language_of("为新款冷泡乌龙茶策划推广") == "zh"
    assert language_of("写一篇 xhs post", "关于乌龙茶") == "zh"
    assert language_of("") == "en"
    assert Labels.for_text("你好，世界") == Labels()
    assert Labels.for_text("hello") == Labels.english()
