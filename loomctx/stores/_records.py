"""Input checks and normalisation shared by every store backend.

Every backend runs the same checks before it writes anything, so a bad call fails the same way
everywhere (``ConfigError`` naming the bad value) and a failing ``put`` has nothing to undo.
Normalisation is documented behaviour, not an accident of one backend:

- lone surrogates (``"\\ud800"``, text cut from UTF-16 halfway) in text fields become U+FFFD, so a
  row can always be encoded as UTF-8; ids and scope fields (tenant, agent, session) must not
  contain them (identity is never rewritten);
- ``message`` and ``metadata`` are copied through strict JSON, so what ``get`` returns is a plain
  JSON value and later changes to the caller's dicts do not reach the store;
- vectors are stored as float32 and scaled to unit length.
"""

from __future__ import annotations

import heapq
import json
import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from itertools import islice
from operator import gt, itemgetter
from typing import Any, get_args

import numpy as np

from loomctx.errors import ConfigError
from loomctx.stores.protocol import Hit, Level, MemoryRecord, Scope, check_name, check_scope_fields

Key = tuple[str, str | None, str | None, str]
"""A record's identity: (tenant, agent, session, id)."""

LEVELS: frozenset[str] = frozenset(get_args(Level))
_SURROGATE_RE = re.compile("[\ud800-\udfff]")


def clean_text(text: str) -> str:
    """Replace lone surrogates with U+FFFD (the only change made to stored text)."""
    return _SURROGATE_RE.sub("\ufffd", text)


def check_level(level: object, *, optional: bool = False) -> None:
    if level is None and optional:
        return
    if level not in LEVELS:
        raise ConfigError(f"level must be one of {sorted(LEVELS)}, got {level!r}")


def check_limit(limit: object) -> int:
    if not isinstance(limit, int) or isinstance(limit, bool) or limit < 0:
        raise ConfigError(f"limit must be an int >= 0, got {limit!r}")
    return limit


def check_id(record_id: object) -> str:
    if not isinstance(record_id, str) or not record_id:
        raise ConfigError(f"record id must be a non-empty str, got {record_id!r}")
    if _SURROGATE_RE.search(record_id):
        raise ConfigError(f"record id {record_id!r} contains lone surrogates; use valid Unicode")
    return record_id


def key(record: MemoryRecord) -> Key:
    return (record.tenant, record.agent, record.session, record.id)


def order_key(record: MemoryRecord) -> tuple[float, int, str, str, str]:
    """The ``scan`` order: (timestamp, seq, id), then agent and session with None first."""
    return (record.timestamp, record.seq, record.id, record.agent or "", record.session or "")


def check_scope(scope: object) -> Scope:
    if not isinstance(scope, Scope):
        raise ConfigError(
            f"scope must be a loomctx Scope, got {scope!r}; "
            "pass scope=Scope(tenant=..., agent=..., session=...)"
        )
    return scope


def check_tenant(tenant: object) -> str:
    name = check_name(tenant, "tenant", optional=False)
    assert name is not None
    return name


def id_list(ids: object) -> list[str]:
    """The ids of a get/delete/set_level call, once each; a bare str is a caller mistake."""
    if isinstance(ids, (str, bytes)):
        raise ConfigError(f"pass a list of ids, not the single string {ids!r}: use [{ids!r}]")
    return list(dict.fromkeys(ids))  # type: ignore[call-overload]


def check_query(query: object) -> str:
    if not isinstance(query, str):
        raise ConfigError(f"search query must be a str, got {query!r}")
    return clean_text(query)


def to_json(value: Any, what: str, record_id: str) -> str:
    try:
        return json.dumps(value, allow_nan=False, ensure_ascii=True)
    except (TypeError, ValueError) as exc:
        raise ConfigError(
            f"record {record_id!r}: {what} must be JSON-serialisable ({exc}); "
            "convert it to plain dicts, lists, str and finite numbers"
        ) from None


def _optional_text(value: object, what: str, record_id: str) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise ConfigError(f"record {record_id!r}: {what} must be a str or None, got {value!r}")
    return clean_text(value)


