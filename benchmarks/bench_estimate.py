"""``--count-as estimate``: how far the character estimate sits above real tokenizers.

For a model loomctx has no tokenizer for, ``estimate`` counts ``other / 2.8 + cjk / 0.6``
characters per token with a +10 % margin (:mod:`loomctx.tokens.estimate`). A budget holds when
the estimate is at least the real count of what is sent, so this measures estimate / real per
piece of text with every bundled tokenizer, in three kinds of text:

- ``english``: LoCoMo conversation turns (``--locomo``), joined into pieces of about 2,000
  characters;
- ``chinese``: the Chinese variant of the generated multilingual conversation
  (:mod:`loomctx.eval.multilingual`), in pieces of about 600 characters;
- ``code``: loomctx's own source files, one piece per file.

The minimum over pieces is what matters (below 1.0 a build could overflow); the mean says how
much budget the estimate leaves unused.

Run: python benchmarks/bench_estimate.py [--locomo PATH] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path
from typing import Any

import loomctx
from loomctx.eval.datasets import load_locomo
from loomctx.eval.multilingual import multilingual_questions
from loomctx.tokens import counter_for_model
from loomctx.tokens.bpe import BUNDLED_ENCODINGS

HERE = Path(__file__).resolve().parent
DEFAULT_LOCOMO = HERE.parent / ".." / "shared" / "data" / "locomo" / "locomo10.json"


def _pieces(texts: list[str], size: int) -> list[str]:
    """Consecutive texts joined by newlines into pieces of about ``size`` characters."""
    out: list[str] = []
    current: list[str] = []
    length = 0
    for text in texts:
        current.append(text)
        length += len(text) + 1
        if length >= size:
            out.append("\n".join(current))
            current, length = [], 0
    if current:
        out.append("\n".join(current))
    return out


def corpora(locomo: Path) -> dict[str, list[str]]:
    english: list[str] = []
    seen: set[int] = set()
    for q in load_locomo(locomo):
        if id(q.history) not in seen:
            seen.add(id(q.history))
            english += [t.content for t in q.history]
    chinese = next(q for q in multilingual_questions(conversations=1, languages=("zh",)))
    code = [p.read_text(encoding="utf-8")
            for p in sorted(Path(loomctx.__file__).parent.rglob("*.py"))]
    return {"english": _pieces(english, 2000),
            "chinese": _pieces([t.content for t in chinese.history], 600),
            "code": [c for c in code if c.strip()]}


def run(locomo: Path) -> dict[str, Any]:
    estimate = counter_for_model("estimate").counter
    out: dict[str, Any] = {"estimator": "estimate (2.8 chars/token, 0.6 CJK chars/token, "
                                        "+10 %)", "kinds": {}}
    for kind, pieces in corpora(locomo).items():
        est = estimate.count_many(pieces)
        row: dict[str, Any] = {"pieces": len(pieces), "chars": sum(map(len, pieces))}
        for encoding in BUNDLED_ENCODINGS:
            real = counter_for_model(encoding).counter.count_many(pieces)
            ratios = [e / r for e, r in zip(est, real, strict=True) if r]
            row[encoding] = {"min": round(min(ratios), 3),
                             "mean": round(statistics.fmean(ratios), 3),
                             "total": round(sum(est) / sum(real), 3)}
        out["kinds"][kind] = row
        print(f"{kind:8} {row['pieces']:5} pieces  " + "  ".join(
            f"{enc} min {row[enc]['min']:.2f} mean {row[enc]['mean']:.2f}"
            for enc in BUNDLED_ENCODINGS), flush=True)
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--locomo", type=Path, default=DEFAULT_LOCOMO)
    p.add_argument("--json", type=Path, default=HERE / "results" / "estimate.json")
    args = p.parse_args(argv)
    out = run(args.locomo)
    args.json.write_text(json.dumps(out, indent=2) + "\n")
    print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
