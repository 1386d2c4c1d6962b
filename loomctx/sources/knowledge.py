"""Knowledge (RAG) over a folder of text / markdown files: token-sized chunks ranked by BM25.

Files are split on blank lines into paragraphs, paragraphs packed into chunks of at most
``chunk_tokens`` tokens (a paragraph longer than that is cut at token boundaries). The index is
built once, on first use, for the counter of that build.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from loomctx.errors import ConfigError, InputError
from loomctx.items import RAW_RELEVANCE, ContextItem, Tier
from loomctx.sources.floors import check_floor, mark_knowledge
from loomctx.sources.protocol import BaseSource, SourceRequest
from loomctx.text.lexical import BM25Index
from loomctx.tokens.protocol import TokenCounter

SUFFIXES = (".txt", ".md", ".markdown", ".rst")


@dataclass(frozen=True)
class Document:
    """A knowledge document: an id (e.g. the relative path) and its text."""

    id: str
    text: str


def load_folder(path: str | os.PathLike[str]) -> list[Document]:
    """Every text/markdown file below ``path``, sorted by relative path."""
    root = Path(path)
    if not root.is_dir():
        raise InputError(f"knowledge folder {str(root)!r} does not exist or is not a folder",
                         where="--knowledge")
    docs = []
    for f in sorted(root.rglob("*")):
        if f.is_file() and f.suffix.lower() in SUFFIXES:
            try:
                text = f.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as exc:
                raise InputError(f"cannot read {f.name!r} as UTF-8 text: {exc}",
                                 where=str(f.relative_to(root))) from exc
            docs.append(Document(id=f.relative_to(root).as_posix(), text=text))
    return docs


def chunk(text: str, counter: TokenCounter, max_tokens: int) -> list[str]:
    """Paragraph-aligned chunks of at most ``max_tokens`` tokens each."""
    paras = [p.strip() for p in text.replace("\r\n", "\n").split("\n\n") if p.strip()]
    chunks: list[str] = []
    cur: list[str] = []
    cur_tokens = 0
    for para in paras:
        n = counter.count(para)
        while n > max_tokens:  # a long paragraph: cut it at token boundaries
            head = counter.truncate(para, max_tokens)
            if not head:
                break
            if cur:
                chunks.append("\n\n".join(cur))
                cur, cur_tokens = [], 0
            chunks.append(head)
            para = para[len(head):].strip()
            n = counter.count(para)
        if not para:
            continue
        if cur and cur_tokens + n + 1 > max_tokens:
            chunks.append("\n\n".join(cur))
            cur, cur_tokens = [], 0
        cur.append(para)
        cur_tokens += n + 1
    if cur:
        chunks.append("\n\n".join(cur))
    return chunks


class KnowledgeSource(BaseSource):
    """BM25 retrieval over chunked documents."""

    def __init__(
        self, documents: Sequence[Document], *, name: str = "RAG_knowledge",
        chunk_tokens: int = 200, recall_limit: int = 20, min_relevance: float | None = None,
    ) -> None:
        check_floor("min_relevance", min_relevance, 0.0, 1.0)
        if chunk_tokens < 16:
            raise ConfigError(f"chunk_tokens must be >= 16, got {chunk_tokens!r}")
        if recall_limit < 1:
            raise ConfigError(f"recall_limit must be >= 1, got {recall_limit!r}")
        self.name = name
        self.documents = list(documents)
        self.chunk_tokens = chunk_tokens
        self.recall_limit = recall_limit
        self.min_relevance = min_relevance
        """The seed's ``min_relevance``: passages whose BM25 score is below this share of the
        query's best are recalled marked and left out by the select stage, reason
        ``below_min_relevance`` (:mod:`loomctx.sources.floors`); None keeps them all."""
        self._index_for: str | None = None
        self._chunks: list[tuple[str, str]] = []
        self._index = BM25Index()

    @classmethod
    def from_folder(cls, path: str | os.PathLike[str], **options: object) -> KnowledgeSource:
        return cls(load_folder(path), **options)  # type: ignore[arg-type]

    def _ensure_index(self, counter: TokenCounter) -> None:
        if self._index_for == counter.name:
            return
        self._chunks = [
            (f"{doc.id}#{i}", text)
            for doc in self.documents
            for i, text in enumerate(chunk(doc.text, counter, self.chunk_tokens))
        ]
        self._index = BM25Index()
        self._index.add([text for _, text in self._chunks])
        self._index_for = counter.name

    def __len__(self) -> int:
        return len(self._chunks)

    eager = True  # answers from memory

    async def collect(self, request: SourceRequest) -> Sequence[ContextItem]:
        self._ensure_index(request.counter)
        if not request.query.strip() or not self._chunks:
            return []
        out = []
        found = self._index.search(request.query, self.recall_limit)
        for rank, (idx, score) in enumerate(found):
            cid, text = self._chunks[idx]
            out.append(ContextItem(
                id=cid, source=self.name, content=text, kind="evidence", tier=Tier.P2,
                seq=idx, scores={RAW_RELEVANCE: float(score), "bm25": float(score)},
                metadata={"origin": "knowledge", "rank": rank},
            ))
        return mark_knowledge(out, [float(score) for _, score in found], self.min_relevance)


__all__ = ["Document", "KnowledgeSource", "chunk", "load_folder"]