def _clean_record(record: object) -> MemoryRecord:
    if not isinstance(record, MemoryRecord):
        raise ConfigError(f"put() takes MemoryRecord objects, got {record!r}")
    rid = check_id(record.id)
    check_scope_fields(record.tenant, record.agent, record.session, f"record {rid!r}")
    if not isinstance(record.content, str):
        raise ConfigError(f"record {rid!r}: content must be a str, got {record.content!r}")
    check_level(record.level)
    for name in ("timestamp", "importance"):
        value = getattr(record, name)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(
            value
        ):
            raise ConfigError(f"record {rid!r}: {name} must be a finite number, got {value!r}")
    if not 0.0 <= record.importance <= 1.0:
        raise ConfigError(f"record {rid!r}: importance must be in 0..1, got {record.importance!r}")
    if isinstance(record.seq, bool) or not isinstance(record.seq, int):
        raise ConfigError(f"record {rid!r}: seq must be an int, got {record.seq!r}")
    if record.message is not None and not isinstance(record.message, Mapping):
        raise ConfigError(f"record {rid!r}: message must be a mapping or None")
    if not isinstance(record.metadata, Mapping):
        raise ConfigError(f"record {rid!r}: metadata must be a mapping, got {record.metadata!r}")
    message = record.message
    if message is not None:
        message = json.loads(to_json(message, "message", rid))
    return replace(
        record,
        content=clean_text(record.content),
        role=_optional_text(record.role, "role", rid),
        group=_optional_text(record.group, "group", rid),
        timestamp=float(record.timestamp),
        importance=float(record.importance),
        message=message,
        metadata=json.loads(to_json(dict(record.metadata), "metadata", rid)),
    )


def unit_rows(vectors: object, what: str) -> np.ndarray:
    """A finite, non-zero 2-D array scaled to unit rows, as float32."""
    try:
        array = np.asarray(vectors, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"{what} must be a numeric array ({exc})") from None
    if array.ndim != 2:
        raise ConfigError(f"{what} must be 2-D (one row per record), got shape {array.shape!r}")
    if not np.isfinite(array).all():
        raise ConfigError(f"{what} contain NaN or infinity; embed the text again")
    norms = np.linalg.norm(array, axis=1, keepdims=True)
    if array.size and (norms == 0).any():
        raise ConfigError(f"{what} contain an all-zero row, which has no direction for cosine")
    return (array / np.where(norms == 0, 1.0, norms)).astype(np.float32)


def dimension_mismatch(what: str, got: int, stored: int) -> str:
    """The error for vectors of another dimension than the store's: another embedder wrote them."""
    return (
        f"{what}: dimension {got}, the store holds dimension {stored}: another embedder wrote "
        "its vectors; open it with that embedder (512: embedder=UniversalSentenceEncoder(), the "
        "default before the joint USE + MiniLM one) or re-embed the store with yours "
        "(`loomctx store reembed STORE`, or loomctx.stores.reembed)"
    )


Embed = Callable[[list[str]], Any]
"""What a store's ``reembed`` takes: the new vectors (one row per text) of a list of texts."""

REEMBED_BATCH = 2048
"""Texts per ``embed`` call while a store re-embeds. A model embedder batches within a call,
sorted by length, over its workers, so few large calls beat many small ones
(``benchmarks/HISTORY.md``, "Re-embedding a store")."""


def new_vectors(embed: Embed, contents: Sequence[str]) -> np.ndarray:
    """The unit rows ``embed`` gives ``contents``, asked ``REEMBED_BATCH`` texts at a time and
    checked like stored vectors: one finite, non-zero row per text, one dimension throughout."""
    if not callable(embed):
        raise ConfigError(f"reembed() takes a function from a list of texts to their vectors, "
                          f"got {embed!r}")
    parts: list[np.ndarray] = []
    for start in range(0, len(contents), REEMBED_BATCH):
        batch = list(contents[start : start + REEMBED_BATCH])
        rows = unit_rows(embed(batch), "re-embedded vectors")
        if rows.shape[0] != len(batch):
            raise ConfigError(f"the embedder returned {rows.shape[0]} vectors for {len(batch)} "
                              "texts; it must return one row per text")
        if parts and rows.shape[1] != parts[0].shape[1]:
            raise ConfigError(f"the embedder returned vectors of dimension {rows.shape[1]} after "
                              f"{parts[0].shape[1]}; one store holds one dimension")
        parts.append(rows)
    return np.concatenate(parts) if parts else np.zeros((0, 0), dtype=np.float32)


