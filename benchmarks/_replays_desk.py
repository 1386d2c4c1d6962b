"""Held-out cache replays of an operations desk: carrier scan logs of 10-120 lines with the
same shipments asked about again, and manifests of 30-110 lines referred back to."""

from __future__ import annotations

import json
from typing import Any

from _replay_writer import CITIES, GOODS, HUBS, SCANS, Fact, ReplayWriter
from _replays import Replay, _s, _tool

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
    w = ReplayWriter(seed, "s")
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
    w = ReplayWriter(seed, "w")
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


__all__ = ["long_outputs", "scan_logs"]
