"""Conversations replayed turn by turn by ``bench_cache.py``: a seeded tool-using agent and LoCoMo.

A :class:`Replay` is what an agent loop would feed a context builder: a system prompt, tool
schemas, and turns of OpenAI messages in order. The driver builds before every model step, that
is before each assistant message that follows a non-assistant one (after the user's message and
after each batch of tool results). Questions asked at the end, with the ids of the messages that
hold their answers, measure evidence recall on the same run.

The tool-using replay is generated from a seed (``random.Random``), so every run and machine sees
the same 50 turns; nothing is downloaded. LoCoMo is read from the file given, never copied.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

START = 1_767_603_600.0
"""2026-01-05 09:00 UTC: the first message of the generated replay."""


@dataclass(frozen=True)
class Question:
    """A question asked after the replay and the ids of the messages holding its answer."""

    text: str
    gold: tuple[str, ...]


@dataclass(frozen=True)
class Replay:
    """A conversation to replay: prompt, tools, turns of messages, questions for recall."""

    name: str
    system_prompt: str
    tools: list[dict[str, Any]]
    turns: list[list[dict[str, Any]]]
    """Each turn: OpenAI messages with ``id`` and ``timestamp``, user message(s) first."""
    questions: list[Question] = field(default_factory=list)

    @property
    def messages(self) -> list[dict[str, Any]]:
        return [m for turn in self.turns for m in turn]

    def head(self, turns: int) -> Replay:
        """The first ``turns`` turns, with the questions whose evidence is all inside them."""
        kept = self.turns[:turns]
        ids = {m["id"] for turn in kept for m in turn}
        return Replay(self.name, self.system_prompt, self.tools, kept,
                      [q for q in self.questions if set(q.gold) <= ids])


# -- the tool-using agent ---------------------------------------------------------------------

SYSTEM_PROMPT = (
    "You are the operations assistant of a freight forwarding company. You help the logistics "
    "desk track shipments, manage orders and returns, book pickups, quote rates and answer "
    "policy questions. Always look facts up with the tools instead of guessing; quote shipment, "
    "order and ticket numbers exactly; when a tool fails, say so and suggest the next step. "
    "Keep answers short and factual, list dates in ISO format and weights in kilograms. Never "
    "promise delivery dates the carrier has not confirmed. Escalate customs holds older than "
    "five days and any damaged hazardous goods to the duty manager through a priority ticket."
)


def _tool(name: str, description: str, props: dict[str, Any], required: list[str]
          ) -> dict[str, Any]:
    return {"type": "function", "function": {
        "name": name, "description": description,
        "parameters": {"type": "object", "properties": props, "required": required}}}


def _s(description: str, **extra: Any) -> dict[str, Any]:
    return {"type": "string", "description": description, **extra}


TOOLS: list[dict[str, Any]] = [
    _tool("track_shipment", "Current status and scan history of a shipment.",
          {"shipment_id": _s("Shipment number, e.g. SHP-40233."),
           "include_history": {"type": "boolean", "description": "Include every scan event."}},
          ["shipment_id"]),
    _tool("get_order", "An order with its lines, amounts and linked shipments.",
          {"order_id": _s("Order number, e.g. ORD-118204.")}, ["order_id"]),
    _tool("get_customer", "A customer account: contacts, terms, open tickets.",
          {"customer_id": _s("Customer number, e.g. CUS-2231.")}, ["customer_id"]),
    _tool("search_knowledge_base", "Search the policy and procedure articles.",
          {"query": _s("What to look for."),
           "limit": {"type": "integer", "description": "Articles to return (1-5)."}},
          ["query"]),
    _tool("create_return", "Open a return authorisation for order lines.",
          {"order_id": _s("Order number."), "reason": _s("Why the goods come back.",
                                                        enum=["damaged", "wrong_item",
                                                              "not_needed", "late"]),
           "lines": {"type": "array", "items": {"type": "integer"},
                     "description": "Line numbers to return."}},
          ["order_id", "reason", "lines"]),
    _tool("schedule_pickup", "Book a carrier pickup at an address.",
          {"site": _s("Site code or street address."), "date": _s("ISO date."),
           "window": _s("Time window.", enum=["08-12", "12-16", "16-20"]),
           "pallets": {"type": "integer", "description": "Number of pallets."}},
          ["site", "date", "window"]),
    _tool("get_shipping_rates", "Quote rates between two places for a weight.",
          {"origin": _s("Origin city or port."), "destination": _s("Destination city or port."),
           "weight_kg": {"type": "number", "description": "Gross weight in kilograms."},
           "service": _s("Service level.", enum=["economy", "standard", "express"])},
          ["origin", "destination", "weight_kg"]),
    _tool("update_delivery_address", "Change where a shipment is delivered (before dispatch).",
          {"shipment_id": _s("Shipment number."), "address": _s("The new full address.")},
          ["shipment_id", "address"]),
    _tool("open_ticket", "Open a support ticket with the duty team.",
          {"subject": _s("One-line summary."), "priority": _s("Urgency.",
                                                              enum=["low", "normal", "high"]),
           "body": _s("Details for the team.")},
          ["subject", "priority", "body"]),
]

CITIES = ["Lyon", "Hamburg", "Milano", "Rotterdam", "Antwerp", "Gdansk", "Valencia", "Porto",
          "Basel", "Vienna", "Marseille", "Bremen", "Genoa", "Le Havre", "Duisburg", "Zaragoza"]
STATUSES = ["in transit", "customs hold", "out for delivery", "at hub", "delayed by weather",
            "awaiting pickup", "delivered"]
GOODS = ["steel brackets", "ceramic tiles", "pump housings", "office chairs", "LED panels",
         "coffee beans", "bicycle frames", "solar inverters", "paper rolls", "wine cases"]
EVENTS = ["arrival scan", "departure scan", "sorted", "loaded on linehaul", "unloaded",
          "customs documents received", "held for inspection", "released by customs",
          "handed to partner carrier", "delivery attempt failed: site closed", "weighed"]
MODALS = ["must", "should", "may"]
ACTIONS = ["record the case", "inform the customer", "check the manifest",
           "photograph the goods", "ask the carrier for a report"]
ADVICE = ["no action is needed", "I suggest calling the carrier",
          "a ticket may be needed if it is still held tomorrow",
          "the customer can be told the documents are complete"]
KB_TOPICS = ["damaged goods claims", "customs holds", "dangerous goods", "returns window",
             "pickup cut-off times", "address changes", "demurrage charges", "insurance cover"]

FACTS: list[tuple[str, str]] = [
    ("For later: our account number with you is {acc}.", "What is our account number?"),
    ("Note that our default pickup site is dock {dock} at the {city} warehouse.",
     "Which dock and warehouse is our default pickup site?"),
    ("Every invoice must quote purchase order {po}, accounting insists.",
     "Which purchase order must every invoice quote?"),
    ("Our dangerous goods permit is {hz}, valid until {month} 2027.",
     "What is our dangerous goods permit number and until when is it valid?"),
    ("For shipments to Poland we prefer the carrier {carrier}.",
     "Which carrier do we prefer for shipments to Poland?"),
    ("The escalation code for priority cases is {esc}.",
     "What is the escalation code for priority cases?"),
]


FACT_TURNS = 16
"""Facts are stated in turns 1..15 and asked about after the replay."""


class _ToolAgent:
    """Seeded generator of one support/logistics agent conversation."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.shipments = [f"SHP-{self.rng.randint(10000, 99999)}" for _ in range(14)]
        self.orders = [f"ORD-{self.rng.randint(100000, 999999)}" for _ in range(10)]
        self.customers = [f"CUS-{self.rng.randint(1000, 9999)}" for _ in range(5)]
        rng = self.rng
        self.values = {"acc": f"ACC-{rng.randint(10000, 99999)}", "dock": rng.randint(2, 19),
                       "city": rng.choice(CITIES), "po": f"PO-{rng.randint(10**6, 10**7 - 1)}",
                       "hz": f"HZ-{rng.randint(1000, 9999)}-{rng.choice('ABCDEF')}",
                       "month": rng.choice(["March", "June", "September"]),
                       "carrier": rng.choice(["NordFreight", "RailCargo"]),
                       "esc": f"ESC-{rng.choice('KLMNP')}{rng.randint(100, 999)}"}
        self.clock = START

    def _date(self, turn: int) -> str:
        return f"2026-01-{5 + turn // 4:02d}"

    def _events(self, n: int, city: str) -> list[dict[str, Any]]:
        rng = self.rng
        return [{"time": f"2026-01-{1 + i // 6:02d}T{rng.randint(0, 23):02d}:"
                         f"{rng.randint(0, 59):02d}Z",
                 "place": rng.choice([city, *rng.sample(CITIES, 2)]),
                 "event": rng.choice(EVENTS), "scan_id": f"S{rng.randint(10**7, 10**8 - 1)}"}
                for i in range(n)]

    def _result(self, name: str, args: dict[str, Any]) -> str:
        rng = self.rng
        long = rng.random() < 0.18
        if name == "track_shipment":
            city = rng.choice(CITIES)
            out: dict[str, Any] = {"shipment_id": args["shipment_id"],
                                   "status": rng.choice(STATUSES), "location": city,
                                   "goods": rng.choice(GOODS),
                                   "weight_kg": rng.randint(40, 9000)}
            out["events"] = self._events(rng.randint(8, 34) if long else rng.randint(1, 3), city)
            return json.dumps(out)
        if name == "get_order":
            lines = [{"line": i + 1, "item": rng.choice(GOODS), "qty": rng.randint(1, 400),
                      "unit_price_eur": round(rng.uniform(2, 900), 2)}
                     for i in range(rng.randint(10, 36) if long else rng.randint(1, 4))]
            return json.dumps({"order_id": args["order_id"], "lines": lines,
                               "shipments": rng.sample(self.shipments, rng.randint(1, 2))})
        if name == "search_knowledge_base":
            topic = args["query"]
            paras = rng.randint(6, 22) if long else rng.randint(1, 2)
            body = " ".join(
                f"Section {p + 1}: for {topic}, the desk {rng.choice(MODALS)} "
                f"{rng.choice(ACTIONS)} within {rng.randint(1, 10)} working days; exceptions "
                f"apply to {rng.choice(GOODS)} and to consignments routed through "
                f"{rng.choice(CITIES)}."
                for p in range(paras))
            return json.dumps({"articles": [{"title": topic.title(), "text": body}]})
        if name == "get_customer":
            return json.dumps({"customer_id": args["customer_id"], "terms": "net 30",
                               "open_tickets": rng.randint(0, 4),
                               "segment": rng.choice(["key account", "standard", "new"])})
        if name == "get_shipping_rates":
            rows = [{"carrier": rng.choice(["NordFreight", "EuroLine", "RailCargo", "SeaLink"]),
                     "service": svc, "days": rng.randint(1, 9),
                     "price_eur": round(rng.uniform(80, 4000), 2)}
                    for svc in ["economy", "standard", "express"]
                    for _ in range(rng.randint(3, 8) if long else 1)]
            return json.dumps({"quotes": rows})
        return json.dumps({"ok": True, "reference": f"REF-{rng.randint(10**5, 10**6 - 1)}",
                           "message": f"{name.replace('_', ' ')} done"})

    def _call(self, turn: int) -> tuple[str, dict[str, Any]]:
        rng = self.rng
        name = rng.choices([t["function"]["name"] for t in TOOLS],
                           weights=[6, 3, 1, 3, 1, 1, 2, 1, 1])[0]
        args: dict[str, Any] = {
            "track_shipment": lambda: {"shipment_id": rng.choice(self.shipments)},
            "get_order": lambda: {"order_id": rng.choice(self.orders)},
            "get_customer": lambda: {"customer_id": rng.choice(self.customers)},
            "search_knowledge_base": lambda: {"query": rng.choice(KB_TOPICS), "limit": 1},
            "create_return": lambda: {"order_id": rng.choice(self.orders),
                                      "reason": rng.choice(["damaged", "wrong_item", "late"]),
                                      "lines": sorted(rng.sample(range(1, 6), 2))},
            "schedule_pickup": lambda: {"site": rng.choice(CITIES), "date": self._date(turn + 2),
                                        "window": rng.choice(["08-12", "12-16"]),
                                        "pallets": rng.randint(1, 12)},
            "get_shipping_rates": lambda: {"origin": rng.choice(CITIES),
                                           "destination": rng.choice(CITIES),
                                           "weight_kg": rng.randint(50, 5000)},
            "update_delivery_address": lambda: {"shipment_id": rng.choice(self.shipments),
                                                "address": f"{rng.randint(1, 200)} Quai "
                                                           f"{rng.choice(CITIES)}"},
            "open_ticket": lambda: {"subject": "Customs hold over five days", "priority": "high",
                                    "body": f"Shipment {rng.choice(self.shipments)} is held."},
        }[name]()
        return name, args

    def _ask(self, calls: list[tuple[str, dict[str, Any]]]) -> str:
        rng = self.rng
        if not calls:
            return rng.choice(["Thanks, that is all for that one.",
                               "Can you remind me what our cut-off for same-day pickups is?",
                               "Good. Please keep answers short today, we are busy.",
                               "Is there anything else open on the desk for this morning?"])
        name, args = calls[0]
        subject = next(iter(args.values()))
        return rng.choice([
            f"Customer on the line about {subject}: can you check {name.replace('_', ' ')}?",
            f"Please look into {subject} for me, we need an answer before noon.",
            f"Next one: {subject}. What do we have on it?",
            f"Quick check on {subject} please, the client is chasing.",
        ])

    def _answer(self, calls: list[tuple[str, dict[str, Any]]]) -> str:
        rng = self.rng
        if not calls:
            return rng.choice(["Understood.", "Same-day pickups must be booked before 11:00.",
                               "Nothing else is open this morning.", "Noted, I will be brief."])
        done = ", ".join(f"{n.replace('_', ' ')} for {next(iter(a.values()))}" for n, a in calls)
        advice = rng.choice(ADVICE)
        return f"I ran {done}. {rng.choice(STATUSES).capitalize()} is the latest status; {advice}."

    def _add(self, msgs: list[dict[str, Any]], turn: int, msg: dict[str, Any]) -> None:
        """Append ``msg`` with its id and a timestamp 20-90 s after the previous message."""
        self.clock += self.rng.randint(20, 90)
        msgs.append({**msg, "id": f"t{turn:02d}-{len(msgs)}", "timestamp": self.clock})

    def _turn(self, turn: int, fact: tuple[str, str] | None) -> tuple[list[dict[str, Any]],
                                                                      Question | None]:
        rng = self.rng
        msgs: list[dict[str, Any]] = []
        rounds = 0 if rng.random() < 0.2 else (1 if rng.random() < 0.8 else 2)
        plan = [[self._call(turn) for _ in range(rng.choice([1, 1, 2, 3]))]
                for _ in range(rounds)]
        ask = self._ask(plan[0] if plan else [])
        if fact is not None:
            ask = fact[0].format(**self.values) + " " + ask
        self._add(msgs, turn, {"role": "user", "content": ask})
        question = None if fact is None else Question(fact[1], (msgs[-1]["id"],))
        for r, calls in enumerate(plan):
            tool_calls = [{"id": f"call_{turn}_{r}_{k}", "type": "function",
                           "function": {"name": n, "arguments": json.dumps(a)}}
                          for k, (n, a) in enumerate(calls)]
            self._add(msgs, turn, {"role": "assistant", "content": None,
                                   "tool_calls": tool_calls})
            for call, (n, a) in zip(tool_calls, calls, strict=True):
                self._add(msgs, turn, {"role": "tool", "tool_call_id": call["id"],
                                       "content": self._result(n, a)})
        answer = self._answer([c for calls in plan for c in calls])
        self._add(msgs, turn, {"role": "assistant", "content": answer})
        return msgs, question

    def replay(self, turns: int) -> Replay:
        """``turns`` turns; the facts are planted in turns 1-15, so a shorter replay is the
        head of the same conversation (the random stream does not depend on ``turns``)."""
        fact_turns = sorted(self.rng.sample(range(1, FACT_TURNS), len(FACTS)))
        out: list[list[dict[str, Any]]] = []
        questions: list[Question] = []
        for turn in range(max(turns, FACT_TURNS)):
            fact = FACTS[fact_turns.index(turn)] if turn in fact_turns else None
            msgs, question = self._turn(turn, fact)
            out.append(msgs)
            if question is not None:
                questions.append(question)
        return Replay("tool agent", SYSTEM_PROMPT, TOOLS, out, questions).head(turns)