def prepare_put(
    records: Sequence[MemoryRecord], vectors: np.ndarray | None, dim: int | None
) -> tuple[list[MemoryRecord], np.ndarray | None]:
    """Check a whole ``put`` call before anything is written; return cleaned records and vectors.

    ``dim`` is the dimension of the vectors already stored (None when there are none).
    """
    if isinstance(records, (str, bytes, MemoryRecord)) or not isinstance(records, Sequence):
        raise ConfigError(f"put() takes a sequence of MemoryRecord, got {records!r}")
    cleaned = [_clean_record(r) for r in records]
    seen: set[Key] = set()
    for record in cleaned:
        if key(record) in seen:
            raise ConfigError(
                f"duplicate record id {record.id!r} in one scope in one put() call "
                f"(tenant={record.tenant!r}, agent={record.agent!r}, session={record.session!r});"
                " ids must differ within a scope"
            )
        seen.add(key(record))
    if vectors is None:
        return cleaned, None
    rows = unit_rows(vectors, "vectors")
    if rows.shape[0] != len(cleaned):
        raise ConfigError(
            f"got {rows.shape[0]} vectors for {len(cleaned)} records; give one row per record"
        )
    if dim is not None and rows.shape[0] and rows.shape[1] != dim:
        raise ConfigError(dimension_mismatch("vectors", rows.shape[1], dim))
    return cleaned, rows


def query_vector(vector: object, dim: int | None) -> np.ndarray:
    """A unit float32 query vector of the stored dimension."""
    row = unit_rows(np.asarray(vector, dtype=np.float64).reshape(1, -1), "query vector")[0]
    if dim is not None and row.shape[0] != dim:
        raise ConfigError(dimension_mismatch("query vector", row.shape[0], dim))
    return row


def cache_rows(vectors: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Check embedding-cache input: non-empty str hashes to finite 1-D vectors (kept as given)."""
    if not isinstance(vectors, Mapping):
        raise ConfigError(f"cache_vectors() takes a mapping of hash to vector, got {vectors!r}")
    out: dict[str, np.ndarray] = {}
    for key, vector in vectors.items():
        if not isinstance(key, str) or not key:
            raise ConfigError(f"content hash must be a non-empty str, got {key!r}")
        row = np.asarray(vector, dtype=np.float32)
        if row.ndim != 1 or not row.size or not np.isfinite(row).all():
            raise ConfigError(f"cached vector for {key!r} must be a finite, non-empty 1-D array")
        out[key] = row.copy()
    return out


def check_model(model: object) -> str:
    if not isinstance(model, str) or not model:
        raise ConfigError(f"model must be a non-empty str (the embedder name), got {model!r}")
    return model


def top(scored: Iterable[tuple[MemoryRecord, float]], limit: int) -> list[Hit]:
    """The ``limit`` best hits, best first; ties ordered by (id, agent, session): deterministic."""
    pairs = list(scored)
    # By score alone first: a dense search's scores seldom tie, and a key tuple per hit cost
    # more than the rest of the search's Python work. Only a tie (or a NaN) needs the full key.
    best = sorted(pairs, key=itemgetter(1), reverse=True)
    scores = [s for _, s in best]
    if not all(map(gt, scores, islice(scores, 1, None))):
        best = heapq.nsmallest(
            limit,
            pairs,  # sized: when all are kept, nsmallest sorts once instead of a heap
            key=lambda pair: (-pair[1], pair[0].id, pair[0].agent or "", pair[0].session or ""),
        )
    return [Hit(record, score) for record, score in best[:limit]]


__all__ = [
    "LEVELS",
    "Key",
    "cache_rows",
    "check_id",
    "check_level",
    "check_limit",
    "check_model",
    "check_query",
    "check_scope",
    "check_tenant",
    "clean_text",
    "id_list",
    "key",
    "order_key",
    "prepare_put",
    "query_vector",
    "to_json",
    "top",
    "unit_rows",
]
