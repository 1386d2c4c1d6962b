"""What a message needs, as people write it: the part that carries the need drives retrieval
(loomctx/text/need.py)."""

from __future__ import annotations

import pytest

import loomctx.text.need as need_mod
from loomctx.text.need import (
    MAX_WORDS,
    need_of,
    need_text,
    points_back,
    refers_back,
    with_before,
)


@pytest.mark.parametrize("message, need", [
    ("What did Caroline research?", "What did Caroline research?"),
    ("Thanks for the help earlier, by the way. What did Caroline research?",
     "What did Caroline research?"),
    ("Tell me what Caroline researched.", "what Caroline researched."),
    ("Can you remind me when Melanie painted a sunrise?", "when Melanie painted a sunrise?"),
    ("Hi again! I am putting together notes for the team. When did Melanie paint a sunrise, "
     "if you can find it. Thanks!", "When did Melanie paint a sunrise"),
    ("I was wondering, where did Caroline move from", "where did Caroline move from"),
    ("Where did Caroline move from? Thanks in advance.", "Where did Caroline move from?"),
    ("Thanks in advance, where did Caroline move from?", "where did Caroline move from?"),
    ("Where did Caroline move from, thank you in advance!", "Where did Caroline move from"),
    ("Would Caroline likely have Dr. Seuss books on her bookshelf?",
     "Would Caroline likely have Dr. Seuss books on her bookshelf?"),
    ("请帮我查一下：Caroline 研究了什么？", "Caroline 研究了什么？"),
    ("帮我 check 一下 what did Caroline research", "what did Caroline research"),
    ("Book the same hotel as last time", "Book the same hotel as last time"),
    ("Please look through our earlier messages: Which US state does Audrey live in.",
     "Which US state does Audrey live in."),  # where to look names nothing
    ("Can you search the history for the gate code?",
     "Can you search the history for the gate code?"),  # what is looked for is the need
    ("Not sure if you can help but here goes. When is the Hamburg pickup?",
     "When is the Hamburg pickup?"),  # "here goes" only announces what follows
    ("Happy Friday! When is the Hamburg pickup?", "When is the Hamburg pickup?"),
    ("Ugh, Mondays. When is the Hamburg pickup?", "When is the Hamburg pickup?"),
    # a weekday that says when, or a topic, stays
    ("We met on Monday. What did we decide?", "We met on Monday. What did we decide?"),
    ("Thinking about Fridays again. What did we decide?",
     "Thinking about Fridays again. What did we decide?"),
])
def test_the_need_is_what_asks_without_frames_and_small_talk(message: str, need: str) -> None:
    assert need_text(message) == need


@pytest.mark.parametrize("message", ["Thanks, that helps!", "How are you?", "你好！谢谢！",
                                     "Hey! Hope your day is going well.", "ok", "   ", ""])
def test_small_talk_alone_needs_nothing(message: str) -> None:
    assert need_of(message)[:2] == ("", False)


@pytest.mark.parametrize(("message", "need"), [
    ("What did I do this morning?", "What did I do this morning?"),
    ("Hi! How was your weekend? When did we last go out in the evening?",
     "When did we last go out in the evening?"),
])
def test_a_question_about_the_askers_own_past_is_no_small_talk(message: str, need: str
                                                                ) -> None:
    # its words are those of small talk ("morning", "evening"), but it asks about the past
    assert need_of(message)[:2] == (need, True)
    assert need_of("How was your weekend?")[:2] == ("", False)  # about the listener: small talk


@pytest.mark.parametrize("message", ["what can I do in the evening?",
                                     "What should we do this weekend?",
                                     "Any ideas for my afternoon?"])
def test_a_question_about_the_askers_part_of_the_day_is_no_small_talk(message: str) -> None:
    # "evening", "weekend", "afternoon" are the words of a greeting, but the asker asks about
    # their own time
    assert need_of(message)[:2] == (message, True)


@pytest.mark.parametrize("message", ["Good evening!", "Have a nice evening.",
                                     "What are you doing this weekend?", "Have a great weekend!"])
def test_a_part_of_the_day_in_a_greeting_stays_small_talk(message: str) -> None:
    assert need_of(message)[:2] == ("", False)


def test_what_asks_with_one_word_leans_on_the_sentence_before_it() -> None:
    need = need_of("I have a question about Caroline's support group. What did she research?")
    assert "support group" in need.text and "research" in need.text and need.asks


def test_a_statement_is_its_own_need_and_does_not_ask() -> None:
    need = need_of("Send it to the address I gave you")
    assert need.text == "Send it to the address I gave you" and not need.asks


@pytest.mark.parametrize("message", [
    "Send it to the address I gave you", "Use my usual order", "Book the same hotel again",
    "Ship it like last time", "Reorder the toner for the Lyon office",
    "Pull the scan log for SHP-22004 please.", "照旧，送到仓库", "What is 85 kg in lb?",
    "go with what we decided", "Rewrite this shorter: the draft is due next week.",
    "About 2010."])
def test_a_statement_that_names_or_points_back_refers_to_the_past(message: str) -> None:
    assert refers_back(need_of(message))


@pytest.mark.parametrize("message", [
    "Compute (716.5 * 40) / 5 for me", "My sister lands at 9:40.", "convert 4103 l to gallons",
    "Thanks, that was helpful!", ""])
def test_a_statement_that_names_nothing_refers_to_nothing(message: str) -> None:
    assert not refers_back(need_of(message))


def test_a_question_in_a_pasted_log_is_the_need() -> None:
    log = "\n".join(f"2024-05-0{i % 9 + 1} scan SHP-{40000 + i} Lyon customs hold"
                    for i in range(400))
    need = need_of(f"Here is the scan log:\n{log}\nWhy is SHP-40233 still on hold?")
    assert need.text == "Why is SHP-40233 still on hold?" and need.asks


def test_a_long_message_with_nothing_that_asks_keeps_its_ends_bounded() -> None:
    text = "word " * 2_000_000  # 10 MB: only its start and end are read
    need = need_text(text + "shipment SHP-40233 to Lyon")
    assert need.endswith("SHP-40233 to Lyon") and len(need) < 5000


