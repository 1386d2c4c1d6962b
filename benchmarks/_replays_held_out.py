"""Cache replays nothing was tuned on: four seeded agent conversations of other shapes.

``bench_cache.py``'s first replays (``_replays.py``) are the ones the turn window's constants
were chosen on. These four are generated the same way (``random.Random(seed)``, nothing read or
downloaded) but differ in what makes a prompt cache hard:

- ``scan logs``: a freight desk agent whose tool returns carrier scan logs of 10-120 lines, and a
  user who keeps asking about the same few shipments (is it still held, what was the last scan);
- ``long outputs``: a warehouse agent reading manifests and stock reports of 30-110 lines, and a
  user who refers back to lines, pallets and bays of earlier outputs;
- ``mixed``: a travel and errands assistant whose user asks, requests and states by turns ("Book
  the same hotel as last time", "My sister lands at 9:40.", "What time is the Lyon train?");
- ``no past``: a utility assistant given a self-contained task every turn (convert, rewrite,
  compute, check a snippet) that never refers to an earlier one.

Each plants facts in its early turns (user messages, short) and asks about them after the
replay, worded differently, so the same run measures recall; ``no past`` has none to ask.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from typing import Any

from _replays import START, Question, Replay, _s, _tool

HUBS = ["HAM-03", "LYS-01", "RTM-07", "ANR-02", "GDN-04", "VLC-01", "BSL-02", "VIE-05"]
SCANS = ["ARRIVAL", "DEPARTURE", "SORTED", "LOADED", "UNLOADED", "WEIGHED", "HELD-CUSTOMS",
         "RELEASED", "HANDOVER", "EXCEPTION", "DOCS-RECEIVED", "OUT-FOR-DELIVERY"]
GOODS = ["pump housings", "ceramic tiles", "LED panels", "coffee beans", "bicycle frames",
         "solar inverters", "paper rolls", "wine cases", "steel brackets", "office chairs"]
CITIES = ["Lyon", "Hamburg", "Milano", "Rotterdam", "Antwerp", "Gdansk", "Valencia", "Basel"]
Fact = tuple[str, str]
"""A statement planted in an early user turn and the question asked about it later."""


class _Writer:
    """What every replay needs: a seeded stream, a clock, ids, and calls answered by tools."""

    def __init__(self, seed: int, prefix: str) -> None:
        self.rng = random.Random(seed)
        self.prefix = prefix
        self.clock = START

    def add(self, msgs: list[dict[str, Any]], turn: int, msg: dict[str, Any]) -> str:
        self.clock += self.rng.randint(15, 120)
        mid = f"{self.prefix}{turn:02d}-{len(msgs)}"
        msgs.append({**msg, "id": mid, "timestamp": self.clock})
        return mid

    def step(self, msgs: list[dict[str, Any]], turn: int,
             calls: list[tuple[str, dict[str, Any]]],
             result: Callable[[str, dict[str, Any]], str]) -> None:
        """One model step that calls tools, and their results."""
        tool_calls = [{"id": f"call_{self.prefix}{turn}_{len(msgs)}_{k}", "type": "function",
                       "function": {"name": n, "arguments": json.dumps(a)}}
                      for k, (n, a) in enumerate(calls)]
        self.add(msgs, turn, {"role": "assistant", "content": None, "tool_calls": tool_calls})
        for call, (n, a) in zip(tool_calls, calls, strict=True):
            self.add(msgs, turn, {"role": "tool", "tool_call_id": call["id"],
                                  "content": result(n, a)})

    def replay(self, name: str, prompt: str, tools: list[dict[str, Any]], turns: int,
               facts: list[Fact],
               turn: Callable[[int], list[dict[str, Any]]]) -> Replay:
        """``turns`` turns of ``turn(t)`` (its messages, the user's first); the facts go in
        front of the user text of turns drawn from 1-19, so a shorter replay is the head of
        the same conversation."""
        at = dict(zip(sorted(self.rng.sample(range(1, 20), len(facts))), facts, strict=True))
        out: list[list[dict[str, Any]]] = []
        questions: list[Question] = []
        for t in range(max(turns, 20)):
            msgs = turn(t)
            if t in at:
                statement, question = at[t]
                msgs[0]["content"] = statement + " " + msgs[0]["content"]
                questions.append(Question(question, (msgs[0]["id"],)))
            out.append(msgs)
        return Replay(name, prompt, tools, out, questions).head(turns)


# -- scan logs ----------------------------------------------------------------------------

SCAN_PROMPT = (
    "You are the tracking assistant of a freight forwarder's operations desk. Look shipments up "
    "with the tools, read carrier scan logs carefully and quote scan times, hubs and references "
    "exactly. When a shipment has been held by customs for more than three days, say so and "
    "offer to open a ticket. Keep answers short.")
SCAN_TOOLS = [
    _tool("get_scan_log", "The carrier's scan log of a shipment, newest last.",
          {"shipment_id": _s("Shipment number, e.g. SHP-40233."),
           "since": _s("ISO date; only scans from then on.")}, ["shipment_id"]),
    _tool("get_shipment", "Status, route and consignee of a shipment.",
          {"shipment_id": _s("Shipment number.")}, ["shipment_id"]),
    _tool("open_ticket", "Open a ticket with the customs team.",
          {"shipment_id": _s("Shipment number."), "note": _s("What the team must know.")},
          ["shipment_id", "note"]),
]
SCAN_FACTS: list[Fact] = [
    ("For the record, the customs broker on SHP-{a} is Kessler & Rau, contact desk 4.",
     "Who is the customs broker handling shipment SHP-{a}?"),
    ("FYI the consignee of SHP-{b} only accepts deliveries between 07:00 and 10:00.",
     "When does the consignee of SHP-{b} accept deliveries?"),
    ("Heads-up: SHP-{c} carries lithium batteries, UN3480, keep it off the night linehaul.",
     "What dangerous goods are on SHP-{c}?"),
    ("Remember that our claim reference with the carrier is CLM-{claim}.",
     "What is our claim reference with the carrier?"),
    ("The client for SHP-{d} wants updates by SMS to +49 151 {phone}.",
     "Where does the client of SHP-{d} want updates sent?"),
]


def scan_logs(turns: int = 50, seed: int = 1) -> Replay:
    """The freight tracking desk: scan logs of 10-120 lines, the same shipments asked again."""
    w = _Writer(seed, "s")
    rng = w.rng
    ships = [str(rng.randint(10000, 99999)) for _ in range(7)]
    values = {"a": ships[0], "b": ships[1], "c": ships[2], "d": ships[3],
              "claim": rng.randint(100000, 999999), "phone": rng.randint(1000000, 9999999)}
    facts = [(s.format(**values), q.format(**values)) for s, q in SCAN_FACTS]

    def log(shipment: str) -> str:
        lines = []
        day, minute = rng.randint(2, 9), rng.randint(0, 600)
        for _ in range(rng.randint(10, 120)):
            minute += rng.randint(3, 240)
            day, minute = day + minute // 1440, minute % 1440
            lines.append(f"2026-01-{day:02d} {minute // 60:02d}:{minute % 60:02d} "
                         f"{rng.choice(HUBS)} {shipment} {rng.choice(SCANS)} "
                         f"pcs={rng.randint(1, 12)}")
        return "\n".join(lines)

    def result(name: str, args: dict[str, Any]) -> str:
        if name == "get_scan_log":
            return log(args["shipment_id"])
        if name == "get_shipment":
            return json.dumps({"shipment_id": args["shipment_id"], "goods": rng.choice(GOODS),
                               "route": rng.sample(CITIES, 3), "status": rng.choice(SCANS)})
        return json.dumps({"ticket": f"TCK-{rng.randint(10**5, 10**6 - 1)}", "ok": True})

    def turn(t: int) -> list[dict[str, Any]]:
        msgs: list[dict[str, Any]] = []
        shp = "SHP-" + rng.choice(ships[:4] if rng.random() < 0.7 else ships)
        ask = rng.choice([
            f"Is {shp} still held?", f"What was the last scan of {shp}?",
            f"Has {shp} moved since this morning?", f"Where is {shp} now?",
            f"Pull the scan log for {shp} please.", f"Any exception scans on {shp}?",
            f"Customer is chasing {shp} again, what do we know?"])
        w.add(msgs, t, {"role": "user", "content": ask})
        if rng.random() < 0.75:
            w.step(msgs, t, [("get_scan_log", {"shipment_id": shp})], result)
        if rng.random() < 0.2:
            w.step(msgs, t, [("get_shipment", {"shipment_id": shp})], result)
        if rng.random() < 0.08:
            w.step(msgs, t, [("open_ticket", {"shipment_id": shp, "note": "held > 3 days"})],
                   result)
        w.add(msgs, t, {"role": "assistant", "content": (
            f"{shp}: last scan {rng.choice(SCANS).lower()} at {rng.choice(HUBS)}, "
            f"{rng.randint(1, 12)} pieces; {rng.choice(['no exception', 'still held', 'moving'])}."
        )})
        return msgs

    return w.replay("scan logs", SCAN_PROMPT, SCAN_TOOLS, turns, facts, turn)


# -- long outputs -------------------------------------------------------------------------

STOCK_PROMPT = (
    "You are the warehouse assistant of a contract logistics site. Read manifests and stock "
    "reports with the tools, refer to lines, pallets and bays exactly as they are written, and "
    "confirm every move before you make it. Weights in kilograms.")
STOCK_TOOLS = [
    _tool("read_manifest", "An inbound manifest, one line per pallet.",
          {"manifest_id": _s("Manifest number, e.g. MF-2231.")}, ["manifest_id"]),
    _tool("stock_report", "Every pallet stored in an aisle, with bay, goods and weight.",
          {"aisle": _s("Aisle letter, A-H.")}, ["aisle"]),
    _tool("move_pallet", "Move a pallet to another bay.",
          {"pallet": _s("Pallet id, e.g. PAL-3321."), "bay": _s("Target bay, e.g. D14.")},
          ["pallet", "bay"]),
]
STOCK_FACTS: list[Fact] = [
    ("Note: bay {bay} is reserved for the Bremen cross-dock until further notice.",
     "Which bay is reserved for the Bremen cross-dock?"),
    ("The auditor's name is Ines Okafor; she comes on {day}.",
     "When does the auditor come, and what is her name?"),
    ("Pallets heavier than {kg} kg must go on the ground level, safety rule.",
     "Above what weight must a pallet be stored on the ground level?"),
    ("Our forklift booking code this month is FK-{code}.",
     "What is this month's forklift booking code?"),
]


def long_outputs(turns: int = 50, seed: int = 1) -> Replay:
    """The warehouse desk: manifests and stock reports of 30-110 lines, referred back to."""
    w = _Writer(seed, "w")
    rng = w.rng
    values = {"bay": f"{rng.choice('ABCDEFGH')}{rng.randint(1, 40)}",
              "day": rng.choice(["Tuesday the 14th", "Thursday the 16th", "Monday the 20th"]),
              "kg": rng.choice([600, 750, 800]), "code": rng.randint(1000, 9999)}
    facts = [(s.format(**values), q.format(**values)) for s, q in STOCK_FACTS]
    seen: list[tuple[str, str, str]] = []  # (pallet, bay, where it was listed)

    def lines(source: str, n: int, aisle: str | None = None) -> str:
        rows = []
        for i in range(n):
            pallet = f"PAL-{rng.randint(1000, 9999)}"
            bay = f"{aisle or rng.choice('ABCDEFGH')}{rng.randint(1, 40)}"
            lot = rng.randint(10**5, 10**6 - 1)
            rows.append(f"L{i + 1:03d} | {pallet} | {rng.randint(4, 60)} x {rng.choice(GOODS)}"
                        f" | {rng.randint(80, 1100)} kg | bay {bay} | lot {lot}")
            if rng.random() < 0.1:
                seen.append((pallet, bay, source))
        return "\n".join(rows)

    def result(name: str, args: dict[str, Any]) -> str:
        if name == "read_manifest":
            return f"Manifest {args['manifest_id']}\n" + lines(args["manifest_id"],
                                                              rng.randint(30, 110))
        if name == "stock_report":
            aisle = args["aisle"]
            return f"Aisle {aisle} stock\n" + lines(f"aisle {aisle}", rng.randint(30, 90), aisle)
        return json.dumps({"moved": args["pallet"], "to": args["bay"], "ok": True})

    def turn(t: int) -> list[dict[str, Any]]:
        msgs: list[dict[str, Any]] = []
        if seen and rng.random() < 0.6:  # back to an item of an earlier output
            pallet, bay, where = rng.choice(seen)
            target = f"{rng.choice('ABCDEFGH')}{rng.randint(1, 40)}"
            ask = rng.choice([
                f"The {pallet} from {where}: what goods and weight were on it?",
                f"Move {pallet} (it was in bay {bay}) to {target}.",
                f"Earlier you listed {pallet}. Is that the same lot as the one in bay {bay}?",
                f"Compare {pallet} with the other pallets from {where}, which is heaviest?"])
            w.add(msgs, t, {"role": "user", "content": ask})
            if ask.startswith("Move"):
                w.step(msgs, t, [("move_pallet", {"pallet": pallet, "bay": target})], result)
        else:
            if rng.random() < 0.5:
                call = ("read_manifest", {"manifest_id": f"MF-{rng.randint(1000, 9999)}"})
                ask = f"Read {call[1]['manifest_id']} and tell me what came in."
            else:
                call = ("stock_report", {"aisle": rng.choice("ABCDEFGH")})
                ask = f"What is stored in aisle {call[1]['aisle']} right now?"
            w.add(msgs, t, {"role": "user", "content": ask})
            w.step(msgs, t, [call], result)
        w.add(msgs, t, {"role": "assistant", "content": rng.choice([
            "Done. The lines match the manifest.", "Here is what I found: "
            f"{rng.randint(2, 30)} pallets of {rng.choice(GOODS)}, the heaviest in bay "
            f"{rng.choice('ABCDEFGH')}{rng.randint(1, 40)}.",
            f"It is the same lot; {rng.randint(80, 1100)} kg on it.",
            "Moved; the bay is confirmed."])})
        return msgs

    return w.replay("long outputs", STOCK_PROMPT, STOCK_TOOLS, turns, facts, turn)


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
    w = _Writer(seed, "m")
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
    w = _Writer(seed, "u")
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


HELD_OUT: dict[str, Callable[..., Replay]] = {
    "scan logs": scan_logs, "long outputs": long_outputs, "mixed": mixed, "no past": no_past}
"""The replays by name, each called as ``make(turns, seed=seed)``."""

__all__ = ["HELD_OUT", "long_outputs", "mixed", "no_past", "scan_logs"]