def tool_agent(turns: int = 50, seed: int = 1) -> Replay:
    """The seeded support/logistics agent; at seed 1, 50 turns are 228 messages, 23.3k gpt-4o
    tokens, with 12 tool results of 300-1,400 tokens."""
    return _ToolAgent(seed).replay(turns)


# -- LoCoMo -----------------------------------------------------------------------------------

LOCOMO_PROMPT = "You are a friendly assistant chatting with a long-time friend. Answer in kind."


def locomo(path: str | Path, turns: int = 50, sample: int = 0) -> Replay:
    """LoCoMo conversation ``sample`` (0 = the first), its first ``turns`` turns.

    The loader maps speaker A to ``user`` and speaker B to ``assistant``. A turn starts at a user
    message that follows a non-user one, so a session that opens with speaker B continues the
    previous turn. Questions (categories 1-4) are kept when all their evidence is replayed.
    """
    from loomctx.eval.datasets import load_locomo

    questions = load_locomo(path)
    histories: list[Any] = []
    for q in questions:
        if not histories or q.history is not histories[-1]:
            histories.append(q.history)
    history = histories[sample]
    grouped: list[list[dict[str, Any]]] = []
    previous = None
    for t in history:
        msg = {"role": t.role, "content": t.content, "id": t.id, "timestamp": t.timestamp}
        if not grouped or (t.role == "user" and previous != "user"):
            grouped.append([])
        grouped[-1].append(msg)
        previous = t.role
    replay = Replay("LoCoMo conv 1" if sample == 0 else f"LoCoMo conv {sample + 1}",
                    LOCOMO_PROMPT, [], grouped,
                    [Question(q.question, q.gold) for q in questions if q.history is history])
    return replay.head(turns)


def context_text(payload: dict[str, Any]) -> str:
    """Every text of a request's messages, for the verbatim gold check."""
    parts: list[str] = []
    for msg in payload.get("messages", []):
        content = msg.get("content")
        if isinstance(content, str):
            parts.append(content)
        elif isinstance(content, list):
            parts.extend(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return "\n\n".join(parts)


__all__ = ["LOCOMO_PROMPT", "SYSTEM_PROMPT", "TOOLS", "Question", "Replay", "context_text",
           "locomo", "tool_agent"]
