"""Held-out cache replays of assistants: questions, requests, statements and pasted text by
turns (``mixed``), and a self-contained task every turn that never refers back (``no past``)."""

from __future__ import annotations

import json
from typing import Any

from _replay_writer import CITIES, Fact, ReplayWriter
from _replays import Replay, _s, _tool

# -- mixed: questions, requests, statements -----------------------------------------------

ERRANDS_PROMPT = (
    "You are a personal assistant for travel and errands. Use the tools to search, book and "
    "send; confirm bookings with their reference; keep track of what the user tells you about "
    "people, places and plans, and use it without asking again.")
ERRANDS_TOOLS = [
    _tool("search_hotels", "Hotels in a city for a date range.",
          {"city": _s("City."), "nights": {"type": "integer", "description": "Nights."}},
          ["city"]),
    _tool("book_hotel", "Book a hotel room.",
          {"hotel": _s("Hotel name."), "city": _s("City."), "date": _s("ISO check-in date.")},
          ["hotel", "city", "date"]),
    _tool("train_times", "Trains between two cities on a date.",
          {"origin": _s("From."), "destination": _s("To."), "date": _s("ISO date.")},
          ["origin", "destination"]),
    _tool("send_message", "Send an email or a text to a contact.",
          {"to": _s("Name, address or number."), "body": _s("The message.")}, ["to", "body"]),
]
HOTELS = ["Hotel Bellecour", "Alster Lodge", "Casa Navigli", "Maas Suites", "Hotel Scheldt",
          "Motlawa Inn", "Turia Rooms", "Rheinblick"]
AMENITIES = ["quiet rooms", "breakfast included", "late check-in", "gym", "near the station",
             "free cancellation", "parking", "rooftop bar", "small rooms", "thin walls"]
PLANS = ["client lunch", "site visit", "team dinner", "train back", "call with the bank",
         "museum tour", "supplier meeting", "gym session", "pick up Clara", "flight"]
ERRANDS_FACTS: list[Fact] = [
    ("My sister Clara lands at {land} on Friday, terminal 2.",
     "When does my sister's flight land?"),
    ("Our office address is Rue Garibaldi {no}, Lyon.", "What is the office address?"),
    ("I prefer aisle seats and never want a room below the fourth floor.",
     "What are my seat and room preferences?"),
    ("The dentist moved my appointment to the {dent} at 16:15.",
     "When is my dentist appointment now?"),
    ("Please remember my loyalty number is LY-{loyal}.", "What is my loyalty number?"),
]


