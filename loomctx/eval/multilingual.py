"""A generated long conversation in English, Chinese and a code-switched mix, question for question.

The public recall sets are English; the default embedder and the lexical index are meant to work
across languages, and this check keeps them honest. Each conversation is generated three times
from one seed with the same structure — the same chit-chat slots, the same planted facts at the
same turns, the same questions about them — in English (``en``), Chinese (``zh``) and a mix
(``mixed``: each chit-chat turn in one language or the other, facts and questions code-switched).
So the languages differ only in language, and recall per language (the category) should agree.

Every fact is planted once and asked once; its turn is the gold evidence. The chit-chat mentions
the same kinds of things (animals, cities, books) so that a question's topic words alone do not
find the fact. Nothing is read from disk: the data are written here, from small dictionaries.
"""

from __future__ import annotations

import random
from collections.abc import Iterator

from loomctx.errors import ConfigError
from loomctx.eval.records import EvalQuestion, Turn

LANGUAGES = ("en", "zh", "mixed")
"""The language variants, also the question categories."""

_SPEAKERS = {"en": ("Ann", "Bob"), "zh": ("小安", "老白"), "mixed": ("Ann", "Bob")}

# (English, Chinese) pairs: the dictionary the three variants share.
_ANIMALS = [("cat", "猫"), ("dog", "狗"), ("rabbit", "兔子"), ("parrot", "鹦鹉"),
            ("turtle", "乌龟"), ("hamster", "仓鼠")]
_PET_NAMES = [("Mimi", "咪咪"), ("Lucky", "旺财"), ("Bean", "豆豆"), ("Pepper", "胡椒"),
              ("Mochi", "麻糬"), ("Cloud", "白云")]
_CITIES = [("Paris", "巴黎"), ("Tokyo", "东京"), ("Berlin", "柏林"), ("Chengdu", "成都"),
           ("Lisbon", "里斯本"), ("Seoul", "首尔"), ("Cairo", "开罗"), ("Xi'an", "西安")]
_EVENTS = [("conference", "会议"), ("wedding", "婚礼"), ("marathon", "马拉松"),
           ("concert", "音乐会"), ("workshop", "工作坊"), ("book fair", "书展")]
_INSTRUMENTS = [("piano", "钢琴"), ("violin", "小提琴"), ("guitar", "吉他"), ("cello", "大提琴"),
                ("drums", "架子鼓"), ("flute", "长笛")]
_TEACHERS = [("Mrs Zhou", "周老师"), ("Mr Lin", "林老师"), ("Ms Garcia", "加西亚老师"),
             ("Mr Okafor", "奥卡福老师"), ("Ms Weber", "韦伯老师"), ("Mr Tanaka", "田中老师")]
_DISHES = [("dumplings", "饺子"), ("hotpot", "火锅"), ("noodles", "面条"), ("curry", "咖喱"),
           ("tacos", "塔可"), ("fried rice", "炒饭")]
_STREETS = [("Maple Street", "枫树街"), ("River Road", "河滨路"), ("Station Square", "车站广场"),
            ("Hill Lane", "山坡巷"), ("Market Street", "市场街"), ("Harbour Road", "港湾路")]

# A fact kind: key list, value list, and (statement, question) templates per language. {a} is
# the speaker; {k}/{v} the key and value in the variant's language (mixed: English words).
_FACTS = [
    (_ANIMALS, _PET_NAMES, {
        "en": ("{a}: I adopted a {k} last week and named it {v}.",
               "What did {a} name the {k} they adopted?"),
        "zh": ("{a}：我上周领养了一只{k}，给它取名叫{v}。", "{a}领养的{k}叫什么名字？"),
        "mixed": ("{a}: 我上周 adopted 了一只 {k}，名字叫 {v}。",
                  "{a} adopted 的 {k} 叫什么名字？"),
    }),
    (_EVENTS, _CITIES, {
        "en": ("{a}: I flew to {v} for the {k} and it went really well.",
               "Which city did {a} fly to for the {k}?"),
        "zh": ("{a}：我为了参加{k}飞去了{v}，一切都很顺利。", "{a}为了参加{k}飞去了哪个城市？"),
        "mixed": ("{a}: 我为了 {k} 飞去了 {v}，一切都很 smooth。",
                  "{a} 为了 {k} 飞去了哪个 city？"),
    }),
    (_INSTRUMENTS, _TEACHERS, {
        "en": ("{a}: I finally started {k} lessons, my teacher is {v}.",
               "Who is {a}'s {k} teacher?"),
        "zh": ("{a}：我终于开始上{k}课了，我的老师是{v}。", "{a}的{k}老师是谁？"),
        "mixed": ("{a}: 我终于开始上 {k} lessons 了，老师是 {v}。", "{a} 的 {k} teacher 是谁？"),
    }),
    (_DISHES, _STREETS, {
        "en": ("{a}: The best {k} I have found is at a little place on {v}.",
               "Where does {a} get the best {k}?"),
        "zh": ("{a}：我吃过最好的{k}在{v}的一家小店。", "{a}在哪里吃到最好的{k}？"),
        "mixed": ("{a}: 我吃过最好的 {k} 在 {v} 的一家小店。", "{a} 在哪里吃到最好的 {k}？"),
    }),
]