def test_the_sentences_around_what_asks_stay_within_max_words() -> None:
    context = " ".join(f"Shipment {i} left depot {i}." for i in range(100))
    need = need_text(f"{context} What about her?")
    assert len([w for w in need.split() if w[0].isalpha()]) <= 3 * MAX_WORDS
    assert need.endswith("What about her?")


def test_a_follow_up_over_two_turns_takes_its_subject_from_the_turn_before() -> None:
    follow_up = need_of("how did they feel about her family after the accident?")
    assert follow_up.leans
    need = with_before(follow_up, "I have a question about Melanie.")
    assert need.text.startswith("Melanie") and need.asks
    named = need_of("What did Caroline research?")
    assert not named.leans and with_before(named, "Tell me about Melanie.") == named


@pytest.mark.parametrize("before", ["And Melanie?", "Melanie?", "Now, Melanie."])
def test_a_turn_that_only_names_someone_sets_up_the_question_after_it(before: str) -> None:
    # the question names something of its own ("LGBTQ"), so it does not lean, but its "she"
    # is whoever the turn before named, asked with a question mark or not
    need = with_before(need_of("when did she go to the LGBTQ support group?"), before)
    assert need.text == "Melanie. when did she go to the LGBTQ support group?"


@pytest.mark.parametrize("before", [
    "Next one: Basel. What do we have on it?",
    "Basel, which?",  # a question word: it asks something of its own
    "And Basel there?",  # it points at a place
])
def test_a_question_about_someone_named_sets_up_only_what_leans_on_it(before: str) -> None:
    need = need_of("Quick check on damaged goods claims please, the client is chasing.")
    assert with_before(need, before) == need


@pytest.mark.parametrize("message, need", [
    ("Sorry 打扰一下，When did Caroline go to the LGBTQ support group?",
     "When did Caroline go to the LGBTQ support group?"),
    ("能 remind 我一下吗：what did Melanie paint recently", "what did Melanie paint recently"),
    ("我有个 question：What did Melanie paint?", "What did Melanie paint?"),
    ("之前聊过的，what did Melanie paint，你还记得吗", "what did Melanie paint"),
    ("我忘了 When did Caroline go to the LGBTQ support group，能告诉我吗",
     "When did Caroline go to the LGBTQ support group"),
    ("When did Caroline go to the LGBTQ support group，能 remind 我一下吗",
     "When did Caroline go to the LGBTQ support group"),
    ("我不记得了 what is the gate code", "what is the gate code"),
    ("When did Caroline go to the LGBTQ support group? 我有点 confused",
     "When did Caroline go to the LGBTQ support group?"),
    ("When did Caroline go to the LGBTQ support group?（我记得之前聊过）",
     "When did Caroline go to the LGBTQ support group?"),
    ("想问下 when did Caroline go to the LGBTQ support group",
     "when did Caroline go to the LGBTQ support group"),
    ("突然想到一个问题 —— When did Caroline go to the LGBTQ support group?",
     "When did Caroline go to the LGBTQ support group?"),
    ("When did Caroline go to the LGBTQ support group? 麻烦快点回我，谢谢！",
     "When did Caroline go to the LGBTQ support group?"),
    ("When did Caroline go to the LGBTQ support group，你那边有记录吗？",
     "When did Caroline go to the LGBTQ support group"),
    ("What did Melanie paint recently?我需要这个信息写报告", "What did Melanie paint recently?"),
    ("What did Melanie paint recently? 这个我真的想不起来了", "What did Melanie paint recently?"),
    ("我朋友问我 when did Caroline go to the LGBTQ support group",
     "when did Caroline go to the LGBTQ support group"),
    ("Btw 我想 double check 一下 what did Melanie paint", "what did Melanie paint"),
    ("能帮我 recall 一下 what did Melanie paint 吗？", "what did Melanie paint"),
    ("Sorry 打扰了，请问 what did Melanie paint", "what did Melanie paint"),
    ("有个问题想请教：What did Melanie paint", "What did Melanie paint"),
    ("这个挺重要的：What did Melanie paint?", "What did Melanie paint?"),
    ("What did Melanie paint? 急！", "What did Melanie paint?"),
    ("嗯… What did Melanie paint?", "What did Melanie paint?"),
    ("What did Melanie paint? 有印象吗", "What did Melanie paint?"),
    ("跟你确认个事儿：2014 S/S is the debut album of a boy group formed by who",
     "2014 S/S is the debut album of a boy group formed by who"),
])
def test_a_clause_that_only_frames_goes_where_the_script_switches(message: str, need: str,
                                                                   ) -> None:
    asked = need_of(message)
    assert asked.text == need and asked.asks


@pytest.mark.parametrize("message", [
    "我忘了带伞", "I forgot my umbrella.", "我有点累",
    "Tim: Yep, I'll let you know! Thanks for being so helpful.",
])
def test_forgetting_a_thing_or_a_closing_frame_is_no_question(message: str) -> None:
    """"I forgot" asks only before a question word; an English promise to let someone know
    after a statement asks nothing (a Chinese frame last asks what it follows)."""
    assert not need_of(message).asks


@pytest.mark.parametrize("message, aside", [
    ("关于上海的仓库。What is the gate code?", "关于上海的仓库"),
    ("我们上次在上海的仓库见过。What is the gate code?", "我们上次在上海的仓库见过"),
    ("上海的仓库。What did we store there?", "上海的仓库"),
])
def test_a_chinese_aside_that_names_a_topic_stays_beside_an_english_question(
        message: str, aside: str) -> None:
    """Only an aside about the asker, or one beside a question that names its own subject,
    names nothing for want of capitals; a topic, or the conversation's past, stays in the
    query."""
    assert need_of(message).text.startswith(aside)


def test_a_chinese_question_after_an_english_name_still_asks() -> None:
    asked = need_of("上次说的那个 Hamburg pickup，怎么样了？")
    assert "Hamburg pickup" in asked.text and asked.asks


