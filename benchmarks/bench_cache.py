"""Prompt-cache reuse: how much of each request repeats the previous one, turn after turn.

Two 50-turn conversations are replayed as an agent would feed them to a context builder, with a
build before every model step (after the user's message and after each batch of tool results) at
a fixed budget. Each request's share that repeats the previous request byte for byte from the
start (tools, then messages, as sent) is what OpenAI's and Anthropic's prompt caches reuse; it is
measured in gpt-4o tokens by :func:`loomctx.eval.cache.prefix_reuse`.

Replays (``_replays.py``): a seeded support/logistics agent with 9 tools (50 turns, 228
messages, 23.3k tokens), and LoCoMo conversation 1 (its first 50 turns, read from ``--locomo``);
the window's constants were chosen on these two. Four more nothing was tuned on
(``_replays_held_out.py``, 50 turns each at seed 1): ``scan logs`` (scan logs of 10-120 lines as
tool outputs, the same shipments asked about again; 208 messages, 71k tokens), ``long outputs``
(manifests of 30-110 lines referred back to; 166 messages, 51k tokens), ``mixed`` (questions,
requests, statements and pasted itineraries; 162 messages, 15k tokens) and ``no past`` (a
self-contained task every turn; 160 messages, 28k tokens).
Systems: ``loomctx`` (a ``Session`` fed message by message) and ``naive`` (system prompt, tools and
the last messages that fit, tool groups whole, exact ChatCounter counts). After each replay, the
same run answers recall questions at the same budget: LoCoMo questions whose evidence is all in
the replayed turns, and facts planted in the agent's early turns, each as a question build and
then, one after another, as the user's next turn (while the replay's tools are at work); a gold
message counts when its id is included and its whole text is in the request
(``loomctx.eval.metric.score_build``).
Each build's wall time is kept; a run reports the median and quartiles of its warm builds (all
but the first).

Run: python benchmarks/bench_cache.py [--quick] [--embedder use|default|hashing] [--locomo PATH]
         [--budgets 4000,16000,128000] [--turns 50] [--systems loomctx,naive]
         [--replays tool,locomo,scan,long,mixed,nopast] [--option recall_share=0] [--json PATH]
Writes benchmarks/results/cache.json (``--json -`` prints it instead) and a table to stdout.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from _replays import Replay, context_text, locomo, tool_agent
from _replays_held_out import HELD_OUT

HERE = Path(__file__).resolve().parent
DEFAULT_LOCOMO = HERE.parent / ".." / "shared" / "data" / "locomo" / "locomo10.json"
MODEL = "gpt-4o"
BUDGETS = (4000, 16000, 128000)
QUICK_TURNS = 12
REPLAYS = {"tool": "tool agent", "locomo": "LoCoMo conv 1", "scan": "scan logs",
           "long": "long outputs", "mixed": "mixed", "nopast": "no past"}
"""``--replays`` keys and the replays' names."""
OPTIONS = ("low_water", "volatile_share", "tool_share", "tool_output_share", "summary_share",
           "recall_share")
"""``BuildOptions`` fields ``--option`` may set."""
TARGETS = {4000: 0.75, 16000: 0.90}
"""Mean reuse each replay should reach at these budgets (issue 40), besides naive's."""
_MESSAGE_KEYS = ("id", "timestamp", "tool_calls", "tool_call_id", "name")