def mixed(turns: int = 50, seed: int = 1) -> Replay:
    """A travel and errands assistant: questions, requests and statements by turns."""
    w = ReplayWriter(seed, "m")
    rng = w.rng
    values = {"land": f"{rng.randint(7, 21)}:{rng.choice(['05', '20', '40', '55'])}",
              "no": rng.randint(2, 140), "dent": rng.choice(["3rd", "9th", "17th"]),
              "loyal": rng.randint(10**6, 10**7 - 1)}
    facts = [(s.format(**values), q.format(**values)) for s, q in ERRANDS_FACTS]
    booked: list[tuple[str, str]] = []

    def result(name: str, args: dict[str, Any]) -> str:
        if name == "search_hotels":
            return json.dumps({"hotels": [{
                "name": h, "price_eur": rng.randint(70, 260),
                "rating": round(rng.uniform(3.2, 4.9), 1),
                "floors": rng.randint(2, 9), "distance_km": round(rng.uniform(0.2, 6), 1),
                "notes": f"{rng.choice(AMENITIES)}; {rng.choice(AMENITIES)}; "
                         f"{rng.randint(2, 40)} reviews mention {rng.choice(AMENITIES)}"}
                for h in rng.sample(HOTELS * 2, rng.randint(5, 14))]})
        if name == "book_hotel":
            booked.append((args["hotel"], args["city"]))
            return json.dumps({"booking": f"BK-{rng.randint(10**5, 10**6 - 1)}", "ok": True})
        if name == "train_times":
            return json.dumps({"trains": [{
                "departs": f"{h:02d}:{rng.choice(['04', '19', '34', '49'])}",
                "duration": f"{rng.randint(1, 6)}h{rng.randint(0, 59):02d}",
                "changes": rng.randint(0, 2), "price_eur": rng.randint(19, 180)}
                for h in sorted(rng.sample(range(6, 22), rng.randint(4, 10)))]})
        return json.dumps({"sent": True})

    def turn(t: int) -> list[dict[str, Any]]:
        msgs: list[dict[str, Any]] = []
        city, other = rng.sample(CITIES, 2)
        date = f"2026-02-{rng.randint(1, 28):02d}"
        kind = rng.choice(["question", "request", "statement", "request", "question",
                           "pasted"])
        calls: list[tuple[str, dict[str, Any]]] = []
        if kind == "pasted":  # an itinerary or an email, pasted with a request around it
            lines = "\n".join(f"{date} {rng.randint(6, 22):02d}:{rng.choice(['00', '30'])} "
                              f"{rng.choice(CITIES)}: {rng.choice(PLANS)}"
                              for _ in range(rng.randint(8, 45)))
            ask = rng.choice(["Here is the itinerary they sent, can you check it for clashes?",
                              "Put these in my calendar:", "My colleague sent this, FYI."])
            ask += "\n\n" + lines
        elif kind == "statement":
            ask = rng.choice([f"I'll be in {city} from the {rng.randint(2, 27)}th.",
                              f"The meeting in {city} moved to next week.",
                              "Actually, forget the museum, we ran out of time.",
                              f"My manager approved the trip to {city}.",
                              "Hm, the last train was too early for me."])
        elif kind == "question":
            ask = rng.choice([f"What time is the first train from {city} to {other}?",
                              f"Which hotels are there in {city} under 150 euros?",
                              "and the one after that?", "How long is the ride again?",
                              f"Is it cheaper to stay two nights in {city}?"])
            if "train" in ask or "ride" in ask:
                calls.append(("train_times", {"origin": city, "destination": other,
                                              "date": date}))
            elif "hotel" in ask or "nights" in ask:
                calls.append(("search_hotels", {"city": city, "nights": 2}))
        else:
            if booked and rng.random() < 0.5:
                hotel, where = rng.choice(booked)
                ask = rng.choice(["Book the same hotel as last time for the 12th.",
                                  f"Book {hotel} again, same as before.",
                                  "Use my usual hotel there please"])
                calls.append(("book_hotel", {"hotel": hotel, "city": where,
                                             "date": "2026-02-12"}))
            elif rng.random() < 0.5:
                ask = rng.choice(["Send it to the address I gave you.",
                                  "Tell Clara the plan, by text.",
                                  "Forward the booking to the office"])
                calls.append(("send_message", {"to": rng.choice(["Clara", "office"]),
                                               "body": f"Plan for {date} in {city}."}))
            else:
                ask = f"Book me a room in {city} for {date}, {rng.choice(HOTELS)} if free."
                calls.append(("book_hotel", {"hotel": rng.choice(HOTELS), "city": city,
                                             "date": date}))
        w.add(msgs, t, {"role": "user", "content": ask})
        if calls:
            w.step(msgs, t, calls, result)
        w.add(msgs, t, {"role": "assistant", "content": " ".join(rng.sample([
            "Noted.", "Done, the confirmation is in your inbox.",
            f"The first one leaves at {rng.randint(6, 9)}:{rng.choice(['04', '34'])}.",
            f"Two options under budget; I'd take {rng.choice(HOTELS)}, it is quiet and close "
            "to the station.", "Sent.", "Got it, I will keep that in mind.",
            f"There is a {rng.choice(PLANS)} the same day, so I left an hour free.",
            f"If you prefer, I can look at {rng.choice(CITIES)} instead."], rng.randint(1, 4)))})
        return msgs

    return w.replay("mixed", ERRANDS_PROMPT, ERRANDS_TOOLS, turns, facts, turn)


# -- no past --------------------------------------------------------------------------------

UTILITY_PROMPT = (
    "You are a utility assistant. Each request is self-contained: convert, rewrite, compute or "
    "check what the user pastes, using the tools for arithmetic and units. Answer with the "
    "result only, no preamble.")