@pytest.mark.parametrize("message", [
    "Anyway, what career path has Caroline decided to pursue. Thanks.",
    "In what ways is Caroline participating in the LGBTQ community",
    "Over how many centuries were the Giza pyramids built",
    "According to Gina, what makes Jon a perfect mentor",
    "I was wondering, what was the move you made after Kg2",
    "Suggest some activities that I can do in the evening.",
    "I forget where the Lyon customer wanted the parcel.",
])
def test_requests_and_questions_without_a_question_mark_ask(message: str) -> None:
    assert need_of(message).asks


@pytest.mark.parametrize("message", [
    "Being a mom is awesome. I'm creating a library for when I have kids.",
    "We went on a day when it rained, which was fun.",
])
def test_a_clause_with_a_question_word_is_not_a_question(message: str) -> None:
    assert not need_of(message).asks


def test_a_short_follow_up_on_that_leans_on_the_turn_before() -> None:
    follow_up = need_of("ok, where did I go on that?")
    assert follow_up.leans and follow_up.asks
    assert with_before(follow_up, "Something about my most recent family trip I wanted to ask."
                       ).text.startswith("my most recent family trip.")


@pytest.mark.parametrize("before, topic", [
    ("Something about Melanie I wanted to ask.", "Melanie."),
    ("You know Caroline, right.", "Caroline."),
    ("Can we go back to my last trip", "my last trip."),
    ("About the SHP-40233 shipment.", "the SHP-40233 shipment."),
    # a part of the day, the topic (not a greeting)
    ("Quick thing about the evening.", "the evening."),
    ("Going back to the weekend.", "the weekend."),
    # how a turn moves to its topic names nothing
    ("Moving on to the evening.", "the evening."),
    ("Let's turn to Hamburg.", "Hamburg."),
    ("Got a Melanie question.", "Melanie."),
    ("I have one more question about the SHP-40233 shipment.", "the SHP-40233 shipment."),
    ("Shifting gears to Hamburg.", "Hamburg."),
    ("I've got Hamburg on my mind.", "Hamburg."),
    ("Totally unrelated: Hamburg.", "Hamburg."),
    ("On another note, Hamburg.", "Hamburg."),
    ("Side note - Hamburg.", "Hamburg."),
    ("Different topic: the SHP-40233 shipment.", "the SHP-40233 shipment."),
    ("Changing topic: the evening.", "the evening."),  # a part of the day, once how it moves went
    # words that say more than a topic stand whole
    ("I am flying to Hamburg next week with Anna.", "I am flying to Hamburg next week with Anna."),
    ("我有个问题，关于上海的仓库。", "我有个问题，关于上海的仓库。"),
])
def test_a_follow_up_takes_only_the_topic_the_turn_before_names(before: str, topic: str) -> None:
    follow_up = need_of("when did they go there?")
    assert follow_up.leans
    assert with_before(follow_up, before).text.startswith(topic)


def test_small_talk_before_a_follow_up_adds_nothing() -> None:
    follow_up = need_of("when did they go there?")
    assert with_before(follow_up, "Thanks, that helps!").text == follow_up.text


@pytest.mark.parametrize("message, topic", [
    ("I wanted to follow up on our previous conversation about the fusion breakthrough at "
     "Lawrence Livermore. Can you remind me who the advisor was?", "the fusion breakthrough"),
    ("I'm going back to our previous chat about baking. What temperature did you suggest?",
     "baking."),
])
def test_a_pointer_at_the_past_leaves_its_topic(message: str, topic: str) -> None:
    asked = need_of(message)
    assert asked.text.startswith(topic) and "previous" not in asked.text and asked.asks


def test_a_question_about_a_person_it_does_not_name_leans_on_the_turn_before() -> None:
    follow_up = need_of("what kind of indoor activities have they pursued with his girlfriend?")
    assert follow_up.leans
    assert with_before(follow_up, "Now, Andrew.").text.startswith("Andrew.")
    assert not need_of("What kind of indoor activities has Andrew pursued with his girlfriend?"
                       ).leans


def test_that_leads_a_clause_and_leans_on_nothing() -> None:
    assert not need_of("Can you suggest some activities that I can do in the evening?").leans


def test_a_question_that_points_at_a_place_takes_the_topic_named_before() -> None:
    follow_up = need_of("how much cashback did I earn there last Thursday?")
    assert follow_up.refers and not follow_up.leans  # it names enough to stand alone ...
    # ... but "there" is the place the turn before named
    assert with_before(follow_up, "You know SaveMart, right.").text.startswith("SaveMart.")
    # a turn before that says more than a topic is not taken
    assert with_before(follow_up, "I went shopping with Anna and Lee at the mall on Friday."
                       ) == follow_up


def test_a_question_that_names_only_a_time_still_leans_on_who_they_are() -> None:
    asked = need_of("when did they attend a pride parade in August?")
    assert asked.leans and points_back(asked)  # "August" is a time, not who "they" are
    assert with_before(asked, "I have a question about Caroline.").text.startswith("Caroline.")
    assert not need_of("when did they go to Paris in August?").leans  # Paris is named
    # beside other sentences, a time named may be what they are about: it stands alone
    assert not need_of("I found the photos. When did they attend a pride parade in August?"
                       ).leans


def test_a_turn_that_only_names_something_sets_up_the_question_after_it() -> None:
    asked = need_of("how many days ago did I go on a whitewater rafting trip in the mountains?")
    assert with_before(asked, "Now, Oregon.").text.startswith("Oregon.")
    # a chat line that says more than a name, or a short request, sets up nothing
    assert with_before(asked, "Jon: Ah ha ha, yeah, JUST DOING IT!") == asked
    assert with_before(asked, "Expand it a little more with some bullet points") == asked


@pytest.mark.parametrize(("before", "message", "topic"), [
    ("Now, gardening-related.", "what that activity did I do two weeks ago?", "gardening-related."),
    ("About book.", "remind me, which one did I finish a week ago?", "book."),
    ("The Hamburg pickups.", "and the second one?", "The Hamburg pickups."),
])
def test_that_thing_and_which_one_point_back(before: str, message: str, topic: str) -> None:
    follow_up = need_of(message)
    assert follow_up.refers
    assert with_before(follow_up, before).text.startswith(topic)


