"""The wording around a question for each phrasing of :mod:`loomctx.eval.phrasing`.

Kept apart from the rules so the tables read as data. Each list is split by position: even
entries are the ``dev`` half (what recall is tuned on), odd entries the ``heldout`` half (what
checks that a gain carries over to wording nobody tuned on). Placeholders:

- ``{q}``: the question as the data set words it (its question mark kept);
- ``{bare}``: the question without its question mark; ``{low}``: the same, its first word in
  lower case when it is a question word (to follow a comma);
- ``{clause}``: request leads only, filled by the rules (``Tell me {clause}``);
- ``{subject}`` / ``{rest}``: follow-ups only, the thing named in the first turn and the second
  turn (the question with that thing replaced by a pronoun or left out).
"""

from __future__ import annotations

REQUEST_LEADS: tuple[str, ...] = (
    "Tell me", "Remind me", "I need to know", "Look up", "Find out", "Please check",
    "I'd like to know", "Help me remember", "Let me know", "Can you tell me", "Figure out",
    "Dig up", "I want to know", "Go through our chats and tell me", "Check for me",
    "Work out",
)
"""A request: ``<lead> <clause>.`` (no question mark anywhere)."""

CHATTER: tuple[str, ...] = (
    "Thanks, that helps. Quick one. {q}",
    "Hey! Hope your day is going well. {q}",
    "I was just thinking about last week. {q}",
    "Morning! The coffee is finally kicking in. {q}",
    "Sorry for the slow reply, it has been a hectic day. {q}",
    "Ok, back again after a long meeting. {q}",
    "That makes sense, thanks for explaining it so clearly. {q}",
    "Haha, fair enough. Anyway. {q}",
    "Hi again! I hope the weekend treated you well. {q}",
    "Good to know. Something else came up while I was cooking. {q}",
    "Alright, switching topics for a second. {q}",
    "I just got back from a walk, the weather is lovely today. {q}",
    "Great, I will try that tonight. One more thing. {q}",
    "My train is late again, so I have a few minutes. {q}",
    "Cool. I was telling a friend about this earlier. {q}",
    "Perfect, thank you! While I have you here. {q}",
)
"""Small talk first, then the question as worded."""

EMBEDDED: tuple[str, ...] = (
    "I'm putting together some notes and want to get the details right. {q} If you're not "
    "sure, just say so. Thanks!",
    "Hi, hope you're well. I'm helping a friend with something and it made me wonder. {q} "
    "No rush on this.",
    "So here's the thing: I'm writing a short summary tonight and one detail is missing. "
    "{q} A short answer is fine.",
    "Could you go back over what we talked about? I'd like to check one thing: {bare}. Keep "
    "the answer short, please.",
    "I have a call in ten minutes and want to be prepared. {q} Bullet points are fine.",
    "Before I forget, there's something I keep mixing up. {q} Thanks in advance.",
    "I'm trying to get my facts straight before tomorrow. Please look through our earlier "
    "messages: {bare}. Then tell me how sure you are.",
    "Quick favour. My memory is terrible lately. {q} Just the answer is enough.",
    "I was updating my journal and got stuck on one point. {q} I'll double check it later.",
    "Hello! Something from our earlier chats came up at dinner. {q} Curious what you "
    "remember.",
    "I need one detail for an email I'm drafting: {bare}. Only the fact, no explanation.",
    "Let me ask you something, since you have the whole history. {q} Thanks a lot!",
    "Context: I'm reviewing everything we discussed so far. {q} Please answer from what we "
    "said, not from general knowledge.",
    "Hey, sorry to bother you again. {q} That's all for now.",
    "I'm making a list of things to follow up on. First item: {bare}. More later.",
    "Random thought while cleaning up my desk. {q} Let me know when you can.",
    "Pasting my notes from this morning so you have them:\n- 09:10 call the plumber\n- 11:30 "
    "groceries, oat milk, batteries\n- 15:00 pick up the parcel\nAnyway, {low}. Thanks.",
    "Here is what my calendar app exported:\n```\nMON 08:00 standup\nTUE 18:30 gym\nFRI "
    "19:00 dinner\n```\nNot important. {q}",
)
"""The question inside a longer message, with text before and after it."""

FOLLOW_UPS: tuple[tuple[str, str], ...] = (
    ("I have a question about {subject}.", "{rest}"),
    ("Let's talk about {subject} for a moment.", "so {rest}"),
    ("Quick thing about {subject}.", "{rest}"),
    ("Going back to {subject}.", "and {rest}"),
    ("Something about {subject} I wanted to ask.", "ok, {rest}"),
    ("Thinking about {subject} again.", "{rest}"),
    ("About {subject}.", "remind me, {rest}"),
    ("Can we go back to {subject}", "{rest}"),
    ("You know {subject}, right.", "{rest}"),
    ("I keep wondering about {subject}.", "right, {rest}"),
    ("Now, {subject}.", "{rest}"),
    ("One more on {subject}.", "{rest}"),
    ("Let me ask about {subject}.", "{rest}"),
    ("Switching to {subject}.", "so {rest}"),
    ("Something on {subject} first.", "{rest}"),
    ("I want to get back to {subject}.", "{rest}"),
)
"""Two user turns: the first names the subject, the second (``rest``) leans on it."""

NO_MARK: tuple[str, ...] = ("{bare}", "{bare}.", "{bare} pls", "{bare} thx")
"""The question with its question mark taken away."""

ZH: tuple[str, ...] = (
    "请帮我查一下：{bare}",
    "我想知道 {q}",
    "麻烦你看一下，{bare}。",
    "问一下，{q}",
    "帮我回忆一下：{bare}",
    "我有个问题：{q}",
    "顺便问一句，{q}",
    "能不能帮我找找：{bare}",
    "之前聊过的，{bare}，你还记得吗",
    "想确认一下：{bare}。",
    "你好！{q} 谢谢！",
    "对了，{bare}",
    "请问 {q}",
    "我忘了，{bare}，帮我看看。",
    "查一下这个：{bare}",
    "好的，明白了。另外，{q}",
)
"""Chinese around the question (its words are kept: there is no translation model)."""

CODE_SWITCHED: tuple[str, ...] = (
    "帮我 check 一下 {bare}",
    "我想 confirm 一下：{q}",
    "Quick question，{q}",
    "麻烦 look up 一下：{bare}",
    "{q} 谢啦 thanks",
    "Hi，想问一下 {q}",
    "帮我 double check：{bare}",
    "我 forget 了，{bare}",
    "能 remind 我一下吗：{bare}",
    "OK 那 {q}",
    "顺便 ask 一下，{q}",
    "这个帮我 search 下：{bare}",
    "Sorry 打扰一下，{q}",
    "帮我 find 一下 {bare}，thanks",
    "我有个 question：{q}",
    "Btw 之前那个，{bare}",
)
"""Chinese and English mixed around the question, as bilingual users write."""

__all__ = ["CHATTER", "CODE_SWITCHED", "EMBEDDED", "FOLLOW_UPS", "NO_MARK", "REQUEST_LEADS",
           "ZH"]