UTILITY_TOOLS = [
    _tool("calculate", "Evaluate an arithmetic expression exactly.",
          {"expression": _s("E.g. (412.5 * 3) / 7.")}, ["expression"]),
    _tool("convert_units", "Convert a quantity between units.",
          {"value": {"type": "number", "description": "The quantity."},
           "from_unit": _s("Unit given."), "to_unit": _s("Unit wanted.")},
          ["value", "from_unit", "to_unit"]),
    _tool("lint", "Check a code snippet and list its problems.",
          {"language": _s("Programming language."), "code": _s("The snippet.")},
          ["language", "code"]),
]
NOUNS = ["report", "invoice", "meeting", "supplier", "budget", "schedule", "warehouse", "team",
         "customer", "release", "contract", "shipment", "draft", "survey", "server", "policy"]
VERBS = ["reviews", "delays", "approves", "moves", "updates", "cancels", "extends", "checks"]


def no_past(turns: int = 50, seed: int = 1) -> Replay:
    """A utility assistant: a new self-contained task every turn, never a reference back."""
    w = ReplayWriter(seed, "u")
    rng = w.rng

    def sentence() -> str:
        return (f"The {rng.choice(NOUNS)} {rng.choice(VERBS)} the {rng.choice(NOUNS)} "
                f"before the {rng.choice(NOUNS)} on {rng.choice(['Monday', 'Friday', 'the 3rd'])}.")

    def result(name: str, args: dict[str, Any]) -> str:
        if name == "lint":
            return json.dumps({"problems": [f"line {rng.randint(1, 9)}: "
                                            f"{rng.choice(['unused name', 'missing return'])}"
                                            for _ in range(rng.randint(0, 3))]})
        return json.dumps({"result": round(rng.uniform(0.5, 99999), 3)})

    def turn(t: int) -> list[dict[str, Any]]:
        msgs: list[dict[str, Any]] = []
        kind = rng.randrange(5)
        calls: list[tuple[str, dict[str, Any]]] = []
        answer = " ".join(sentence() for _ in range(rng.randint(2, 12)))
        if kind == 0:
            text = [sentence() for _ in range(rng.randint(8, 45))]
            ask = "Rewrite this in plain English, shorter:\n\n" + " ".join(text)
            answer = " ".join(text[::2])
        elif kind == 1:
            rows = [(rng.randint(1, 999), rng.choice(NOUNS), round(rng.uniform(1, 500), 2))
                    for _ in range(rng.randint(10, 90))]
            ask = "Turn this CSV (id,item,price) into a JSON list:\n" + "\n".join(
                f"{i},{item},{price:.2f}" for i, item, price in rows)
            answer = json.dumps([{"id": i, "item": item, "price": price}
                                 for i, item, price in rows])
        elif kind == 2:
            expr = f"({rng.uniform(1, 900):.1f} * {rng.randint(2, 40)}) / {rng.randint(2, 9)}"
            ask = f"Compute {expr} for me"
            calls.append(("calculate", {"expression": expr}))
        elif kind == 3:
            value, pair = rng.randint(1, 5000), rng.choice([("kg", "lb"), ("km", "mi"),
                                                              ("l", "gal"), ("C", "F")])
            ask = f"{value} {pair[0]} in {pair[1]}?"
            calls.append(("convert_units", {"value": value, "from_unit": pair[0],
                                            "to_unit": pair[1]}))
        else:
            name = rng.choice(NOUNS)
            code = "\n".join([f"def {name}_{i}(x):" + f"\n    y = x * {rng.randint(2, 9)}"
                              + ("\n    return y" if rng.random() < 0.6 else "")
                              for i in range(rng.randint(2, 8))])
            ask = f"Check this snippet:\n```python\n{code}\n```"
            calls.append(("lint", {"language": "python", "code": code}))
        w.add(msgs, t, {"role": "user", "content": ask})
        if calls:
            w.step(msgs, t, calls, result)
        w.add(msgs, t, {"role": "assistant", "content": answer})
        return msgs

    return w.replay("no past", UTILITY_PROMPT, UTILITY_TOOLS, turns, [], turn)


__all__ = ["mixed", "no_past"]