@pytest.mark.parametrize("message", [
    "I mentioned that I ran the Lyon marathon. Where was the start?",
    "When did I say that the pickup moved?",
    "Is that the place you meant for the Hamburg pickup?",
    "Which of my trips was the longest one?",
])
def test_that_before_a_clause_or_an_article_does_not_point(message: str) -> None:
    assert not need_of(message).refers


def test_is_there_and_person_pronouns_do_not_point() -> None:
    assert not need_of("is there a pickup on Tuesday for the Hamburg depot?").refers
    assert not need_of("What did Caroline do with her painting?").refers


@pytest.mark.parametrize("message", [
    "I need to know: The gate code for the Hamburg depot.",
    "Check for me: The carrier that took the Lyon pallets.",
    "查一下这个：the gate code for the Hamburg depot",
])
def test_a_request_frame_alone_makes_what_follows_ask(message: str) -> None:
    need = need_of(message)
    assert need.asks and need.text.lower().startswith("the ")


@pytest.mark.parametrize(("message", "asks"), [
    ("quick check 一下：The Vermont Catamounts team competes in a conference that was formerly "
     "known as what", True),
    ("Quick check: The Vermont Catamounts team competes in a conference that was formerly known "
     "as what", True),
    ("I'll check those out. I'm really enjoying my new coffee table.", False),
    ("You are in check. Your move as white.", False),
])
def test_a_lead_of_small_talk_and_asking_before_a_colon_makes_what_follows_ask(
        message: str, asks: bool) -> None:
    """A question said as a statement after "quick check:" asks; a sentence that only says it
    will check something, or a check in chess, makes nothing after it ask."""
    assert need_of(message).asks is asks


@pytest.mark.parametrize(("message", "asks"), [
    ("Melanie moved to Lyon in what year", True),  # asked in place
    ("The Argentine record holder has won how many tournaments", True),
    ("The conference was formerly known as what from 1988 to 1996", True),
    ("The debut album is by a group that was formed by who pls", True),  # last in its sentence
    ("Onika Maraj is a judge on a show hosted by whom.", True),
    ("Customers can filter, such as which products they buy most.", False),
    ("It is the same as what you said.", False),
    ("hey so um what was the name of that restaurant we talked about", True),
    ("whats the gate code", True),
    ("need the gate code for the Hamburg depot", True),
    ("i forgot the wifi password we set up", True),
    ("Quick q - the dentist appointment, when is it again", True),
    ("Wait, which hotel did I book in Porto last time", True),
    ("lmk what Caroline said about the adoption agency", True),
    ("Wait for me at the station.", False),
    ("Here is what my calendar app exported: three meetings.", False),
    ("The pallets went with the carrier.", False),
    ("I forgot my umbrella.", False),
    ("I booked the Alster Lodge, which is near the station.", False),
])
def test_what_asks_as_people_type_it(message: str, asks: bool) -> None:
    assert need_of(message).asks is asks


@pytest.mark.parametrize(("message", "back"), [
    ("what did she research?", True),  # leans: it names nothing
    ("remind me, which dock and which gate did we put it behind last week?", True),
    ("how many bikes did I service or plan to service in that?", True),
    # its pointer is its own: it names who and what it is about
    ("How does Jon use the clipboard with a notepad attached to it?", False),
    ("What did Evan share a photo of that was taken on a camping trip?", False),
    ("What did Caroline research?", False),
])
def test_a_query_points_back_only_when_it_names_nothing_of_its_own(message: str, back: bool
                                                                   ) -> None:
    assert points_back(need_of(message)) is back


@pytest.mark.parametrize(("message", "need"), [
    ("Hmm, when did Melanie paint a sunrise?", "when did Melanie paint a sunrise?"),
    ("Quick one — when did Melanie paint a sunrise?", "when did Melanie paint a sunrise?"),
    ("Wait—what did Caroline research?", "what did Caroline research?"),
    ("Asking for a friend: where did Caroline move from?", "where did Caroline move from?"),
    ("So, um, what did Caroline research", "what did Caroline research"),
    # a lead that names or says something, points at someone, or asks itself stays
    ("In 2019, who won the cup?", "In 2019, who won the cup?"),
    ("For the camping trip, when did we leave?", "For the camping trip, when did we leave?"),
    ("They, a French director, made videos for which artist?",
     "They, a French director, made videos for which artist?"),
    ("What, known as AAS, is used in bodybuilding?",
     "What, known as AAS, is used in bodybuilding?"),
])
def test_a_lead_clause_of_small_talk_goes_from_what_asks(message: str, need: str) -> None:
    assert need_of(message)[:2] == (need, True)