class LoomctxRun:
    """A ``Session`` given each message as it happens and built before each model step with
    the turn API (``build_sync()``: the input is the last user message, shown once)."""

    name = "loomctx"

    def __init__(self, replay: Replay, embedder: Any, options: dict[str, float] | None = None,
                 ) -> None:
        from loomctx import BuildOptions, Session

        self.now = 0.0
        self.session = Session(options=BuildOptions(model=MODEL, **(options or {})),
                               system_prompt=replay.system_prompt, tools=replay.tools,
                               embedder=embedder, clock=lambda: self.now)

    def add(self, msg: dict[str, Any]) -> None:
        self.now = float(msg["timestamp"])
        self.session.add_message_sync(msg["role"], msg.get("content"),
                                      **{k: msg[k] for k in _MESSAGE_KEYS if k in msg})

    def request(self, budget: int, last_user: str) -> tuple[dict[str, Any], int]:
        result = self.session.build_sync(max_tokens=budget)
        return result.payload, result.tokens

    def ask(self, question: str, budget: int) -> tuple[dict[str, Any], set[str], int]:
        result = self.session.build_sync(question, max_tokens=budget)
        return result.payload, {r.id for r in result.report.items if r.included}, result.tokens

    def ask_turn(self, question: str, budget: int) -> tuple[dict[str, Any], set[str], int]:
        """``question`` as the user's next message, built as a turn (then answered, so the
        next one follows an exchange)."""
        self.session.add_message_sync("user", question)
        result = self.session.build_sync(max_tokens=budget)
        self.session.add_message_sync("assistant", "Noted.")
        return result.payload, {r.id for r in result.report.items if r.included}, result.tokens


class NaiveRun:
    """System prompt + tools + the last messages that fit the budget, tool groups kept whole."""

    name = "naive"

    def __init__(self, replay: Replay, chat: Any) -> None:
        self.chat = chat
        self.tools = replay.tools
        self.system = {"role": "system", "content": replay.system_prompt}
        self.groups: list[list[tuple[str, dict[str, Any]]]] = []

    def add(self, msg: dict[str, Any]) -> None:
        plain = {k: v for k, v in msg.items() if k not in ("id", "timestamp")}
        joins = msg["role"] == "tool" and self.groups
        if joins:
            self.groups[-1].append((msg["id"], plain))
        else:
            self.groups.append([(msg["id"], plain)])

    def _fit(self, budget: int, tail: list[dict[str, Any]]) -> tuple[dict[str, Any], set[str],
                                                                      int]:
        used = self.chat.messages([self.system, *tail], self.tools)
        kept: list[list[tuple[str, dict[str, Any]]]] = []
        for group in reversed(self.groups):
            cost = sum(self.chat.message(m) for _, m in group)
            if used + cost > budget:
                break
            used += cost
            kept.append(group)
        kept.reverse()
        messages = [self.system, *(m for g in kept for _, m in g), *tail]
        payload: dict[str, Any] = {"tools": self.tools, "messages": messages}
        return payload, {i for g in kept for i, _ in g}, used

    def request(self, budget: int, last_user: str) -> tuple[dict[str, Any], int]:
        payload, _, tokens = self._fit(budget, [])
        return payload, tokens

    def ask(self, question: str, budget: int) -> tuple[dict[str, Any], set[str], int]:
        return self._fit(budget, [{"role": "user", "content": question}])

    ask_turn = ask  # the last messages that fit, the question last, either way