# Near misses, one per fact kind: the same key told of someone else, with another value. They
# share the fact's words and shape; only "someone else" says they do not answer the question.
_DISTRACTORS = [
    {"en": "{a}: My cousin adopted a {k} as well and she called it {v}.",
     "zh": "{a}：我表姐也领养了一只{k}，她叫它{v}。",
     "mixed": "{a}: 我表姐也 adopted 了一只 {k}，她叫它 {v}。"},
    {"en": "{a}: My boss flew to {v} for the {k} last year, I stayed home.",
     "zh": "{a}：我老板去年为了{k}飞去了{v}，我留在家里。",
     "mixed": "{a}: 我老板去年为了 {k} 飞去了 {v}，我 stayed home。"},
    {"en": "{a}: My neighbour takes {k} lessons, her teacher is {v}.",
     "zh": "{a}：我邻居在上{k}课，她的老师是{v}。",
     "mixed": "{a}: 我邻居在上 {k} lessons，她的老师是 {v}。"},
    {"en": "{a}: People say the best {k} is on {v}, but I have never tried it.",
     "zh": "{a}：听说最好的{k}在{v}，但我从来没去吃过。",
     "mixed": "{a}: 听说最好的 {k} 在 {v}，但我从来没 try 过。"},
]

_CHAT = [
    ("{a}: How was your weekend? Mine was quiet, mostly cleaning the flat.",
     "{a}：你周末过得怎么样？我的很安静，主要在打扫房间。"),
    ("{a}: The weather has been strange, sunny in the morning and rain at night.",
     "{a}：最近天气很奇怪，早上晴天晚上下雨。"),
    ("{a}: Work is busy again, we have a deadline at the end of the month.",
     "{a}：工作又忙起来了，月底有个截止日期。"),
    ("{a}: My neighbour's {k} kept barking all night, I barely slept.",
     "{a}：邻居家的{k}叫了一整夜，我几乎没睡。"),
    ("{a}: I saw a documentary about {c} yesterday, the old streets looked lovely.",
     "{a}：我昨天看了一部关于{c}的纪录片，老街看起来很美。"),
    ("{a}: Do you still go running in the park on Sundays?",
     "{a}：你周日还去公园跑步吗？"),
    ("{a}: I cooked {d} for friends, it was fine but not great.",
     "{a}：我给朋友做了{d}，还行但不算好吃。"),
    ("{a}: That sounds great, tell me more about it next time.",
     "{a}：听起来很棒，下次多跟我说说。"),
    ("{a}: My sister wants to learn the {i} but she has no time.",
     "{a}：我妹妹想学{i}，但是她没时间。"),
    ("{a}: Ha, that is so typical of you!",
     "{a}：哈哈，这太像你了！"),
    ("{a}: I am thinking about a trip somewhere warm this winter.",
     "{a}：我在考虑今年冬天去个暖和的地方旅行。"),
    ("{a}: The train was late again, I waited forty minutes.",
     "{a}：火车又晚点了，我等了四十分钟。"),
]


def _chat(rng: random.Random, lang: str, speaker: str, coin: random.Random) -> str:
    en, zh = rng.choice(_CHAT)
    slots = [rng.randrange(6), rng.randrange(8), rng.randrange(6), rng.randrange(6)]
    use_zh = lang == "zh" or (lang == "mixed" and coin.random() < 0.5)
    pick = 1 if use_zh else 0
    return (zh if use_zh else en).format(
        a=speaker, k=_ANIMALS[slots[0]][pick], c=_CITIES[slots[1]][pick],
        d=_DISHES[slots[2]][pick], i=_INSTRUMENTS[slots[3]][pick])