@pytest.mark.parametrize(("message", "need"), [
    # a request frame worded any way, right before what it asks
    ("Jog my memory on when did Caroline go to the support group.",
     "when did Caroline go to the support group."),
    ("Search our history for where Melanie camped.", "where Melanie camped."),
    ("Need a reminder of when Jon lost his job.", "when Jon lost his job."),
    ("Quickly confirm whether Gina opened her store.", "whether Gina opened her store."),
    ("Double-check: according to Gina, what makes Jon a mentor.",
     "according to Gina, what makes Jon a mentor."),
    ("I forgot, remind me when the pickup is.", "when the pickup is."),
    ("Refresh me on how many kids Melanie has.", "how many kids Melanie has."),
    # before a question asked as such, any lead frames it: it need not be a word of asking
    ("Hunt down when did Caroline go to the support group.",
     "when did Caroline go to the support group."),
    ("I'm blanking on how long did Melanie paint.", "how long did Melanie paint."),
    # a frame after a frame
    ("Help me remember: do you remember what show I used as an example.",
     "what show I used as an example."),
    ("Help me figure out what pet does Caroline have.", "what pet does Caroline have."),
    # up to eight words, a favour asked on the way
    ("Do me a favour and look up when Jon lost his job.", "when Jon lost his job."),
    ("Can you work out where Melanie camped.", "where Melanie camped."),
    ("Mind looking up when Jon lost his job.", "when Jon lost his job."),  # an -ing form
    ("Fill me in on where Melanie camped.", "where Melanie camped."),
    ("Just checking, what kind of classes has Audrey joined.",  # a frame before a comma
     "what kind of classes has Audrey joined."),
    ("Digging for where Melanie camped.", "where Melanie camped."),
    ("See if you can find out when Jon lost his job.", "when Jon lost his job."),
    ("I wanna know where Melanie camped.", "where Melanie camped."),
    ("Help me pin down when Jon lost his job.", "when Jon lost his job."),  # with its particle
    ("Help me nail down where Melanie camped.", "where Melanie camped."),
    ("Help me work through where Melanie camped.", "where Melanie camped."),
    ("Help me think through what Caroline decided.", "what Caroline decided."),
    ("Dredge up where the event was held.", "where the event was held."),
    ("Suss out how long Melanie has painted.", "how long Melanie has painted."),
    # where to look names nothing
    ("Fish out of our chats how long Melanie has painted.", "how long Melanie has painted."),
    ("Dig out of your notes when Jon lost his job.", "when Jon lost his job."),
    # as people text
    ("wud u mind checkin how many kids Melanie has.", "how many kids Melanie has."),
    ("Lookin for when Jon lost his job.", "when Jon lost his job."),
    # where the answer is to come from, a clause of its own
    ("From what I've told you, can you say what car I am working on.",
     "what car I am working on."),
    ("Based on what I said earlier, when is the pickup?", "when is the pickup?"),
    ("Judging by our previous chats, who is Jon?", "who is Jon?"),
    # the asker's haziness
    ("I'm hazy on what the total commute time is.", "what the total commute time is."),
    ("I'm unclear about where Melanie camped.", "where Melanie camped."),
    # courtesy before the request
    ("I'd appreciate it if you could tell me when Jon lost his job.", "when Jon lost his job."),
    ("We'd be so grateful if you could check where Melanie camped.", "where Melanie camped."),
    ("It would be great if you could remind me how many kids Melanie has.",
     "how many kids Melanie has."),
    # the asker's own lead, when it sets out to find out
    ("I was trying to work out when Jon lost his job.", "when Jon lost his job."),
    ("I have to know where Melanie camped.", "where Melanie camped."),
    ("We were trying to check how many kids Melanie has.", "how many kids Melanie has."),
])
def test_a_request_frame_of_any_wording_goes_from_what_it_asks(message: str, need: str) -> None:
    assert need_of(message)[:2] == (need, True)


@pytest.mark.parametrize("message", [
    "It reminds me why I love being a mom.",  # a subject first: it tells
    "They remind me why I'm so passionate about it.",
    "I know what you mean.",
    "I tried to work what I learned into the book.",  # "work" without "out" finds nothing
    "I'd like to work on what we discussed.",
    "Fill in when Caroline is away.",  # "fill" asks only as "fill me in"
    "Help me pin where the poster goes.",  # "pin" asks only as "pin down"
    "Just fish where the water is deep.",  # "fish" asks only as "fish out" or "fish up"
    "Just think how far we've come.",  # "think" asks only as "think through"
    "We'll work through what went wrong.",  # a promise
    "Just dredge where the river is shallow.",  # "dredge" asks only as "dredge up"
    "Based on what I said you should pick the blue one.",  # no clause of its own
    "u know what I mean.",  # texted "you" is a subject
    "Other than racing, what sport does the champion practice?",  # a topic before a comma
    "Look how cute it is.",  # one word that asks nothing alone
    "Look how dark it was!",  # an exclamation
    "For the camping trip when did we leave?",  # the lead names something
    "Should We Tell Him: a song by The Everly Brothers.",  # a title
    "The Wonder Who? was a name of The Four Seasons.",
    "You told me when did the store open.",  # before a question asked as such, a thing said
    "Refresh me on how fun that trip was!",  # an exclamation
])
def test_a_lead_that_says_or_names_something_is_no_frame(message: str) -> None:
    assert need_of(message).text == message


def test_a_source_named_is_no_frame() -> None:
    assert need_of("According to Gina, what makes Jon a mentor?").text == \
        "According to Gina, what makes Jon a mentor?"


def test_courtesy_without_a_request_after_it_asks_nothing() -> None:
    assert not need_of("I'd be happy if you could come on Friday.").asks
    assert not need_of("It would be great if you could join us in Lyon.").asks
    assert not need_of("See if you can come on Friday.").asks
    assert need_of("I wanna go to Lyon.") == need_of("I wanna go to Lyon.")._replace(
        text="I wanna go to Lyon.", asks=False)


@pytest.mark.parametrize(("message", "asks"), [
    ("I keep forgetting when Caroline went to the support group.", True),  # not knowing
    ("I keep forgetting my umbrella.", False),
    ("They fill me with joy when I see them.", False),
    ("Hunt down when did Caroline go to the support group.", True),  # asked as such
    ("Hayden is from Canada, but where does Buck-Tick hail from", True),  # after a clause
    ("Guess what I did this week.", False),  # a clause, not a question
    ("Loving what you do and bringing joy to others.", False),
    ("Offer a guest checkout for customers who do not want an account.", False),
    ("Here is how we did it.", False),
    ("That is what was decided.", False),
    ("My friend who is a fan of Harry Potter came along.", False),
])
def test_a_question_asked_as_such_asks_anywhere_and_a_clause_does_not(message: str,
                                                                     asks: bool) -> None:
    assert need_of(message).asks is asks


def test_small_talk_before_a_pointer_at_the_past_goes_with_the_pointer() -> None:
    message = ("Quick one — I wanted to follow up on our previous conversation about the fusion "
               "breakthrough. Who led it?")
    assert need_of(message).text == "the fusion breakthrough. Who led it?"


@pytest.mark.parametrize(("message", "need"), [
    ("Quick sanity check before I send an email. When did Andrew start his new job?",
     "When did Andrew start his new job?"),
    ("Can't find it anywhere in my own notes. When did Caroline go to the support group?",
     "When did Caroline go to the support group?"),
    ("Please check something for me. When did Caroline go?", "When did Caroline go?"),
    # it stays when it names something, or holds a question word of its own
    ("Check the SHP-40233 log. Why is it held?", "the SHP-40233 log. Why is it held?"),
    ("Tell me what we decided about the pickups. Also, when is the next one?",
     "what we decided about the pickups. when is the next one?"),
    ("I was wondering what she researched. When did Melanie move?",
     "what she researched. When did Melanie move?"),
])
def test_beside_a_question_a_sentence_that_only_asks_by_a_verb_sets_it_up(message: str,
                                                                        need: str) -> None:
    assert need_of(message)[:2] == (need, True)


