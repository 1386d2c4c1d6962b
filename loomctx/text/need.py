"""The part of a message that carries its need: what retrieval searches for.

People rarely say only the question. "Hi again! Thanks for yesterday. Tell me what we decided
about the Hamburg pickups, if you still have it." holds one need among greetings, thanks, a
request frame and a closing courtesy; searched whole, the small talk pulls the query's vector
towards every friendly message of the history and its words into the lexical lists. The
question mark is no guide either: a request has none, and chatter can ask ("How are you?").

:func:`need_text` keeps, sentence by sentence, what names something: a sentence whose every
content word is small talk (:data:`CHATTER`) goes, request frames at a sentence's start ("tell
me", "can you remind me", "I need to know", "I'd appreciate it if you could tell me",
"请帮我查一下", and any lead of words of asking right before a question word or a colon: "Jog
my memory on when …") and courtesies at its end ("if you can", "thanks") are cut. The sentences
that ask (a request frame, an interrogative word, a question mark; beside one with a question
mark or word, one that asks only by a verb of asking is among those around it) are the need,
with the sentences around them that name something (a name, a number, the conversation's past)
and all of them when what asks leans on them ("What did she research?"), nearest first, up to
:data:`MAX_WORDS`; a sentence about the asker's day ("I am putting together notes for the
team") goes, and so does a clause before what asks made only of small talk and asking words
("Hmm, when …", "Quick one — what …"). Where Chinese and English meet at a full-width comma or
colon, a clause made only of asking words (:data:`ASKING`: "我有个 question：", "我忘了") goes
too, one after what it asks about ("…，能告诉我吗") makes that ask, and beside an English
question a Chinese aside about the asker names nothing; a pointer at the past ("I wanted to
follow up on our previous conversation about …") leaves its topic. A question word asks at a
sentence's start or after a verb of knowing ("I forget where …"), not inside any clause ("a
library for when I have kids"). A message where nothing asks is its own need. A message of
small talk only has no need: :func:`need_text` returns an empty string, and a turn made of it
spends no room on evidence. The rules are word lists, English and Chinese; everything else
passes through unchanged (a message in another language is its own need).
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable, Iterable
from itertools import pairwise
from typing import NamedTuple

from loomctx.text.lexical import tokenize

_ENDS = 2000
MAX_WORDS = 48
"""The most content words a need gathers from the sentences around what asks."""
LEANS = 2
"""What asks with fewer content words than this leans on the sentences around it."""
SHORT = 3
"""What asks with a pronoun for its subject and at most this many content words leans on what
was said before it ("how did they feel about it?"); a longer question carries its own subject
("What is the total time it takes me to get to work?")."""
TAIL_CHARS = 256
"""The most characters of a sentence's end a closing courtesy is looked for in (a longer
courtesy loses only its start: "… please please please")."""
LEADS = 3
"""The most clauses of small talk cut before what asks ("So, um, well, what …"): each is read
against the rest of the sentence, so a sentence of many commas costs a bounded number of reads."""
LEAD_WORDS = 8
"""The most words a request frame of any wording may have before the question word it
introduces ("Search our history for when …": :func:`_wh_framed`)."""
PERSON_WORDS = 8
"""What asks about a person it does not name ("what indoor activities have they pursued with
his girlfriend?") leans on what was said before it up to this many content words; a longer
question names its own subject."""

CHATTER = frozenset("""
hi hey hello hiya yo good great awesome cool nice fine ok okay
thanks thank thx ty cheers appreciate appreciated appreciation welcome glad happy pleased sorry
please pls sure yes yeah yep no nope alright right well hope hoping
helpful help helps helped quick question questions way btw anyway also again just really
lovely wonderful amazing perfect excellent brilliant fantastic superb hmm um uh oh ah wow lol
haha bye goodbye talk chat chatting catch doing going things everything
wanted wondering curious thinking thought checking bother bothering mind wait
something stuff bit little lot much many kind kinda sort sorta everyone guys friend buddy
assistant bot ai dear sir madam there answer answers reply explain explanation short detail
day week weekend today time last one another earlier back later soon night morning afternoon
evening
details sure double confused confusing basically honestly literally actually seriously
regarding concerning
你好 您好 嗨 谢谢 谢 感谢 多谢 好的 好 嗯 哈哈 早上好 晚上好 下午好 辛苦 麻烦 请 一下 那个 对了 顺便
问 问题 一个 再 还有 怎么样 不错 太好了 棒 打扰 抱歉 不好意思 有点 有些 懵 糊涂 突然 忙 快点 回复 回
那边 话说 话说回来 急 有个 事 事儿 事情 东西 快速 最后 刚刚 哈喽 有空 不急 解答
""".split())  # noqa: SIM905 (a word list reads best as text)
"""Words of small talk: a sentence with no content word outside these carries no need."""
_CHATTER_TERMS = frozenset(t for word in CHATTER for t in tokenize(word))  # stemmed as searched
ASKING = frozenset("""
ask asking tell remind show check double confirm look find search recall remember forget forgot
know question wonder curious refresh memory
问 查 找 搜 确认 提醒 告诉 回忆 记得 忘 想 帮 帮忙 个 下 了 知道 了解
之前 以前 上次 聊 聊过 说过 过 说 讨论 一句 句 忘记 记不清 想不起 想不起来 想到 记录 帮个
请问 请教 朋友 同事 同学 老板 领导 家人 印象
""".split())  # noqa: SIM905
"""Words of asking: a clause of these and small talk alone ("能 remind 我一下吗", "我有个
question") frames what another clause asks and names nothing itself."""
_ASKING_ALL = frozenset(t for word in ASKING for t in tokenize(word))
_ASKING_TERMS = _ASKING_ALL - _CHATTER_TERMS

_PLACE = (r"(?: (?:earlier|previous|past|old|recent))? (?:messages|chats|conversations?|history"
          r"|discussions?")
"""Where the conversation's past is kept, after "our", "the" …: a pattern left open for more."""
_FRAMES_EN = (
    r"(?:hi|hey|hello|ok(?:ay)?|so|well|also|and|oh|btw|by the way|anyway|quick question"
    r"|one more thing|actually|now|next|right|alright|great|thanks(?: in advance)?)\b[,!.:;-]*",
    # courtesy before the request ("I'd appreciate it if you could tell me …"): a frame only
    # with the request after it
    r"(?:(?:(?:i|we)(?:'d|’d| would| wud)|would|wud)(?: really| so)? (?:appreciate(?: it)?"
    r"|love it|be (?:so |really |very )?(?:grateful|thankful|glad|happy))|it(?:'d|’d| would)"
    r" be (?:great|nice|awesome|helpful|lovely|super helpful)) if (?:you|u)"
    r" (?:could|can|would|might|cud|wud)(?: please| kindly)?",
    # as a courtesy, only before a request ("I was hoping you could work out for me when …";
    # not "I was hoping you could join us")
    r"(?:i|we)(?:'m|’m| am| was|'re|’re| are| were)? (?:hoping|hoped) (?:that )?(?:you|u)"
    r" (?:could|can|would|might|cud|wud)(?= (?:please |kindly )?(?:tell|remind|show|give|let"
    r"|find|look|check|figure|work|recall|remember|pull|dig|confirm|refresh|say)\b)",
    r"(?:when(?:ever)?|if|once) you(?:'re|’re| are)? (?:can|(?:get|have|find) (?:a|the)"
    r"(?: spare| free| quick)? (?:chance|minute|moment|sec(?:ond)?|time)|(?:are )?free"
    r"|(?:don't|don’t|do not) mind)(?=\s*[,:;])",  # a condition on the listener's time,
    # a clause of its own ("When you get a chance, find out …"): courtesy; not "If you can't
    # find it, …", "If you have the time and want to …"
    r"(?:can|could|would|will) you (?:please |kindly )?(?:tell|remind|show|give|help|let"
    r"|say)"
    r" me(?: know)?(?: (?:about|with|of|on))?",
    r"(?:can|could|would|will) you (?:please |kindly )?(?:find out|look up|check|figure out"
    r"|recall|remember|pull up|dig up|confirm|say)(?: for me)?",
    r"(?:please |pls |kindly )?(?:tell|remind|show|give|let|say) me(?: know)?"
    r"(?: again)?(?: (?:about|with|of|on))?",
    r"(?:please |pls |kindly )?(?:find out|look up|check|figure out|recall|remember|pull up"
    r"|dig up|confirm|refresh my memory(?: on| about)?)(?: for me)?",
    r"(?:i|we)(?: really)?(?:(?: need| want| would like|'d like| would love|'d love| have) to"
    r"| wanna| gotta) (?:know|find out|check|double-check|confirm|verify|understand|hear"
    r"|figure out|look up)(?: about)?",  # not "remember": "I want to remember this day"
    r"(?:please |pls |kindly )?see if you (?:can|could)",  # with the request after it
    r"let(?:'s|’s| us) see if you (?:can )?(?:remember|recall|know)",
    r"i(?:'m| am) trying to (?:remember|recall|figure out|find out|work out)(?: about)?",
    r"i(?:'m| am) (?:wondering|curious|trying to remember|not sure|unsure|unclear|hazy|fuzzy"
    r"|foggy|blanking)(?: (?:about|on|as to))?",
    r"(?:my )?(?:brain|mind|memory)(?:'s|’s| is)(?: (?:a bit|totally|completely))? (?:hazy|fuzzy"
    r"|foggy|blanking|blank) (?:about|on|as to)",  # the asker's haziness, said of their mind
    r"i (?:was )?(?:wondering|wonder)(?: about| if| whether)?",
    r"(?:i|we)(?:'ve|’ve| have)(?: always| often| long)? (?:been (?:wondering|curious"
    r"|trying to (?:remember|recall|figure out|work out|find out))|wondered)"
    r"(?: about| if| whether)?",  # as "I was wondering"
    r"(?:please |pls |kindly )?(?:walk|talk|run) (?:me|us) through",  # explain, step by step
    r"do you (?:happen to )?(?:remember|recall|know)(?: about)?",
    r"(?:i have|i've got|i got) a (?:quick )?question(?: (?:about|on|for you))?",
    r"(?:any idea|no idea)",
    r"(?:please |pls |kindly )?(?:look|go|search|dig|read|scroll)(?: back)? (?:through|over"
    r"|in|into)(?: all)? (?:our|the|my|your)" + _PLACE + ")",  # where to look names nothing
    r"(?:from|based on|going (?:by|off)|according to|judging (?:by|from)) (?:(?:what|everything"
    r"|all)(?: that)? (?:i|we)(?:'ve|’ve| have)?(?: already| ever| just)? (?:told|said|shared"
    r"|mentioned|discussed|talked about|written)(?: (?:to|with))?(?: you)?(?: (?:earlier|before"
    r"|already|previously))?|(?:our|my|the)" + _PLACE + r"|notes))(?=\s*[,:;])",
    # where the answer is to come from, a clause of its own ("From what I've told you, can
    # you say …"; not "According to Gina, …")
    r"(?:this|that|here)(?: is my question)?:",
    r"please",
)
_FRAMES_ZH = (
    r"(?:请|麻烦|能不能|可以|你能|能否|能|帮忙)?(?:你)?(?:帮我|给我)?\s*"
    r"(?:查一下|查查|查|看一下|看看|找一下|找找|确认一下|回忆一下|说一下|讲一下|告诉我|提醒我"
    r"|check一下|check 一下)",
    r"我?(?:想|想要|需要|要)(?:知道|了解|确认|问问|问一下|问下|问)",
    r"(?:你还记得|你记得|还记得|记得)",
    r"我?(?:忘了|忘记了?|不记得了?|记不清了?|想不起来了?)",
    r"(?:请问|问一下|顺便问一下|对了)",
)
_FRAME = re.compile(
    r"^\s*(?:(?:" + "|".join(_FRAMES_EN) + r")(?:\b|(?<=:))\s*[,:;]?\s*)+", re.IGNORECASE)
_FRAME_ZH = re.compile(r"^\s*(?:(?:" + "|".join(_FRAMES_ZH) + r")\s*[,，:：]?\s*)+")
_TAIL = re.compile(
    r"(?:[,;]?\s*(?:please|pls|(?:thanks|thank you|thx)(?: in advance)?|cheers|(?:but |so |and )?"
    r"here goes|if you (?:can"
    r"|could|know|remember|have it|still have it|find it|don't mind)(?: (?:find|recall"
    r"|remember) it)?|for me"
    r"|by any chance|real quick)\b)+\s*[.!?]*\s*$", re.IGNORECASE)
_TAIL_ZH = re.compile(
    r"(?:[，,]?\s*(?:谢谢|谢了|多谢|麻烦了|好吗|可以吗|行吗|吧|呢|啊|呀)\s*)+[。！？!?]*\s*$"
    r"|(?<=[A-Za-z0-9])\s+吗\s*[？?]?\s*$")  # a question particle after English: "… group 吗？"


def _words(*words: str) -> re.Pattern[str]:
    """Any of ``words`` in a lowered text, for :func:`_may_hold` (one scan: a test per word
    took twice as long)."""
    return re.compile("|".join(map(re.escape, words)))


# A pattern anchored at the end is tried from every position of the text: each tail is cut
# only from a text that may hold one of its words, which every match needs (:func:`_may_hold`).
_TAIL_WORDS = _words("please", "pls", "thank", "thx", "cheers", "if you", "for me",
                     "by any chance", "real quick", "here goes")
_TAIL_ZH_CHARS = frozenset("谢麻吗吧呢啊呀")
_WH = "what|when|where|who|whom|whose|which|why|how"
"""The question words, as a pattern's alternatives."""
_WH_START = r"(?i:" + _WH + r")\b"
"""A question word after a colon starts a sentence, as a capital does ("Quick: what type of
vehicle am I working on"): what comes before the colon leads to it."""
_WH_AT = re.compile(_WH_START)
_SENTENCES = re.compile(  # a full-width comma or colon where the script switches ends a clause
    r"(?<=[.!?。！？…～])\s+|(?<=[。！？])"
    r"|(?<=[?!])(?=[（(]?[\u4e00-\u9fff])"  # "…?我需要…", "…?（我记得…）": no space needed
    r"|[\n\r]+|(?<=:)\s+(?=[A-Z]|" + _WH_START + r")|(?<=[，：；])\s*(?=[A-Za-z0-9])"
    r"|(?<=[A-Za-z0-9?!.])\s*[，：；]\s*(?=[\u4e00-\u9fff])"
    r"|(?<=[\u4e00-\u9fff])\s+(?=(?i:" + _WH + r"|did|does|do|is"
    r"|are|was|were|has|have|had|can|could|would|will|should)\b)")  # "我朋友问我 when did …"
_SENTENCES_ASCII = re.compile(
    r"(?=\s)(?:(?<=[.!?])\s+|[\n\r]+|(?<=:)\s+(?=[A-Z]|" + _WH_START + "))")
""":data:`_SENTENCES` less what needs a full-width mark: the same split of an ASCII text,
in a quarter of the time (every split starts at a blank: the guard skips other characters
before the lookbehinds are tried)."""
_QUESTION = re.compile(
    r"[?？]|^\W*(?:and\s+)?(?:what|when|where|who|which|why|how)\b|吗|呢|什么|哪|谁", re.IGNORECASE)
_FOLLOW = re.compile(r"(?:^\W*|[,;]\s*)(?:and|what about|how about|also)\b[^,;]*[?？]\s*$",
                     re.IGNORECASE)
_THINGS = (r"\b(?:it|its|those|these)\b|\b(?:on|about|with|of|for|from|to|in|at|by) that\b"
           r"|\bthat\W*$")
"""Words that point at a thing said before ("on that?": "that" as a pronoun only)."""
_LEANING = re.compile(
    r"\b(?:he|she|her|him|his|hers|they|them|their|theirs|latter|former)\b|" + _THINGS
    + r"|他|她|它|那|这", re.IGNORECASE)
_ONE = (  # "which one", "the second one"; "that event" after a question word or preposition
    r"\b(?:which|that|this|the same|the other|the (?:first|second|third|last|next|latest)) ones?\b"
    r"|\b(?:what|which|where|when|was|is|were|in|on|at|about|from|with|for|to|of) (?:that|those"
    r"|these) (?!(?:the|a|an|i|you|we|he|she|they|it|my|your|our|their|is|was|are|were|all)\b)"
    r"[a-z]")
_POINTING = re.compile(  # at a thing or place, not a person; "there" as a place ("earn
    # there"), not "is there", "there are"
    _THINGS + "|" + _ONE + r"|(?<!\bis )(?<!\bare )(?<!\bwas )(?<!\bwere )\bthere\b"
    r"(?!\s+(?:is|are|was|were|be|been|will|would|'s|’s)\b)", re.IGNORECASE)
_POINT_WORDS = frozenset({"it", "its", "those", "these", "that", "one", "ones", "there"})
"""Every match of :data:`_POINTING` is one of these words, bounded on both sides."""
_WORD = re.compile(r"\w+")
_PERSON = re.compile(r"\b(?:he|she|him|his|her|hers|they|them|their|theirs)\b", re.IGNORECASE)
_OWN_PAST = re.compile(r"\b(?:did|have|had|was|were)\s+(?:i|we)\b|\b(?:i|we)\s+(?:did|went|had|was"
                       r"|were)\b", re.IGNORECASE)
"""The asker's own past ("what did I do this morning?", "when did we last go out in the
evening?"): a question about it is no small talk, whatever words it uses."""
_NO_TOPIC = (r"(?:\s+(?:you|me|us))?\s+(?:it|this|that)(?:\s+(?:to|with)\s+(?:you|me|us))?"
             r"(?:\s+(?:at some point|before|earlier|already|once|last time|previously"
             r"|a while (?:ago|back)))?\s*(?:[.,;!?]|$)")
"""What a pointer at the past says when it names no topic ("I'm sure I mentioned it to you at
some point."): "it" is what the question beside it asks about, which names its own."""
_PAST = re.compile(  # a sentence that points at something said before, by its topic
    r"\b(?:previous|earlier|last|other) (?:conversation|chat|discussion|session|talk|game|time)s?"
    r"\b.*\b(?:about|on|regarding|where)\b|\b(?:i|you) (?:told|mentioned|said|shared|gave"
    r"|provided|recommended|suggested|listed|sent|wrote)\b(?!" + _NO_TOPIC + ")"
    r"|上次|之前|以前|刚才|你说|我说过",
    re.IGNORECASE)
_TIME = r"(?:the|this|that|my|our)\s+(?:day|week|weekend|morning|afternoon|evening|night)s?\b"
_TIME_TOPIC = re.compile(r"\b(?:about|regarding|concerning|re|on|to)\s+(" + _TIME + ")",
                         re.IGNORECASE)
"""A part of the day or week as what a turn is about ("Going back to the evening."): the
words are small talk in a greeting, the topic here (not "Have a nice evening.")."""
_ASKER = re.compile(r"\b(?:i|we|me|us|my|our)\b", re.IGNORECASE)
_TIME_AT = re.compile(r"\b" + _TIME, re.IGNORECASE)
_TIME_ALONE = re.compile(r"\W*(" + _TIME + r")\W*", re.IGNORECASE)
_BREAK = re.compile("\n")  # what "." in a pattern does not cross
_TIME_WORDS = _words("day", "week", "morning", "afternoon", "evening", "night")
"""Every match of :data:`_TIME` holds one of these."""
_DIGITS = re.compile(r"[0-9]")
_POINTER = re.compile(  # "I wanted to follow up on our previous conversation about": the topic
    r"^\W*(?:(?:i|we)(?:'m|'re|\s+am|\s+are|\s+was|\s+were)?\s+(?:just\s+)?"
    r"(?:(?:wanted|want|would like|'d like|was hoping|hoped)\s+to\s+)?|so\s+)?"
    r"(?:follow(?:ing)?\s+up|go(?:ing)?\s+back|circl(?:e|ing)\s+back|return(?:ing)?"
    r"|get(?:ting)?\s+back|com(?:e|ing)\s+back)\s+(?:on|to)\s+(?:our|the|my|that|your)\s+"
    r"(?:previous|earlier|last|other|past|recent)\s+(?:conversation|chat|discussion|session|talk)"
    r"\s+(?:about|on|regarding|where|in which|when)\s+", re.IGNORECASE)
_TALK = ("conversation", "chat", "discussion", "session", "talk")
_TALK_WORDS = _words(*_TALK)
"""Every match of :data:`_POINTER` holds one of these."""
_PAST_WORDS = _words(*_TALK, "game", "time", "told", "mentioned", "said", "shared", "gave",
                     "provided", "recommended", "suggested", "listed", "sent", "wrote")
"""Every match of :data:`_PAST` in an ASCII text holds one of these."""
_AGAIN = re.compile(  # a statement that points back at what was done or said before
    r"\b(?:same|usual|again|as before|like before|last time|as (?:discussed|agreed|planned)"
    r"|we (?:decided|agreed|picked|chose|settled|discussed))\b|照旧|老样子|一样|还是那",
    re.IGNORECASE)
_CODE = re.compile(r"[A-Za-z]-?\d|\d-?[A-Za-z]")  # SHP-40233, A1001, 27th
_HAN = re.compile(r"[\u4e00-\u9fff]")
_PRONOUNS = frozenset({"I", "I'm", "I've", "I'd", "I'll", "Im", "Ive", "OK", "Ok"})
"""The capitals that name no one: the asker (also as texted, "Im stuck inside"), "OK"."""
_DATES = _PRONOUNS | frozenset("""
January February March April May June July August September October November December
Monday Tuesday Wednesday Thursday Friday Saturday Sunday
""".split())  # noqa: SIM905
"""The capitals a question alone is read past: pronouns, and months and weekdays, which name a
time, not a subject ("when did they go to a pride parade in August?" leans on who "they" are)."""
_ABBREVIATION = re.compile(r"(?:\b(?:dr|mr|mrs|ms|st|mt|jr|sr|vs|etc|e\.g|i\.e|no)|\b[A-Z])\.$",
                           re.IGNORECASE)
_AUX = (r"(?:did|does|do|is|are|was|were|has|have|had|can|could|would|will|should|shall|may"
        r"|might|am)\b")
_ASKS_START = re.compile(  # what asks at a message's start (used with ``match``); the lead
    # is bounded: "????…" tried as every split into marks and words took seconds
    _AUX
    + r"|\W{0,16}(?:\S{1,40}\s+){0,4}?(?:tell|remind|know|find|look|check|recall|remember|confirm"
    r"|figure|wonder|wondering|curious|ask|asking)\b"  # a request for what is known, up front
    r"|\W*(?:please\s+)?(?:suggest|recommend|list|name|summari[sz]e|describe|explain|give|share"
    r"|show|compare)\b",  # a request to be answered
    re.IGNORECASE)
_ASKS = re.compile(  # what asks anywhere without a question word
    r"[?？]|[,;:，：]\s*" + _AUX
    + r"|什么|哪|谁|几|多少|吗|呢|怎么|为什么|为何|是否|有没有|是不是|告诉|提醒|想知道|查|问|记得",
    re.IGNORECASE)
_NOT_SUBJECT = (r"(?!(?:i|you|we|they|he|she|it|to|not|can|could|will|would|should|may|might"
                r"|must|the|a|an|this|that|these|those|my|your|his|her|our|their|its)\b)")
_NAME = r"(?-i:[A-Z][a-z]+)\b"
"""A name as a subject: a capital word ("Andrew", "Andrew's dog")."""
_DIRECT = re.compile(
    r"(?:(?:what|when|where|who|whom|which|why|how)(?:\s+(?:many|much|long|often|far|old))?"
    r"(?:(?:\s+" + _NOT_SUBJECT + r"[\w'’-]+){0,3}\s+(?:did|does|do)\s+(?!not\b)\w"
    r"|(?:\s+" + _NOT_SUBJECT + r"[\w'’-]+){0,4}\s+(?-i:am|is|are|was|were|have|has|had|can"
    r"|could|will|would|should)\s+(?:i|we|you|he|she|they)\b"
    r"|(?:\s+" + _NOT_SUBJECT + r"[\w'’-]+){0,4}\s+(?-i:has|have|had|can|could|will|would"
    r"|should)\s+" + _NAME + ")"
    r"|(?:what|when|where|how)\s+(?-i:is|are|was|were)\s+" + _NAME
    + r"|(?<!\bin )(?<!\bof )(?<!\bto )(?<!\bat )(?<!\bon )(?<!\bfor )"
    r"(?:what|when|where|why|how(?:\s+(?:many|much|long|often|far|old))?)\s+(?-i:is|are|was"
    r"|were)\s+(?:the|my|our|your)\s+\w)", re.IGNORECASE)
"""A question asked as such: a question word, at most three words that are no pronoun, article
or verb, then "did", "does" or "do" ("when did Caroline go …", "how many hours in total did I
spend …", "what pet does she have"); or at most four such words, then another verb before a
pronoun as its subject ("what type of vehicle model am I working on", "how long have I been
…"), or one that is not "is" or "was" before a name ("what kind of places have Andrew …"; not
"who was Chairman of …", "which is The North Face …"); or "what", "when", "where" or "how"
before "is" or "was" and a name ("when is Andrew going …"), "the", "my", "our" or "your"
("what is the total time …", "where was my …"; "why" too). Not a clause ("what I did",
"what connections can do", "customers who do not want", "how to do it", "my friend who is a
fan of …", "which is a …", "who has the …": a relative "who" or "which" before "is" is as often
a clause as a question; nor "how much technology has advanced", which exclaims as often as it
asks; nor "in what was the first …", "Who Am I", "Where Are My Records": after a preposition or
with a capital verb, a clause or a title)."""
_INTERJECTIONS = (
    "and", "so", "but", "ok", "okay", "also", "then", "now", "hey", "hi", "um", "uh", "oh", "well",
    "yeah", "right", "anyway", "btw", "wait", "hmm", "actually", "sorry", "listen")
"""Sounds and joining words a question may start with ("hey so um what was …")."""
_ASKS_WH = re.compile(  # what asks with a question word (or "if", "whether")
    r"^\W*(?:(?:" + "|".join(_INTERJECTIONS) + r")\W+){0,3}(?:according to [^,]{1,40},\s*)?"
    r"(?:(?:in|on|at|for|from|to|with|by|around|during|since|of|about|after|before|between"
    r"|over|under|through|within|across|among|into|against|towards?|beyond|until|upon"
    r"|throughout|per|via)\s+)?"
    r"(?:" + _WH + r"|whats|wheres|whos|hows)\b"  # a question
    # ("Over how many …", "hey so um what was …", "whats the gate code");
    # one inside a sentence is asked by a verb of knowing:
    r"|\b(?:know|lmk|tell|remind|recall|remember|sure|wonder|wondering|ask|asking|out|check|confirm"
    r"|idea|hear|forget|forgot|forgotten|forgetting|remembering|recalling|unsure|clue)\b"
    r"(?:\W+\w+){0,2}?\W+(?:what|when|where"
    r"|who|whom|whose|which|why|how|if|whether)\b"  # "I forget when she went"; "a library
    # for when I have kids" asks nothing
    r"|[,;:–—-]\s*(?:what|when|where|why|how)\s+(?:is|are|was|were|did|do|does|has|have|had"
    r"|can|could|would|will|should)\b"  # "the dentist appointment, when is it again" (not
    # ", which is near the station")
    r"|\b(?:what|when|where|who|which|how|whether)\s+to\s+\w"  # "what to tell the customer"
    r"|\b(?:is|are|was|were|has|have|had|won|in|on|at|for|from|by|under|since|until|during|of"
    r"|with|(?:known|called|named|described|served|ranked|listed|billed|regarded)\s+as)\s+"
    r"(?:what|which|whose|how many|how much)\s+(?!(?:is|are|was|were|i|you|we|he|she|they|it"
    r"|the|a|an|my|your|our|his|her|their|its|this|that|these|those)\b)\w"
    # asked in place: "she moved to Lyon in what year", "known as what from 1988" (not "here
    # is what my app exported", "such as which products they buy")
    r"|\b(?:by|from|with|to|for|at|in|on)\s+(?:who|whom|what|where|which)"
    r"(?:\s+(?:pls|please|plz|exactly|again))?\W*$"  # last: "the group was formed by who"
    r"|\b" + _DIRECT.pattern,  # a question asked as such inside a sentence ("I'm blanking on
    # when did …")
    re.IGNORECASE)
_ASKS_ASCII = re.compile(r"[?]|[,;:]\s*" + _AUX, re.IGNORECASE)
""":data:`_ASKS` less what needs a character outside ASCII: the same search of an ASCII text."""
_ASKS_WANT = re.compile(  # what asks for something the asker needs or lost
    r"(?:^\W*|\b(?:i|we)\s+(?:really\s+|also\s+|still\s+)?)(?:need|want|would like|'d like)"
    r"\s+(?:the|our|my|your|his|her|their|a|an|some|all|any|to know|to see|to check|to find)\b"
    r"|\b(?:i|we)\s+(?:forgot|forget|can't remember|cannot remember|don't remember|lost)\s+"
    r"(?:the|our)\b",  # "i forgot the wifi password we set up" (not "I forgot my umbrella")
    re.IGNORECASE)
_WANT_WORDS = frozenset({"need", "want", "like", "forgot", "forget", "remember", "lost"})
"""Every match of :data:`_ASKS_WANT` holds one of these as a word of its own."""
_WH_WORDS = frozenset("""
what when where who whom whose which why how whats wheres whos hows if whether
""".split())  # noqa: SIM905
"""Every match of :data:`_ASKS_WH` holds one of these as a word of its own: the pattern, slow
to scan, is tried only on a text that does (or that is not ASCII, lowered exactly)."""


def _asks(text: str) -> bool:
    """Whether ``text`` reads as a question or a request (:data:`_ASKS_START`, :data:`_ASKS`,
    :data:`_ASKS_WANT`, :data:`_ASKS_WH`)."""
    if _ASKS_START.match(text) or (_ASKS_ASCII if text.isascii() else _ASKS).search(text):
        return True
    if not text.isascii():
        return bool(_ASKS_WANT.search(text) or _ASKS_WH.search(text))
    words = _WORD.findall(text.lower())
    return bool((not _WANT_WORDS.isdisjoint(words) and _ASKS_WANT.search(text))
                or (not _WH_WORDS.isdisjoint(words) and _ASKS_WH.search(text)))


def _asking(sentence: str, text: str, framed: bool) -> bool:
    """Whether a sentence asks: a request frame was cut from it, or it reads as a question
    as written or without its lead ("Anyway, what did …")."""
    return framed or _asks(sentence) or (text != sentence.strip() and _asks(text))


def _content(sentence: str) -> list[str]:
    """The sentence's content words that are not small talk."""
    return [w for w in tokenize(sentence, drop_stopwords=True) if w not in _CHATTER_TERMS]


_DAYS = frozenset(t for w in ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday",
                              "sunday") for t in tokenize(w))
_GREETS = frozenset(t for w in ("happy", "ugh", "finally", "yay", "hooray", "tgif")
                    for t in tokenize(w))


def _only_a_day(sentence: str, content: list[str]) -> bool:
    """Whether a sentence that does not ask only greets or sighs at a weekday ("Happy Friday!",
    "Ugh, Mondays."): its content words weekdays, said with a word of greeting or sighing (not
    "On Monday.", "We met on Monday.", which say when, or "Thinking about Fridays again.", a
    topic)."""
    return all(w in _DAYS or w in _GREETS for w in content) and any(
        w in _DAYS for w in content) and any(w in _GREETS for w in tokenize(sentence))


_FRAMES_ASK = re.compile(
    r"tell|remind|show|give|let|find|look|check|figure|recall|remember|pull|dig|confirm"
    r"|refresh|know|wonder|curious|question|idea|through|查|看|找|确认|回忆|说|讲|告诉|提醒|知道|了解|问|记得",
    re.IGNORECASE)
"""A request frame that asks holds one of these (a frame cut from "Thanks so much!" does not)."""


_WH_LEAD = re.compile(
    r"(?:[^\W\d_][\w'’-]*\s+){0," + str(LEAD_WORDS - 1) + r"}?[^\W\d_][\w'’-]*"
    r"(?:\s*[:：]\s*|,?\s+(?=(?:" + _WH + r"|whether)\b))",
    re.IGNORECASE)
_LEAD_SPLIT = re.compile(r"[\s'’-]+")
_FRAME_ASKING = ASKING | frozenset("""
jog reminder refresher recap verify pull dig fetch retrieve lookup clarify figure work hunt track
fill pin nail fish think dredge suss piece
""".split())  # noqa: SIM905 (a word list reads best as text)
"""Words that ask in a request frame of any wording (:func:`_wh_framed`), and their -ing forms
(:func:`_base`)."""
_FRAME_WORDS = _FRAME_ASKING | frozenset(["need", "want", "wanna", "try", "trying", "tried",
                                          "quickly", "briefly", "favour", "favor", "history",
                                          "records", "chats", "messages", "conversation",
                                          "conversations", "notes", "together"])
"""Words a request frame of any wording is made of, besides small talk and words that only
join: where to look names nothing ("Fish out of our chats how long …")."""
_FRAME_ALONE = frozenset("""
tell remind check confirm verify recall remember recap clarify find search refresh
""".split())  # noqa: SIM905
"""The words that are a request frame alone ("Confirm when …"; not "Look how cute it is")."""
_PARTICLES = {"look": {"up", "into", "through", "over", "for"}, "show": {"me", "us"},
              "figure": {"out"}, "work": {"out", "through"}, "think": {"through"},
              "fill": {"me", "us"}, "hunt": {"down"}, "track": {"down"}, "pin": {"down"},
              "nail": {"down"}, "fish": {"out", "up"}, "dredge": {"up"},
              "piece": {"together"}}
"""Words that ask only with one of these after them ("Look into when …", "Show me where …",
"Help me pin down when …", "Help me work through where …", "Fish out of our chats how long
…", "Dredge up where …", "Trying to piece together what …"; not "Look at how my car looks",
"Show how their actions affect …", "Help me pin where the poster goes", "I think what matters
is …")."""
_YOU_AND_DETERMINERS = frozenset("""
you you're you'd you'll u ur the a an my our your his her their
""".split())  # noqa: SIM905
_TEXTED = frozenset("""
u ur ya wud cud shud r
""".split())  # noqa: SIM905
"""Words that only join, as people text them ("wud u mind checkin when …")."""
_ASKERS = frozenset(["i", "i'm", "i've", "i'd", "we", "we're"])
"""The asker as a lead's subject ("I was trying to work out when …")."""
_NOT_FRAME_START = _YOU_AND_DETERMINERS | _ASKERS | {"i'll", "i’ll", "we'll", "we’ll"}
"""A lead that starts with a subject, a determiner or a promise says something ("I know what you
mean", "The Wonder Who?", "We'll figure out what went wrong"); it frames nothing, but "I need
…", "I forgot …" and the asker setting out to find out (:func:`_to_find_out`) do."""
_FIND_OUT = frozenset("""
know find check confirm verify recall remember figure work look dig hunt track search clarify pin
nail
""".split())  # noqa: SIM905
"""The verbs of finding out that, after "to", make a lead of the asker's a request ("I was
trying to work out when …", "I have to know where …"; not "I know what you mean")."""
_NOT_DIRECT_START = _YOU_AND_DETERMINERS | frozenset("""
about on in at for from to with of by regarding re concerning as after before during since around
between over under through within across among into against toward towards beyond until upon
throughout per via
""".split())  # noqa: SIM905
"""A lead before a question asked as such that starts with one of these is a topic or a thing
("For the camping trip when did we leave?", "You told me when did …"), not a frame; the asker
may lead it ("I'm blanking on when did …")."""
_NOT_IN_FRAME = frozenset("""
it it's its they they're he she neither both either everyone everybody someone somebody nobody
people this that that's these those there
""".split())  # noqa: SIM905
"""Someone or something a lead speaks of ("It reminds me why …", "neither of them really know
what …"): such a lead tells, it does not ask."""


_SOUNDS = frozenset("""
lol haha hmm um uh oh ok okay anyway anyways btw hey hi hello hiya yeah yep yes wow cool thanks thx
ty cheers alright sorry
""".split())  # noqa: SIM905 (a word list reads best as text)
"""Sounds that never join a sentence to the one before (:data:`_SOUND_STARTS`)."""
_LEAD_CHATTER = frozenset(_INTERJECTIONS) | _SOUNDS | frozenset("""
yo ah basically honestly nice great good thank quick quickly one real just again pls please
""".split())  # noqa: SIM905 (a word list reads best as text)
"""Words that lead a question as a sound or a courtesy, not as a verb ("quick one what …", "ok so
when …"; not "Appreciate what you've got", "Explain why …", "Doing what you love …")."""


_CHATTER_LED = re.compile(
    r"\W*((?:(?:" + "|".join(sorted(_LEAD_CHATTER)) + r")[,!]?\s+){1,3}?)"
    r"(?=(?:" + _WH + r")\s+(?!(?:a|an)\s)\w|(?-i:" + _AUX + r")\s+"
    r"(?:i|you|we|he|she|they|(?-i:[A-Z])\w*)\s)", re.IGNORECASE)
"""A lead of at most three words before a question at a sentence's start: a question word (not
"what a …", which exclaims) or a verb before a person ("quick one did Andrew …", "quick one, how
many years passed …", "quick one can you recommend …", "ok is Caroline …"; not "So much has
happened", "There were 7 …", "sorry is that ok", nor a title, "Great Are You Lord")."""


_SOUND_STARTS = re.compile(
    r"\W*(?:" + "|".join(sorted(_SOUNDS)) + r")[,!]?\s+(?:(?-i:[A-Z])|(?:" + _WH
    + r")\s+(?!(?:a|an)\s)\w)", re.IGNORECASE)
"""A sound before a capital or a question word: after a full stop, a new sentence typed in lower
case ("… all day lol. anyway Can you …", "… lol. ok when did …"); a joining word goes on ("Co.
and Crede Capital", "Inc. so that …")."""


def _chatter_led(text: str) -> str | None:
    """What ``text`` asks after a lead of sounds and courtesy alone (:data:`_LEAD_CHATTER`:
    "quick one what kind of places have Andrew … checked out", "hey hey did Andrew …"), or
    None; only when what follows asks about something (a content word: "hey how are you" asks
    nothing to look up, and would make the sentence after it ask)."""
    led = _CHATTER_LED.match(text)
    if led is None or led.group(1)[:4].lower() in ("one ", "one,"):  # "One who …": a subject
        return None
    rest = text[led.end(1):]
    return rest if _content(rest) else None


def _wh_framed(text: str) -> str | None:
    """What ``text`` asks after a request frame of any wording, or None. The frame is a lead of
    at most :data:`LEAD_WORDS` words right before a question word or a colon, made only of
    :data:`_FRAME_WORDS`, small talk and words that only join, and asking with one of them
    ("Jog my memory on when …", "Search our history for where …", "Double-check: according to
    Gina, what …"); before a question asked as such (:data:`_DIRECT`), any plain lead ("Hunt
    down when did …"). A lead that names anything (a capital past its first word), holds a
    question word, says something (a subject: "It reminds me why …"; the asker only when it
    sets out to find out, "I was trying to work out when …"), is a topic ("For the camping
    trip when did …") or exclaims ("Look how dark it was!") stays."""
    if (led := _chatter_led(text)) is not None:
        return led
    lead = _WH_LEAD.match(text)  # anchored and at most LEAD_WORDS words: no scan of the text
    if lead is None or lead.end() == len(text) or text.rstrip().endswith("!"):
        return None
    said = lead.group(0).rstrip(" :：,")
    if _capitals(said):
        return None
    lowered = said.lower()
    spaced = lowered.split()
    words = [_base(w) for w in _LEAD_SPLIT.split(lowered) if w]
    if not (_NOT_IN_FRAME.isdisjoint(spaced) and _WH_WORDS.isdisjoint(words)):
        return None
    rest = text[lead.end():]
    if _DIRECT.match(text, lead.end()) and "," not in lead.group(0):  # a question asked as
        # such (matched with the lead in view: "in what was …" is a clause): what leads to it
        # only frames it, however it is worded ("Hunt down when did …", "I'm blanking on when
        # did …"), unless it is a topic, a number or a thing said ("For the camping trip when
        # did …") or asks about nothing ("cool how are you?"); a clause before a comma is only
        # a frame of asking words ("Just checking, what …"; not "Other than racing, what sport
        # does …")
        return None if spaced[0] in _NOT_DIRECT_START or _DIGITS.search(said) \
            or not _content(rest) else rest
    if spaced[0] in _NOT_FRAME_START and spaced[1:2] not in (["need"], ["forgot"]) and not (
            spaced[0] in _ASKERS and _to_find_out(words)):
        return None
    if len(words) == 1 and words[0] not in _FRAME_ALONE:
        return None
    if not all(w in _FRAME_WORDS or w in CHATTER or w in _TEXTED
               or not tokenize(w, drop_stopwords=True) for w in words):
        return None
    asks = any(w in _FRAME_ASKING and (w not in _PARTICLES or (
        i + 1 < len(words) and words[i + 1] in _PARTICLES[w])) for i, w in enumerate(words))
    return rest if asks else None


def _base(word: str) -> str:
    """An -ing form of a word of :data:`_FRAME_ASKING` as that word ("looking", "digging",
    "figuring", and as texted, "checkin"); any other word as it is."""
    if word in _FRAME_ASKING or not word.endswith(("ing", "in")):
        return word
    stem = word[:-3] if word.endswith("ing") else word[:-2]
    for base in (stem, stem + "e", stem[:-1]):  # look-ing, figur-ing, dig-g-ing
        if base in _FRAME_ASKING:
            return base
    return word


def _to_find_out(words: list[str]) -> bool:
    """Whether ``words`` hold "to" before a verb of finding out (:data:`_FIND_OUT`; one that
    asks only with its particle, "work out", is held to it where the lead's asking is read)."""
    return any(a == "to" and b in _FIND_OUT for a, b in pairwise(words))


def _unframed(sentence: str) -> tuple[str, bool]:
    """The sentence without its request frame and closing courtesy; whether a frame was cut."""
    s = sentence.strip()
    cut = _FRAME.sub("", s, count=1)
    if not cut.isascii():  # every Chinese frame holds a Han character
        cut = _FRAME_ZH.sub("", cut, count=1)
    framed = cut != s and bool(_FRAMES_ASK.search(s[:len(s) - len(cut)]))
    for _ in range(LEADS):  # a frame after a frame: "Help me remember: do you remember what …"
        asked = _wh_framed(cut)
        if asked is None:
            break
        cut, framed = asked, True
    # a closing courtesy is short: the patterns anchored at the end are tried from each
    # position of the text's last TAIL_CHARS only, not of all of it
    if _may_hold(cut[-TAIL_CHARS:], _TAIL_WORDS):
        cut = cut[:-TAIL_CHARS] + _TAIL.sub("", cut[-TAIL_CHARS:])
    if not _TAIL_ZH_CHARS.isdisjoint(cut[-TAIL_CHARS:]):
        cut = cut[:-TAIL_CHARS] + _TAIL_ZH.sub("", cut[-TAIL_CHARS:])
    return cut.strip(), framed


_MARKERS = frozenset(["i mean", "you know", "i guess"])
"""Clauses that only mark what follows as said again or said loosely ("I mean, when did she
…"): a lead of small talk, whatever their words."""
_CLAUSE_END = re.compile(r"(?<!\s)\s*(?:[,;:]|\s[-–—]+|[–—]+)\s*")
"""Where a clause ends inside a sentence: a comma, colon or semicolon, or a dash (a match
starts only where a run of blanks does: tried from each blank of a long run, a search would
read the run to its end from every one)."""


def _unled(text: str, follows: Callable[[str], object] | None = None) -> str:
    """``text`` without the clauses before what asks that hold only small talk and words of
    asking ("Hmm, when did …", "Quick one — what …", "Asking for a friend: where …"); a
    lead that names or says anything ("In 2019, who …", "For the camping trip, when …"),
    points at someone or something ("They, a French director, made …") or holds a question
    word ("What, known as AAS, is …") stays. Only a sentence that asks is read so:
    "Wow, what a photo!" keeps its words. ``follows``: what the rest must be instead of asking
    (a pointer at the past: "Quick one — I wanted to follow up on our chat about …")."""
    for _ in range(LEADS):
        end = _CLAUSE_END.search(text)
        if end is None or end.start() == 0:
            return text
        lead, rest = text[:end.start()], text[end.end():]
        if not rest or (lead.strip().lower() not in _MARKERS and (
                any(w not in _ASKING_TERMS for w in _content(lead))
                or _holds_wh(lead)
                or _LEANING.search(lead))) or not (follows or _asks)(rest):
            return text
        text = rest
        if follows is None and (asked := _wh_framed(text)) is not None:
            return asked  # "I forgot, remind me when …": the frame after the small talk
            # (:func:`_unframed` read the text before any clause went)
    return text


_PAREN_END = re.compile(r"\(([^()]*)\)[\s.!?]*$")
"""A closing aside in parentheses ("… (asking for a friend)"); no blank before "(" in the
pattern: a search tried from each blank of a long run would read the run to its end."""
_PROMISE = re.compile(r"\b(?:i|we)(?:'ll|’ll| will| shall)\b", re.IGNORECASE)
"""A clause where the speaker promises ("…, I'll be sure to let you know") says something."""
_TAIL_ASKS = re.compile(
    r"\b(?:tell|remind|show|check|confirm|recall|remember|find|look|dig|pull|refresh)\b"
    r"|\bdo you (?:happen to )?know\b|\bany idea\b", re.IGNORECASE)
"""What makes a request frame after a statement ask for it ("The carrier for SHP-40233 -
remind me"; not "If you need any help, let me know", an offer)."""


_ANY_IDEA = re.compile(r"\s*(?:(?:got|have you got|do you have)\s+)?any\s+ideas?\W*",
                       re.IGNORECASE)
"""A closing "any idea" asks as "do you know" does (the word "idea" is no word of asking:
"Do you think that's a good idea?" asks about it)."""


def _untailed(text: str, framed: bool) -> tuple[str, bool, bool]:
    """``text`` without the clauses after it that hold only words of asking and small talk,
    after a comma, colon or dash or in parentheses ("… - remind me", "…, can you check",
    "…, do you know", "… (asking for a friend)"): they frame what comes before them and name
    nothing, as a request frame before it does; and whether such a clause asked for what is
    left ("The carrier for SHP-40233 - remind me"). Only after what asks (or was framed) or
    as a request frame: "I went there, you know" stays. A clause that names or says anything
    ("…, the lake one", "…, in 2022", "…, she said"), promises ("…, I'll let you know"), holds
    a question word ("…, and do you know why") or no word of asking ("…, right?" is a tag, not
    a frame) stays. The asker's haziness so placed ("…, i cant remember rn") goes too, as it does
    as a sentence of its own; the last value says whether it did."""
    tail_asks = hazy = False
    for _ in range(LEADS):
        stripped = text.rstrip(" .!?")
        paren = _PAREN_END.search(text) if stripped.endswith(")") else None
        if paren is not None:
            start, tail = paren.start(), paren.group(1)
        else:
            end = None
            for end in _CLAUSE_END.finditer(stripped):  # noqa: B007 (the last one is wanted)
                pass
            if end is None:
                break
            start, tail = end.start(), stripped[end.end():]
        head = text[:start].rstrip()
        if paren is None and _HAZY.match(tail) and len(_content(tail)) <= SHORT \
                and not _names(tail) and (framed or _asks(head)):
            text, hazy = head, True
            continue
        if paren is None and head and _ANY_IDEA.fullmatch(tail):
            text, tail_asks = head, True  # "… - any idea": a frame, as "…, do you know"
            continue
        words = tokenize(tail, drop_stopwords=True)
        if _ASKING_ALL.isdisjoint(words) or any(
                w not in _ASKING_ALL and w not in _CHATTER_TERMS for w in words) \
                or _holds_wh(tail) or _PROMISE.search(tail):
            break
        frame = not _FRAME.sub("", tail, count=1).strip(" .!?") and bool(_TAIL_ASKS.search(tail))
        if not (framed or frame or _asks(head)):
            break
        text, tail_asks = head, tail_asks or frame
    return text, tail_asks, hazy


class Need(NamedTuple):
    """What a message needs: the text retrieval searches for, and whether the message asks
    (a request frame, an interrogative word or a question mark in what it needs)."""

    text: str
    asks: bool
    leans: bool = False
    """What asks names nothing of its own ("how did they feel about it?"): it means something
    only with what was said before it (:func:`with_before`)."""
    refers: bool = False
    """What asks points at a thing or place ("it", "that", "there"), whatever else it names ("how
    much did I earn there last Thursday?"): after a turn that only named a topic ("You know
    SaveMart, right."), that topic is what it points at (:func:`with_before`)."""


def need_text(message: str) -> str:
    """The part of ``message`` that carries its need (empty for small talk alone)."""
    return need_of(message).text


def _sentences(message: str) -> list[str]:
    """The message's sentences (clauses where the script switches)."""
    sentences: list[str] = []
    for part in (_SENTENCES_ASCII if message.isascii() else _SENTENCES).split(message):
        if not part or not part.strip():
            continue
        if sentences and _goes_on(sentences[-1], part):  # "Dr. Seuss", "Op. 5", "Story... is"
            sentences[-1] += " " + part
        else:
            sentences.append(part)
    return sentences


def need_of(message: str) -> Need:
    """The part of ``message`` that carries its need, and whether it asks."""
    if len(message) > 2 * _ENDS:  # a pasted log or document: the ask is at its start or end
        message = message[:_ENDS] + "\n" + message[-_ENDS:]
    sentences = _sentences(message)
    if not sentences:
        return Need("", False)
    kept: list[tuple[str, bool, int, bool]] = []
    framing: list[bool] = []  # per kept sentence: it only frames what another one asks
    said: list[str] = []  # per kept sentence: the sentence as written
    asked = False  # the sentence before was a request frame alone ("Check for me:")
    hazy = False  # the asker said after a question that they cannot recall it
    for sentence in sentences:
        if kept and kept[-1][1] and _HAZY.match(sentence) \
                and len(_content(sentence)) <= SHORT and not _names(sentence):
            hazy = True  # "… in March? can't quite place it": no question, but what is asked
            continue  # was said before (it points back, as "it" or "that" does)
        text, framed = _unframed(sentence)
        asks = _asking(sentence, text, framed) or asked
        if asks:  # "Hmm, when …", "Quick one — what …": the lead goes, not what asks
            text = _unled(text)
        # "… - remind me": so does a frame after it; "…, i cant remember rn": it was said before
        text, tail_asks, hazy_tail = _untailed(text, framed)
        hazy = hazy or hazy_tail
        asks = asks or tail_asks
        content = _content(text)
        if not asks and content and _only_a_day(sentence, content):
            content = []  # "Happy Friday!", "Ugh, Mondays.": small talk about the day
        # a request frame alone ("Check for me:"), or a lead of small talk and words of
        # asking that asks and introduces what follows ("quick check 一下："; not "I'll
        # check those out."): what follows is what it asks
        asked = not content and (framed or (
            asks and text.rstrip().endswith((":", "：", "-", "—", "–"))
            and not _ASKING_ALL.isdisjoint(tokenize(text))))
        if content or (_QUESTION.search(sentence) and (
                _LEANING.search(text) or _OWN_PAST.search(text) or _own_time(text))) \
                or _FOLLOW.search(sentence) \
                or _time_topic(text):  # "What about her?", "And the week?", "About the evening."
            # what the pointer at the past is about, after any small talk before it (looked
            # for only where the pointer's words are)
            topic = _POINTER.sub("", _unled(text, _POINTER.match)) \
                if _may_hold(text, _TALK_WORDS) else text
            kept.append((topic or text, asks, len(content), _names(text)))
            framing.append(bool(content) and all(w in _ASKING_TERMS for w in content))
            said.append(sentence)
        elif kept and _QUESTION.search(sentence) and _HAN.match(sentence.lstrip()) \
                and re.search(r"[A-Za-z0-9]\W*$", kept[-1][0]):  # "… pickup，怎么样了？"
            kept[-1] = (*kept[-1][:1], True, *kept[-1][2:])
    if asked and kept and _HAN.search(sentences[-1]):  # a Chinese request frame alone last
        kept[-1] = (*kept[-1][:1], True, *kept[-1][2:])  # ("…，能告诉我吗") asks what it follows
    if not all(framing):  # "我有个 question：What is …": the frame goes, what follows asks;
        # a Chinese one after what it asks about ("…，能 remind 我一下吗") asks that
        kept = [(k[0], k[1] or (i > 0 and framing[i - 1]) or (
                    i + 1 < len(kept) and framing[i + 1] and kept[i + 1][1]
                    and bool(_HAN.search(kept[i + 1][0]))), k[2], k[3])
                for i, k in enumerate(kept) if not framing[i]]
        said = [s for s, f in zip(said, framing, strict=True) if not f]
    if not kept:
        return Need("", False)
    asking = [i for i, k in enumerate(kept) if k[1]]
    if not asking:
        return Need(_joined(k[0] for k in kept), False)
    if len(asking) > 1 and any(_marked(said[i]) for i in asking):
        # beside a question, a sentence that asks only by a verb of asking sets it up ("Quick
        # sanity check before I send an email. When did …?"): it is one of the sentences
        # around the question, kept if it names something
        asking = [i for i in asking if _marked(said[i])]
    asides = [i for i, k in enumerate(kept) if not k[1] and _HAN.search(k[0])]
    if asides and not any(_HAN.search(kept[i][0]) for i in asking):
        # an English question among Chinese asides ("…?我需要这个信息写报告"): its names are
        # in its own script, and an aside about the asker names nothing for want of capitals
        named = any(_capitals(kept[i][0]) or _CODE.search(kept[i][0]) for i in asking)
        for i in asides:
            kept[i] = (*kept[i][:3], _names_aside(kept[i][0], named))
    # What asks is the need, with the sentences around it that name something (a name, a
    # number, the conversation's past: "I mentioned an art event two weeks ago. Where was it
    # held?"), and all the others when it leans on them ("What did she research?"), nearest
    # first, up to MAX_WORDS. A sentence about the asker's day names nothing and goes.
    chosen = set(asking)
    words = sum(kept[i][2] for i in asking)
    # a question alone that names only a time leans ("when did they go to a pride parade in
    # August?"); beside other sentences, a day named is what they are about
    skip = _DATES if len(kept) == 1 else _PRONOUNS
    leans = words < LEANS or any(  # "her bookshelf" after "Caroline" does not lean
        (_LEANING.search(kept[i][0]) and kept[i][2] <= SHORT and not _capitals(kept[i][0], skip))
        or (_PERSON.search(kept[i][0]) and kept[i][2] <= PERSON_WORDS
            and not _capitals(kept[i][0], skip, acronyms=len(kept) > 1))
        for i in asking)
    others = sorted((i for i in range(len(kept)) if i not in chosen),
                    key=lambda i: (min(abs(i - j) for j in asking), -i))
    for i in others:
        if not (leans or kept[i][3]):
            continue
        if words + kept[i][2] > MAX_WORDS:
            break
        chosen.add(i)
        words += kept[i][2]
    # nothing chosen names anything (a question alone: but a time)
    alone = not (_names(kept[0][0], _DATES, acronyms=not _PERSON.search(kept[0][0]))
                 if len(kept) == 1 else
                 any(kept[i][3] for i in chosen))
    refers = hazy or any(_points(kept[i][0]) for i in asking)
    return Need(_joined(kept[i][0] for i in sorted(chosen)), True, leans and alone, refers)


BARE = 400
"""The longest message (in characters) :func:`is_bare_question` reads."""


def _holds_wh(text: str) -> bool:
    """Whether ``text`` holds a question word (:data:`_WH_WORDS`) as a word of its own."""
    return not _WH_WORDS.isdisjoint(_WORD.findall(text.lower()))


def _marked(sentence: str) -> bool:
    """Whether ``sentence`` holds a question mark or a question word."""
    return bool(_QUESTION.search(sentence)) or _holds_wh(sentence)


def is_bare_question(message: str) -> bool:
    """Whether ``message`` only asks ("in which month did they score a career high?", or the
    same after "Sorry for the slow reply, it has been a hectic day."): it holds no answer, so
    a turn that finds it has found no evidence. Beside the question, a sentence that names
    something ("I moved to Berlin in May."; Chinese small talk, "Sorry 打扰一下", names
    nothing) or more than :data:`SHORT` words that are no small talk ("I've always been
    passionate about veterans, so I worked on a project for them.") may hold one: such a
    message, or a long one, is more than a question."""
    if len(message) > BARE or not need_of(message).asks:
        return False
    said = 0  # content words of the sentences that do not ask
    for sentence in _sentences(message):
        text, framed = _unframed(sentence)
        if not _asking(sentence, text, framed):
            if _names(sentence) and _naming(text.split()):  # Chinese small talk names nothing
                return False
            said += len(_content(text))
    return said <= SHORT


def refers_back(need: Need) -> bool:
    """Whether what a message needs (:func:`need_of`) may be something said before. Only a
    short statement about numbers of its own refers to nothing out of view: a digit, one to
    :data:`SHORT` content words besides numbers ("About 2010." is a topic), no name, title,
    code, Chinese text or pointer at the conversation's past, and nothing that points back
    ("same", "usual", "again", "last time"). "Compute (716.5 * 40) / 5 for me" and "My sister
    lands at 9:40." refer to nothing; "Reorder the toner" and "Melanie." may."""
    text = need.text
    if need.asks or not text:
        return need.asks
    if not _DIGITS.search(text) or _AGAIN.search(text):
        return True
    words = [w for w in _content(text) if not _DIGITS.search(w)]
    if not 0 < len(words) <= SHORT:
        return True
    return any(_names(sentence) for sentence in _sentences(text))


def points_back(need: Need) -> bool:
    """Whether a caller's query (``build(question)``) means something only with the user's
    turn before it: it leans on it ("what did she research?"), or it points back at a thing or
    place and names no one and nothing of its own ("which one did I finish a week ago?"; not
    "How does Jon use the clipboard with a notepad attached to it?", whose "it" is its own)."""
    return need.leans or (need.refers and not _names(need.text))


def with_before(need: Need, before: str | Need | None) -> Need:
    """``need``, preceded by the need of the user's message ``before`` it when it leans on it
    (a follow-up split over two turns: "I have a question about Caroline." / "what did she
    research?"), and when ``before`` only named something ("Now, Oregon.", "And Caroline?" /
    "how many days ago did I go rafting in the mountains?"; "You know SaveMart, right?" / "how
    much cashback did I earn there last Thursday?": a short question sets up only what points
    back at it).
    ``before`` may be given as its :func:`need_of` already."""
    if not before or not need.asks:
        return need
    said = before if isinstance(before, Need) else need_of(before)
    # A turn that only names something ("Now, Oregon.", "And Caroline?") sets up what
    # follows; a short turn that asked or said something else ("Expand it with bullet
    # points") only for what points back at it ("how long did I stay there?").
    text = _SHIFT.sub("", said.text, count=1)
    words = text.split()
    named = _naming(words)
    short = len(_content(text)) <= SHORT
    # a name asked about and nothing else ("And Caroline?"), no question of its own
    name_asked = said.leans and not said.refers and not _holds_wh(said.text) \
        and said.text.rstrip().endswith(("?", "？"))
    names = short and _only_names(words, named) and (not said.asks or name_asked)
    if not (need.leans or need.refers or not said.asks or names):
        return need  # a turn that asked sets up only what leans or points back
    topic = short and (need.refers or names)
    if not (need.leans or topic):
        return need
    earlier = _topic(text, words, named) or _time_topic(said.text)
    return need._replace(text=_joined([earlier, need.text])) if earlier else need


_SHIFT = re.compile(
    r"^\W*(?:(?:ok(?:ay)?|so|and|now|alright|right|then)\W+){0,2}(?:(?:let'?s|let us)\s+)?"
    r"(?:(?:mov(?:e|ing)|turn(?:ing)?|switch(?:ing)?|shift(?:ing)?(?:\s+gears)?|jump(?:ing)?"
    r"|skip(?:ping)?|head(?:ing)?|go(?:ing)?|get(?:ting)?|com(?:e|ing))\s+(?:on\s+|back\s+"
    r"|over\s+|ahead\s+)?(?:to|onto)"
    r"|(?:i(?:'ve|’ve| have)?\s+)?(?:got|have)\s+(?:a|an|one|another)"
    r"(?:\s+(?:more|quick|small|little|last))?|(?:i(?:'ve|’ve| have)?\s+)?got"
    r"|(?:(?:totally|completely|entirely)\s+)?(?:unrelated|off[- ]topic"
    r"|(?:on\s+)?(?:(?:a|an)\s+)?(?:different|new|another|other|side)\s+(?:topic|subject|note"
    r"|question)|change of (?:topic|subject)|changing (?:the )?(?:topic|subject)"
    r"|random (?:question|thought))[,:;.!–—-]*)"
    r"\s+(?=\S)", re.IGNORECASE)
"""How a turn moves to a topic or announces a question about one ("Moving on to the evening.",
"Let's turn to Oregon.", "Got a Caroline question.", "Shifting gears to Oregon.", "I've got
Oregon on my mind.", "Totally unrelated: Oregon.", "On another note, Oregon."): the words that
name the topic follow."""


_DETERMINERS = frozenset("""
the a an my our your his her their its this that these those most last first next
""".split())  # noqa: SIM905 (a word list reads best as text)


def _naming(words: list[str]) -> list[int]:
    """The indices of the words that name something: a content word outside small talk and
    words of asking."""
    return [i for i, w in enumerate(words)
            if any(t not in _CHATTER_TERMS and t not in _ASKING_TERMS
                   for t in tokenize(w, drop_stopwords=True))]


def _topic(text: str, words: list[str], named: list[int]) -> str:
    """What the words before a follow-up name, when they only name a topic ("Something about
    my last trip I wanted to ask." → "my last trip"): ``words`` (``text`` split) from the first
    word that names something to the last (``named``, :func:`_naming`), with the determiners
    before them, without the small talk and words of asking around them, which would pull the
    follow-up's query towards every message that asks. Words that say more (more than
    :data:`SHORT` that name something, or Chinese) stand whole."""
    if _HAN.search(text) or len(named) > SHORT:
        return text
    if not named:  # "About the evening." or, once how the turn moves went, "the evening."
        alone = _TIME_ALONE.fullmatch(text)
        return _time_topic(text) or (alone.group(1) + "." if alone else "")
    first = named[0]
    while first > 0 and words[first - 1].lower() in _DETERMINERS:
        first -= 1
    return " ".join(words[first:named[-1] + 1]).strip(".,;:!?") + "."


def _time_topic(text: str) -> str:
    """The part of the day or week ``text`` is about (:data:`_TIME_TOPIC`), else ""."""
    if not _may_hold(text, _TIME_WORDS):
        return ""
    found = _TIME_TOPIC.search(text)
    return found.group(1) + "." if found else ""


def _own_time(text: str) -> bool:
    """Whether ``text`` asks about the asker's part of the day or week ("what can I do in the
    evening?"; not "How was your weekend?"): no small talk, whatever words it uses. A word of
    the asker (:data:`_ASKER`) and a time (:data:`_TIME_AT`, which may break a line between
    its words) with no line break between them, either first. Linear: for each of one, the
    nearest of the other before it; a pattern with ``.*`` between the two backtracked over a
    line of many pronouns."""
    if not _may_hold(text, _TIME_WORDS):
        return False
    times = [m.span() for m in _TIME_AT.finditer(text)]
    asker = [m.span() for m in _ASKER.finditer(text)] if times else []
    if not asker:
        return False
    breaks = [m.start() for m in _BREAK.finditer(text)]
    return _on_one_line(asker, times, breaks) or _on_one_line(times, asker, breaks)


def _on_one_line(first: list[tuple[int, int]], then: list[tuple[int, int]],
                 breaks: list[int]) -> bool:
    """Whether a span of ``first`` ends before a span of ``then`` starts with no line break
    between them (``breaks``); every list in order."""
    k, end = 0, -1
    for start, _ in then:
        while k < len(first) and first[k][1] <= start:
            end = first[k][1]
            k += 1
        if end >= 0:
            i = bisect.bisect_left(breaks, end)
            if i == len(breaks) or breaks[i] >= start:
                return True
    return False


def _only_names(words: list[str], named: list[int]) -> bool:
    """Whether every word that names something (``named``, :func:`_naming`) is a name or a
    code ("Oregon", "SaveMart", "SHP-40233"; "Jon: Ah ha ha" and "the evening" are more than
    names)."""
    return bool(named) and all(words[i][:1].isupper() or _CODE.search(words[i]) for i in named)


def _may_hold(text: str, parts: re.Pattern[str]) -> bool:
    """Whether ``text`` may hold one of the words ``parts`` finds (:func:`_words`) as a
    case-blind pattern reads it: an ASCII text is lowered exactly; any other may (the patterns
    fold more than ASCII case: "ſ" matches "s")."""
    return not text.isascii() or parts.search(text.lower()) is not None


def _points(text: str) -> bool:
    """Whether ``text`` points at a thing or place (:data:`_POINTING`, tried only when an
    ASCII text holds one of its words: the pattern is slow to scan)."""
    if text.isascii() and _POINT_WORDS.isdisjoint(_WORD.findall(text.lower())):
        return False
    return bool(_POINTING.search(text))


def _abbreviated(sentence: str) -> bool:
    """Whether ``sentence`` ends with an abbreviation (:data:`_ABBREVIATION`: anchored at the
    end or before a final newline, at most four characters long, so only the end is searched;
    the word boundary still sees the character before it)."""
    return bool(_ABBREVIATION.search(sentence, max(0, len(sentence) - 8)))


_LOWER_START = re.compile(r"\s*[a-z0-9]")
_HAZY = re.compile(r"\s*(?:i\s+)?(?:(?:can'?t|can’t|cannot|don'?t|don’t|do not)\s+(?:quite\s+"
                   r"|really\s+)?(?:remember|recall|place|think of)|no idea|forg[eo]t)\b",
                   re.IGNORECASE)
"""The asker's haziness said after a question ("… in March? can't quite place it", "…... cant
remember for the life of me"): a sentence of its own, whatever its case, and small talk when it
names nothing and says little."""


def _goes_on(sentence: str, part: str) -> bool:
    """Whether ``part`` continues ``sentence`` rather than starting a new one: after an
    abbreviation, inside a quotation, or when it starts in lower case or with a digit (not
    after a full-width mark, nor a question word after Chinese, "我朋友问我 when did …", or
    after a colon, "Quick: what type of …"; nor after a full stop a question word, the
    asker's haziness or a sound before a question word or a capital: "… all day lol. anyway
    When did …")."""
    end = sentence.rstrip()
    return (_abbreviated(sentence) or sentence.count('"') % 2 == 1
            or (_LOWER_START.match(part) is not None and not end.endswith(
                ("，", "：", "；")) and not _HAN.match(sentence[-1:])
                and not (end.endswith((":", ".", "?", "!")) and _WH_AT.match(part))
                and not (end.endswith(("?", "!", ".", "…")) and (
                    _HAZY.match(part) or _SOUND_STARTS.match(part)))))


def _names(text: str, skip: frozenset[str] = _PRONOUNS, acronyms: bool = True) -> bool:
    """Whether a sentence names something: a name or title (a capital past its first word,
    ``skip`` aside), a code (SHP-40233), a topic of the conversation's past ("our previous
    chat about ...", "you told me ..."), or Chinese text (no capitals to tell). A time, a list
    of errands or "everything we discussed" names nothing."""
    if text.isascii():  # no Han character; a code needs a digit; the past, one of its words
        return _capitals(text, skip, acronyms) or (_DIGITS.search(text) is not None
                                         and bool(_CODE.search(text))) \
            or (_may_hold(text, _PAST_WORDS) and bool(_PAST.search(text)))
    return bool(_HAN.search(text) or _capitals(text, skip, acronyms) or _CODE.search(text)
                or _PAST.search(text))


def _names_aside(text: str, beside_names: bool = False) -> bool:
    """Whether a Chinese aside beside an English question names something: unless it speaks of
    the asker ("我需要这个信息写报告", "这个我真的想不起来了") or the question names its own
    subject (``beside_names``: a capital past its first word, a code; "这个挺重要的：When did
    Caroline …"), as a Chinese sentence does; then only as an English one would, by a capital
    past its first word, a code, or a pointer at the conversation's past."""
    return (not beside_names and "我" not in text) or _capitals(text) \
        or bool(_CODE.search(text)) or bool(_PAST.search(text))


def _capitals(text: str, skip: frozenset[str] = _PRONOUNS, acronyms: bool = True) -> bool:
    """Whether a word past the first starts with a capital (a name, a title), ``skip`` aside;
    without ``acronyms``, a word all in capitals ("LGBTQ", "MCU") does not count: it names an
    organisation or a thing, never the person "she" or "they" stands for."""
    return any(w[:1].isupper() and (word := w.rstrip(".,!?;:'s")) not in skip
               and (acronyms or len(word) < 2 or not word.isupper())
               for w in text.split()[1:])


def _joined(parts: Iterable[str]) -> str:
    """Sentences joined with a space (Chinese ones with none)."""
    out = ""
    for part in parts:
        if out and not (out[-1] in "。！？" or re.match(r"[\u4e00-\u9fff]", part[:1])):
            out += " "
        out += part
    return out


__all__ = ["ASKING", "BARE", "CHATTER", "LEADS", "LEANS", "MAX_WORDS", "PERSON_WORDS", "SHORT",
           "Need", "is_bare_question", "need_of", "need_text", "points_back", "refers_back",
           "with_before"]