def multilingual_questions(*, conversations: int = 2, turns: int = 300, seed: int = 0,
                           languages: tuple[str, ...] = LANGUAGES,
                           distractors: int = 0) -> Iterator[EvalQuestion]:
    """The questions of ``conversations`` generated conversations in each of ``languages``.

    A conversation has ``turns`` turns (sessions of 20, a day apart) and one fact of each key of
    each kind (24), at positions drawn from the seed; every variant shares them. ``distractors``
    near misses per fact replace chit-chat turns, each with another value: the first, third, ...
    tell the same key of someone else ("my cousin adopted a cat as well"), the second, fourth,
    ... are the fact's own sentence said by the other speaker, so only the name tells them
    apart. Without them the check is easy (every system recalls everything at 512 tokens).
    """
    unknown = [lang for lang in languages if lang not in LANGUAGES]
    if unknown or not languages:
        raise ConfigError(f"languages {languages!r} must be among {LANGUAGES!r}")
    if isinstance(distractors, bool) or not isinstance(distractors, int) or distractors < 0:
        raise ConfigError(f"distractors={distractors!r} must be an int >= 0")
    facts = [(kind, i) for kind in range(len(_FACTS)) for i in range(len(_FACTS[kind][0]))]
    planted_turns = len(facts) * (1 + distractors)
    if turns < 2 * planted_turns:
        raise ConfigError(f"turns={turns!r} is too few: a conversation needs at least "
                          f"{2 * planted_turns} to hold its {planted_turns} planted turns "
                          "among chit-chat")
    for number in range(conversations):
        plan = random.Random(seed * 7919 + number)
        slots = sorted(plan.sample(range(turns), len(facts)))
        order = plan.sample(facts, len(facts))
        values = {(kind, i): plan.randrange(len(_FACTS[kind][1])) for kind, i in facts}
        planted: dict[int, tuple[int, int, int | None, bool]] = {
            slot: (kind, i, None, False) for slot, (kind, i) in zip(slots, order, strict=True)}
        if distractors:
            near = random.Random(seed * 31337 + number)
            parity = {fact: slot % 2 for slot, fact in zip(slots, order, strict=True)}
            for n in range(distractors):
                for kind, i in facts:
                    # Even: someone else's (a near-miss sentence); odd: the fact's own sentence
                    # said by the other speaker, so only the name tells them apart.
                    same = n % 2 == 1
                    free = [t for t in range(turns) if t not in planted
                            and (not same or t % 2 != parity[kind, i])]
                    others = [v for v in range(len(_FACTS[kind][1])) if v != values[kind, i]]
                    planted[near.choice(free)] = (kind, i, near.choice(others), same)
        for lang in languages:
            yield from _conversation(lang, number, seed, turns, planted, values)


def _conversation(lang: str, number: int, seed: int, turns: int,
                  planted: dict[int, tuple[int, int, int | None, bool]],
                  values: dict[tuple[int, int], int]) -> Iterator[EvalQuestion]:
    chat_rng = random.Random(seed * 104729 + number)  # the same chit-chat in every language
    coin = random.Random(seed * 15485863 + number)  # which language a mixed turn is in
    pick = 1 if lang == "zh" else 0
    history: list[Turn] = []
    asked: list[tuple[str, str, str]] = []
    start = 1_672_531_200.0 + number * 10_000_000  # 2023-01-01 UTC
    for t in range(turns):
        speaker = _SPEAKERS[lang][t % 2]
        session, index = divmod(t, 20)
        turn_id = f"D{session + 1}:{index + 1}"
        fact = planted.get(t)
        chat = _chat(chat_rng, lang, speaker, coin)  # drawn every turn: the streams stay aligned
        if fact is None:
            text = chat
        elif fact[2] is not None:  # a near miss: another value, someone else's
            keys, vals, templates = _FACTS[fact[0]]
            template = templates[lang][0] if fact[3] else _DISTRACTORS[fact[0]][lang]
            text = template.format(a=speaker, k=keys[fact[1]][pick], v=vals[fact[2]][pick])
        else:
            keys, vals, templates = _FACTS[fact[0]]
            statement, question = templates[lang]
            value = values[fact[0], fact[1]]
            words = {"a": speaker, "k": keys[fact[1]][pick], "v": vals[value][pick]}
            text = statement.format(**words)
            asked.append((f"{turn_id}", question.format(**words), lang))
        history.append(Turn(id=turn_id, role="user" if t % 2 == 0 else "assistant",
                            content=text, timestamp=start + session * 86_400 + index * 60,
                            session=f"session_{session + 1}"))
    shared = tuple(history)
    for n, (gold, text, category) in enumerate(asked):
        yield EvalQuestion(id=f"{lang}-{number}/{n}", question=text, history=shared,
                           gold=(gold,), category=category, extras={"conversation": number})


__all__ = ["LANGUAGES", "multilingual_questions"]