@pytest.mark.parametrize(("message", "need"), [
    ("I mean, which year did she adopt Pixie?", "which year did she adopt Pixie?"),
    ("You know, when did Jon lose his job?", "when did Jon lose his job?"),
    ("I mean, it was great.", "I mean, it was great."),  # a marker before what asks only
])
def test_a_marker_of_saying_it_again_goes_from_what_asks(message: str, need: str) -> None:
    assert need_of(message).text == need


def test_a_lead_clause_goes_only_from_a_sentence_that_asks() -> None:
    # an exclamation keeps its words: only what asks is read without its lead
    assert need_of("Wow, what a photo!").text == "Wow, what a photo!"
    assert need_of("Hmm, I see.").text == "Hmm, I see."


def test_a_sentence_of_many_leading_clauses_costs_a_bounded_number_of_reads() -> None:
    # at most LEADS clauses go, so "hmm, hmm, …" 800 times is read a few times, not 800
    need = need_of("hmm, " * 800 + "what is it?")
    assert need.asks and need.text.startswith("hmm, hmm,")
    assert need_of("Hmm, so, well, what is it?").text == "what is it?"


@pytest.mark.parametrize(("message", "need"), [
    ("When did Caroline go to the support group - remind me",
     "When did Caroline go to the support group"),
    ("what did melanie paint recently, can you remind me", "what did melanie paint recently"),
    ("When did Caroline go to the support group — can you check",
     "When did Caroline go to the support group"),
    ("Where did we eat, I forgot", "Where did we eat"),
    ("when did caroline go to the support group (asking for a friend)",
     "when did caroline go to the support group"),
    ("What did John buy, you know, remind me", "What did John buy"),  # clause after clause
    ("Tell me the carrier for SHP-40233, I forgot", "the carrier for SHP-40233"),  # framed
])
def test_a_closing_frame_goes_from_what_it_asks(message: str, need: str) -> None:
    assert need_of(message)[:2] == (need, True)


@pytest.mark.parametrize("message", [
    "When did Caroline move, and do you know why",  # a question word
    "What did Melanie paint, the lake one",  # names something
    "What did Melanie paint, tell me about the lake one",
    "When did Melanie paint a sunrise, 2022 or 2023",
    "What did Melanie paint (the one with the lake)",
    "How did Caroline feel, she said",  # says something of someone
    "If I need any help, I'll be sure to let you know.",  # a promise
    "It's wild how much you can learn from them, right?",  # a tag, no word of asking
])
def test_a_closing_clause_that_says_or_names_something_stays(message: str) -> None:
    assert need_of(message).text == message


@pytest.mark.parametrize(("message", "need", "asks"), [
    ("The carrier for SHP-40233 - remind me", "The carrier for SHP-40233", True),
    ("the wifi password we set up, do you remember", "the wifi password we set up", True),
    # an offer asks for nothing; "you know" frames nothing
    ("If you need any help, let me know!", "If you need any help, let me know!", False),
    ("I went to the park, you know", "I went to the park, you know", False),
])
def test_a_request_frame_after_a_statement_asks_for_it(message: str, need: str,
                                                      asks: bool) -> None:
    assert need_of(message)[:2] == (need, asks)


def test_a_clause_end_is_found_where_its_run_of_blanks_starts() -> None:
    # a search tried from every blank of a long run would read the run to its end from each
    assert need_mod._CLAUSE_END.match("go  , x", 2) is not None
    assert need_mod._CLAUSE_END.match("go  , x", 3) is None
    assert need_of("when did she go" + " " * 3000 + "x, remind me").asks