def replay_one(replay: Replay, system: Any, budget: int, counter: Any) -> dict[str, Any]:
    """Feed ``replay`` to ``system``, building before each model step; measure and ask."""
    from loomctx.eval.cache import prefix_reuse, summarize
    from loomctx.eval.metric import score_build

    start = time.perf_counter()
    series = []
    tokens: list[int] = []
    times: list[float] = []
    previous: dict[str, Any] | None = None
    last_role, last_user = "", ""
    sent: list[tuple[int, dict[str, Any]]] = []  # (messages added before it, request)
    for i, msg in enumerate(replay.messages):
        if msg["role"] == "assistant" and last_role not in ("", "assistant"):
            t0 = time.perf_counter()
            payload, size = system.request(budget, last_user)
            times.append((time.perf_counter() - t0) * 1000)
            series.append(prefix_reuse(previous, payload, counter))
            tokens.append(size)
            previous = payload
            sent.append((i, payload))
        system.add(msg)
        last_role = msg["role"]
        if last_role == "user":
            last_user = str(msg["content"])
    reuse = summarize(series)
    texts = {m["id"]: str(m["content"]) for m in replay.messages}
    recalls: dict[str, list[float]] = {"ask": [], "ask_turn": []}
    for kind, found in recalls.items():  # questions first: the turns add to the session
        for q in replay.questions:
            payload, ids, _ = getattr(system, kind)(q.text, budget)
            gold = [(g, texts[g]) for g in q.gold]
            # The budget is held on the request's own gpt-4o count, not on cl100k here.
            found.append(score_build(context_text(payload), ids, gold, sys.maxsize).recall)
    return {
        "replay": replay.name, "budget": budget, "system": system.name,
        "builds": len(series), "mean_reuse": round(reuse["mean"], 4),
        "min_reuse": round(reuse["min"], 4), "weighted_reuse": round(reuse["weighted"], 4),
        "mean_tokens": round(statistics.fmean(tokens), 1), "max_tokens": max(tokens),
        "over_budget": sum(t > budget for t in tokens),
        "recall": round(statistics.fmean(recalls["ask"]), 4) if replay.questions else None,
        "turn_recall": round(statistics.fmean(recalls["ask_turn"]), 4)
        if replay.questions else None,
        "questions": len(replay.questions),
        "build_ms": _spread(times[1:] or times),
        "ceiling": round(ceiling(replay, sent, budget, counter), 4)
        if system.name == "loomctx" else None,
        "per_build": [[r.reused, r.total] for r in series],
        "seconds": round(time.perf_counter() - start, 1),
    }


def ceiling(replay: Replay, sent: list[tuple[int, dict[str, Any]]], budget: int,
            counter: Any) -> float:
    """The best mean reuse any window of the newest messages reaches on these requests, with
    each message as loomctx's requests showed it (a tool's output cut) and no summary or
    evidence (:func:`loomctx.eval.cache.reuse_ceiling`). A request's messages other than system
    ones (summary, evidence, recall notes) are the replay's messages up to the request, newest
    last."""
    from loomctx.eval.cache import canonical, reuse_ceiling
    from loomctx.tokens.registry import counter_for_model

    chat = counter_for_model(MODEL).chat()
    msgs = replay.messages
    room: dict[int, int] = {}
    reuse: dict[int, int] = {}
    for end, payload in sent:
        shown = [m for m in payload["messages"] if m.get("role") != "system"]
        for k, m in enumerate(shown, start=end - len(shown)):
            if k < 0 or msgs[k]["role"] != m.get("role") or \
                    msgs[k].get("tool_call_id") != m.get("tool_call_id"):
                raise SystemExit(f"{replay.name}: request at message {end} does not end with "
                                 f"the replay's messages (message {k}); no ceiling")
            room[k] = min(room.get(k, budget), chat.message(m))
            reuse[k] = min(reuse.get(k, budget), counter.count(canonical(m)))
    plain = [{k: v for k, v in m.items() if k not in ("id", "timestamp")} for m in msgs]
    system = {"role": "system", "content": replay.system_prompt}
    ends = [end for end, _ in sent]
    return reuse_ceiling(
        ends, [max(i for i in range(end) if msgs[i]["role"] == "user") for end in ends],
        [room.get(i, chat.message(m)) for i, m in enumerate(plain)],
        [reuse.get(i, counter.count(canonical(m))) for i, m in enumerate(plain)],
        sum(counter.count(canonical(x)) for x in [*replay.tools, system]),
        budget - chat.messages([system], replay.tools),
        [m["role"] != "tool" for m in msgs])


def _options(ap: argparse.ArgumentParser, given: list[str]) -> dict[str, float]:
    """``--option NAME=VALUE`` pairs as BuildOptions keywords."""
    from loomctx import BuildOptions
    from loomctx.errors import ConfigError

    out: dict[str, float] = {}
    for text in given:
        name, _, value = text.partition("=")
        try:
            out[name] = float(value)
        except ValueError:
            ap.error(f"--option {text!r}: the value must be a number, e.g. recall_share=0")
        if name not in OPTIONS:
            ap.error(f"--option {text!r}: use one of {', '.join(OPTIONS)}")
        try:  # the options' own check (a share in [0, 1)), as a usage error
            BuildOptions(**{name: out[name]})
        except ConfigError as exc:
            ap.error(f"--option {text!r}: {exc}")
    return out