def test_a_closing_courtesy_is_looked_for_in_the_end_of_a_sentence_only(
        monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[int] = []
    tail = need_mod._TAIL

    class Recording:
        def sub(self, repl: str, text: str) -> str:
            seen.append(len(text))
            return tail.sub(repl, text)

    monkeypatch.setattr(need_mod, "_TAIL", Recording())
    need = need_of("when did she go " + "please " * 1000 + "thanks")
    assert seen and max(seen) <= need_mod.TAIL_CHARS
    assert need.asks and need.text.startswith("when did she go please")
    assert need_of("When did she go, thanks in advance!").text == "When did she go"


@pytest.mark.parametrize(("message", "need", "asks"), [
    ("When you get a chance, find out what type of car I am working on.",
     "what type of car I am working on.", True),
    ("Whenever you can, tell me where we ate in March.", "where we ate in March.", True),
    ("If you have a spare minute, check when Caroline moved.", "when Caroline moved.", True),
    ("When you're free, what did I buy in March", "what did I buy in March", True),
    # courtesy about the listener's time asks for nothing by itself
    ("If you can, come by tomorrow.", "come by tomorrow.", False),
])
def test_a_condition_on_the_listeners_time_is_courtesy(message: str, need: str,
                                                       asks: bool) -> None:
    assert need_of(message)[:2] == (need, asks)


@pytest.mark.parametrize("message", [
    "If you can't find it, check the drawer.",
    "If you have the time and want to, visit both.",
])
def test_a_condition_that_is_no_clause_of_its_own_says_what_it_depends_on(message: str
                                                                          ) -> None:
    assert need_of(message).text == message


@pytest.mark.parametrize(("message", "need"), [
    ("Quick: what type of vehicle model am I working on",
     "what type of vehicle model am I working on"),
    ("Think back: what type of vehicle model am I currently working on.",
     "what type of vehicle model am I currently working on."),
    ("The question is: which car did I buy", "which car did I buy"),
])
def test_a_question_word_after_a_colon_starts_what_asks(message: str, need: str) -> None:
    assert need_of(message)[:2] == (need, True)
    # as a capital after the colon does
    capital = message.replace(": " + need[0], ": " + need[0].upper())
    assert need_of(capital)[:2] == (need[0].upper() + need[1:], True)


def test_a_colon_before_other_words_in_lower_case_goes_on() -> None:
    assert need_of("Note: the app crashes as it starts.").text == \
        "Note: the app crashes as it starts."


@pytest.mark.parametrize(("message", "need"), [
    ("Walk me through when Caroline went to the support group.",
     "when Caroline went to the support group."),
    ("Talk me through how the refund works for SHP-40233.", "how the refund works for SHP-40233."),
    ("I've been wondering when Caroline went to the support group.",
     "when Caroline went to the support group."),
    ("We've been trying to figure out where we left the keys.", "where we left the keys."),
    ("Run me through the deployment steps.", "the deployment steps."),  # asks by its frame
])
def test_walking_someone_through_and_having_wondered_frame_a_request(message: str,
                                                                      need: str) -> None:
    assert need_of(message)[:2] == (need, True)
    assert need_of("I walked through the park yesterday.")[1] is False


@pytest.mark.parametrize(("message", "need", "asks"), [
    ("I'd like to verify what my previous occupation was.", "what my previous occupation was.",
     True),
    ("We'd like to double-check when the shipment left.", "when the shipment left.", True),
    ("I've always wondered what I spent on the handbag.", "what I spent on the handbag.", True),
    ("Let's see if you remember how many bikes I serviced in March.",
     "how many bikes I serviced in March.", True),
])
def test_more_wordings_of_a_request_frame(message: str, need: str, asks: bool) -> None:
    assert need_of(message)[:2] == (need, asks)
    # wanting to keep something in memory is no frame
    assert need_of("I want to remember this day forever.").text == \
        "I want to remember this day forever."


@pytest.mark.parametrize(("message", "need"), [
    ("quick one what type of vehicle model am I currently working on thx",
     "what type of vehicle model am I currently working on"),  # a verb before a pronoun
    ("Brain's blanking on how long have I been living in my apartment.",
     "how long have I been living in my apartment."),
    ("Do you still have a note of what kind of places have Andrew and Mia checked out.",
     "what kind of places have Andrew and Mia checked out."),  # before a name
    ("Brain's blanking on what toys has Andrew's dog chewed up.",
     "what toys has Andrew's dog chewed up."),
    ("Got anything on when is Andrew going hiking.", "when is Andrew going hiking."),
    ("Pls confirm what is the total time it takes me to commute.",
     "what is the total time it takes me to commute."),  # "is" and "the"
])
def test_questions_asked_as_such_with_other_verbs_than_did(message: str, need: str) -> None:
    assert need_of(message)[:2] == (need, True)


@pytest.mark.parametrize("message", [
    "It's amazing how much technology has advanced.",  # exclaims
    "I counted how many people were there.",
    "Edgar was an industrialist, who was Chairman of Kaiser Aluminum.",  # a relative clause
    "It stands by the lake, which is The North Face store.",
    "Five nations each entered a side in what was the first tournament.",  # after "in"
    "The film Who Am I came out in 2014.",  # titles: a capital verb
    "They released albums on labels including Where Are My Records.",
])
def test_a_clause_or_a_title_with_those_verbs_asks_nothing(message: str) -> None:
    assert need_of(message).asks is False


@pytest.mark.parametrize(("before", "message", "need"), [
    ("You remember Caroline, yeah?", "Cool. when did they go to the LGBTQ support group?",
     "Caroline. when did they go to the LGBTQ support group?"),
    ("Anyway, Melanie.", "Great! what did she paint last week?",
     "Melanie. what did she paint last week?"),
])
def test_a_question_word_in_lower_case_after_a_full_stop_starts_a_sentence(
        before: str, message: str, need: str) -> None:
    assert with_before(need_of(message), before).text == need
    assert need_of("Hi again! I hope the weekend went well. what are John's goals?").text == \
        "what are John's goals?"
    # after an abbreviation the sentence goes on
    assert need_of("Ask about the usual tools, e.g. what the docs suggest.").text == \
        "Ask about the usual tools, e.g. what the docs suggest."


def test_an_acronym_alone_does_not_name_whom_a_pronoun_stands_for() -> None:
    assert need_of("when did they go to the LGBTQ support group?").leans is True
    assert need_of("when did they meet Caroline?").leans is False  # a name
    assert need_of("What did Caroline do at the LGBTQ center?").leans is False
    # beside other sentences, an acronym still names what they are about
    assert need_of("Long day at work. When did they join NASA?").text == \
        "When did they join NASA?"
    assert need_of("What about NASA?").leans is False  # no pronoun: it names NASA


def test_fillers_are_small_talk() -> None:
    said = need_of("So basically, what is the total amount I spent on that?")
    assert said.text == "what is the total amount I spent on that?"
    assert said.leans is True
    assert need_of("Honestly, just, wow.").text == ""


@pytest.mark.parametrize(("message", "need"), [
    ("When did Caroline go to the support group... cant remember for the life of me",
     "When did Caroline go to the support group..."),
    ("How many days did I spend in Japan? no idea anymore",
     "How many days did I spend in Japan?"),
    ("Where did I park? I forget.", "Where did I park?"),
    ("Where did I park? forgot", "Where did I park?"),
    ("How many days did I spend in Japan? can't quite place it",
     "How many days did I spend in Japan?"),
])
def test_the_askers_haziness_after_a_question_is_a_sentence_of_its_own(message: str,
                                                                        need: str) -> None:
    assert need_of(message)[:2] == (need, True)
    # small talk: the question alone still leans past the month it names, and what it asks
    # was said before: it points back as "it" would, at the topic of the turn before
    hazy = need_of("which hobby did they pick up in October? can't quite place it")
    assert hazy.leans and hazy.refers
    assert with_before(need_of("how much older is my grandma than me? no idea"),
                       "Been thinking about my family again").text == \
        "my family. how much older is my grandma than me?"
    assert need_of("which hobby did they pick up? can't remember Lyon").text == \
        "which hobby did they pick up? can't remember Lyon"  # it names something
    assert "hotel" in need_of("When did we meet? i forgot the name of the hotel by the old "
                              "station").text  # it says more
    # not after a question: "No idea how …" frames what follows
    assert need_of("Jolene: No idea how I would've survived without them!").text == \
        "Jolene: how I would've survived without them!"
    # other words in lower case after an ellipsis go on ("The Thing of It Is... is …")
    assert need_of("The author of The Thing of It Is... is what nationality?").text == \
        "The author of The Thing of It Is... is what nationality?"


@pytest.mark.parametrize(("message", "need"), [
    ("quick one what inspired James to create his game thx",
     "what inspired James to create his game"),
    ("quick one did Andrew have a pet dog in March 2023 thx",
     "did Andrew have a pet dog in March 2023"),
    ("hmm can you suggest some roadtrip captions?", "can you suggest some roadtrip captions?"),
    ("ok so when is the dentist appointment", "when is the dentist appointment"),
])
def test_a_lead_of_sounds_and_courtesy_goes_from_the_question_after_it(message: str,
                                                                       need: str) -> None:
    assert need_of(message)[:2] == (need, True)


@pytest.mark.parametrize("message", [
    "So much has happened since we last spoke.",  # a verb of being, not of doing
    "There were 7 people that attended.",
    "One who holds to these ethics is known as an altruist.",  # a subject
    "Appreciate what you've got.",  # a verb
    "Thanks what a great day",  # exclaims
    "sorry is that ok",
    "yeah can do that tomorrow.",  # a verb of might before no one
    '* "Great Are You Lord" by All Sons & Daughters:',  # a title
])
def test_a_lead_that_is_a_subject_a_verb_or_an_exclamation_stays(message: str) -> None:
    assert need_of(message).asks is False


@pytest.mark.parametrize(("message", "need"), [
    ("Trying to piece together what the names of Audrey's dogs are.",
     "what the names of Audrey's dogs are."),
    ("Brain's blanking on what the names of Audrey's dogs are.",
     "what the names of Audrey's dogs are."),
    ("My mind is blanking on when we met.", "when we met."),
    ("My memory's fuzzy on where the keys went.", "where the keys went."),
])
def test_piecing_together_and_a_mind_gone_blank_frame_a_request(message: str, need: str) -> None:
    assert need_of(message)[:2] == (need, True)
    assert need_of("Trying to piece together a new life after the move.").asks is False
    assert need_of("Piece the puzzle together where it fits.").asks is False


def test_a_lead_before_a_question_about_nothing_frames_nothing() -> None:
    assert need_of("cool how are you? I went to Paris.").asks is False
    assert need_of("lol what a mess the kitchen is").asks is False  # exclaims
    assert need_of("Just piece where the tiles go.").asks is False  # "piece" asks with "together"


@pytest.mark.parametrize(("message", "need"), [
    ("quick one, how many years passed between Audrey adopting Pixie and her other dogs",
     "how many years passed between Audrey adopting Pixie and her other dogs"),  # a comma
    ("Ugh its pouring rain here and Im stuck inside all day lol. anyway When did Caroline go "
     "to the LGBTQ support group?", "When did Caroline go to the LGBTQ support group?"),
    ("Stuck inside all day lol. anyway Can you suggest some roadtrip captions?",
     "Can you suggest some roadtrip captions?"),
    ("wud appreciate if u could check when did Caroline go to the LGBTQ support group.",
     "when did Caroline go to the LGBTQ support group."),
    ("Please can you say me what Melanie's favourite book is.",
     "what Melanie's favourite book is."),
    ("Please say me what Melanie's favourite book is.", "what Melanie's favourite book is."),
    ("I was hoping you could work out for me when Caroline went to the LGBTQ support group.",
     "when Caroline went to the LGBTQ support group."),
    ("When did Caroline go to the LGBTQ support group - any idea",
     "When did Caroline go to the LGBTQ support group"),
    ("When did Caroline go to the LGBTQ support group, i cant remember rn",
     "When did Caroline go to the LGBTQ support group"),
    ("I was flipping through my journal, and I'm sure I mentioned it to you at some point. "
     "When did Caroline go to the LGBTQ support group?",
     "When did Caroline go to the LGBTQ support group?"),
])
def test_messages_as_people_type_them(message: str, need: str) -> None:
    assert need_of(message)[:2] == (need, True)


def test_a_turn_asking_regarding_a_topic_gives_the_topic_alone() -> None:
    # "regarding" is no topic of its own: the follow-up takes what it is about
    before = "I want to ask you something regarding work commitments, we talked about it."
    assert with_before(need_of("Please tell me, how many fun runs did I miss due to that?"),
                       before).text == "work commitments. how many fun runs did I miss due to that?"


def test_what_those_typed_forms_leave_alone() -> None:
    # a joining word after an abbreviation goes on: it starts no sentence
    assert need_of("He is CEO of Catasys, Inc. and Crede Capital Group.").text == \
        "He is CEO of Catasys, Inc. and Crede Capital Group."
    # "Im" is the asker, as "I'm" is: a sentence of it names nothing
    assert need_of("Ugh and Im stuck inside all day. When did Caroline go to the support "
                   "group?").text == "When did Caroline go to the support group?"
    # a pointer at the past that names its topic stays beside the question
    assert need_of("I told you about the Hamburg pickups. When are they due?").text == \
        "I told you about the Hamburg pickups. When are they due?"
    # "idea" asks only in a closing "any idea": a question about one keeps it
    assert need_of("I'm thinking of a DIY photo booth. Do you think that's a good idea?").asks
    # a closing "any idea" after a statement makes it ask, as "- remind me" does
    assert need_of("The carrier for SHP-40233 - any idea")[:2] == \
        ("The carrier for SHP-40233", True)
    # the asker's haziness after a comma says what is asked was said before
    assert need_of("which hobby did they pick up in October, i cant remember").refers is True
    # hoping is a courtesy only before a request
    assert need_of("I was hoping you could join us for dinner on Friday.").text == \
        "I was hoping you could join us for dinner on Friday."
    # only after what asks, and only when it names nothing
    assert need_of("We went to the lake, i cant remember").text == \
        "We went to the lake, i cant remember"
    assert need_of("When did we go to the lake, i cant remember Lyon").text == \
        "When did we go to the lake, i cant remember Lyon"