def _spread(ms: list[float]) -> dict[str, float]:
    """Median and quartiles of build times (ms)."""
    q = statistics.quantiles(ms, n=4) if len(ms) > 1 else [ms[0]] * 3
    return {"median": round(statistics.median(ms), 2), "p25": round(q[0], 2),
            "p75": round(q[2], 2), "max": round(max(ms), 2)}


def _embedder(kind: str) -> Any:
    from loomctx.embed.cache import CachedEmbedder
    from loomctx.testing import HashingEmbedder

    if kind == "hashing":
        return CachedEmbedder(HashingEmbedder())
    if kind == "default":
        from loomctx.embed.default import default_embedder

        return CachedEmbedder(default_embedder())
    from loomctx.embed.use import UniversalSentenceEncoder

    return CachedEmbedder(UniversalSentenceEncoder())


def _table(runs: list[dict[str, Any]]) -> str:
    lines = ["| replay | budget | system | builds | mean reuse | ceiling | min reuse | "
             "mean tokens | recall, question / turn (questions) | "
             "warm build ms, median (p25-p75) |",
             "|---|---:|---|---:|---:|---:|---:|---:|---:|---:|"]
    for r in runs:
        recall = "n/a" if r["recall"] is None else \
            f"{r['recall']:.2f} / {r['turn_recall']:.2f} ({r['questions']})"
        ms = r["build_ms"]
        lines.append(f"| {r['replay']} | {r['budget']:,} | {r['system']} | {r['builds']} | "
                     f"{r['mean_reuse']:.2f} | "
                     f"{'n/a' if r.get('ceiling') is None else format(r['ceiling'], '.2f')} | "
                     f"{r['min_reuse']:.2f} | {r['mean_tokens']:,.0f} | "
                     f"{recall} | {ms['median']:.1f} ({ms['p25']:.1f}-{ms['p75']:.1f}) |")
    return "\n".join(lines)


def verdicts(runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per replay and budget with both systems: loomctx's mean reuse against naive's and the
    target, and whether it reaches both."""
    by = {(r["replay"], r["budget"], r["system"]): r for r in runs}
    out = []
    for (replay, budget, system), run in by.items():
        naive = by.get((replay, budget, "naive"))
        if system != "loomctx" or naive is None:
            continue
        target = TARGETS.get(budget)
        ok = run["mean_reuse"] >= naive["mean_reuse"] and (
            target is None or run["mean_reuse"] >= target)
        out.append({"replay": replay, "budget": budget, "loomctx": run["mean_reuse"],
                    "naive": naive["mean_reuse"], "target": target, "met": ok})
    return out


def _replays(args: argparse.Namespace) -> tuple[list[Replay], list[str]]:
    replays: list[Replay] = []
    notes: list[str] = []
    path = Path(args.locomo)
    for key in args.replays:
        if key == "tool":
            replays.append(tool_agent(args.turns, seed=args.seed))
        elif key != "locomo":
            replays.append(HELD_OUT[REPLAYS[key]](args.turns, seed=args.seed))
        elif path.is_file():
            replays.append(locomo(path, args.turns))
        elif args.locomo_given:
            raise SystemExit(f"--locomo {args.locomo!r}: no such file; pass locomo10.json's "
                             "path")
        else:
            notes.append(f"LoCoMo skipped: {path} not found (pass --locomo PATH)")
    return replays, notes


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--quick", action="store_true",
                    help=f"smoke run: the first {QUICK_TURNS} turns of each replay")
    ap.add_argument("--turns", type=int, default=50, help="turns of each replay (default 50)")
    ap.add_argument("--budgets", default=",".join(map(str, BUDGETS)),
                    help="comma-separated max_tokens, e.g. 4000,16000")
    ap.add_argument("--systems", default="loomctx,naive", help="loomctx, naive or both")
    ap.add_argument("--embedder", choices=("use", "default", "hashing"), default="use",
                    help="loomctx's embedder: USE (this benchmark's default), the library's "
                         "default (USE + MiniLM) or the hashing fake")
    ap.add_argument("--option", action="append", default=[], metavar="NAME=VALUE",
                    help="a BuildOptions share for loomctx, e.g. recall_share=0 (repeatable): "
                         f"{', '.join(OPTIONS)}")
    ap.add_argument("--replays", default=",".join(REPLAYS),
                    help=f"comma-separated, of {', '.join(REPLAYS)} (default: all)")
    ap.add_argument("--locomo", default=None, help=f"locomo10.json (default {DEFAULT_LOCOMO})")
    ap.add_argument("--seed", type=int, default=1, help="seed of the tool-agent replay")
    ap.add_argument("--json", default=str(HERE / "results" / "cache.json"),
                    help="where to write the results; '-' prints them to stdout")
    args = ap.parse_args(argv)
    args.locomo_given = args.locomo is not None
    args.locomo = args.locomo or str(DEFAULT_LOCOMO)
    if args.quick:
        args.turns = min(args.turns, QUICK_TURNS)
    if args.turns < 2:
        ap.error(f"--turns must be >= 2 to compare consecutive requests, got {args.turns}")
    budgets = [int(b) for b in args.budgets.split(",") if b]
    systems = [s for s in args.systems.split(",") if s]
    if unknown := set(systems) - {"loomctx", "naive"}:
        ap.error(f"unknown --systems {sorted(unknown)}: use loomctx and/or naive")
    options = _options(ap, args.option)
    args.replays = [k for k in args.replays.split(",") if k]
    if unknown := set(args.replays) - set(REPLAYS):
        ap.error(f"unknown --replays {sorted(unknown)}: use some of {', '.join(REPLAYS)}")

    from loomctx.tokens.registry import counter_for_model

    tokenizer = counter_for_model(MODEL)
    chat = tokenizer.chat()
    embedder = _embedder(args.embedder) if "loomctx" in systems else None
    replays, notes = _replays(args)
    runs = []
    for replay in replays:
        for budget in budgets:
            for name in systems:
                system = (LoomctxRun(replay, embedder, options) if name == "loomctx"
                          else NaiveRun(replay, chat))
                runs.append(replay_one(replay, system, budget, tokenizer.counter))
                print(f"  {replay.name} {budget} {name}: {runs[-1]['mean_reuse']:.2f} "
                      f"({runs[-1]['seconds']} s)", file=sys.stderr, flush=True)
    out = {
        "model": MODEL, "embedder": args.embedder if embedder is not None else None,
        "api": "turn", "options": options,
        "turns": args.turns, "quick": args.quick, "notes": notes,
        "replays": [{"name": r.name, "turns": len(r.turns), "messages": len(r.messages),
                     "tokens": chat.messages(r.messages), "questions": len(r.questions)}
                    for r in replays],
        "runs": runs,
        "verdicts": verdicts(runs),
    }
    text = json.dumps(out, indent=1)
    if args.json == "-":
        print(text)
    else:
        target = Path(args.json)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text + "\n", encoding="utf-8")
        print(f"model {MODEL}, embedder {out['embedder']}, API {out['api']}, "
              f"{args.turns} turns; " + "; ".join(
                  f"{r['name']}: {r['messages']} messages, {r['tokens']:,} tokens"
                  for r in out["replays"]))
        for note in notes:
            print(note)
        print(_table(runs))
        for v in out["verdicts"]:
            if not v["met"]:
                print(f"below naive or the target: {v['replay']} at {v['budget']:,}: "
                      f"{v['loomctx']:.2f} (naive {v['naive']:.2f}, target {v['target']})")
        print(f"wrote {target}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
