"""Archival memory: an agent's passages, searched by meaning and by words.

MemGPT's second external tier: facts, documents and summaries the agent chose to keep
(``archival_memory_insert``) or that eviction produced. Rows live in SQLite (the source of
truth) with an FTS5 index over the text and one vector per passage (``VectorIndex``, tier
``"archival"``, key ``"text"``), plus one per part of a long passage (``stores.chunks``,
key ``"text.parts"``). Search fuses BM25 and cosine similarity (``stores.ranking.fuse``);
every filter (agent, tags, dates) is applied before ranking, so a narrow filter cannot be
crowded out by closer passages it excludes.

``SqliteArchivalMemory`` is the tier's interface: it writes passages, embeds them and reads
them back. Forgetting is ``archival_forget``'s, the search signals ``archival_signals``',
and the columns and filters all three read ``archival_rows``'.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from contextlib import nullcontext
from dataclasses import replace
from pathlib import Path

import sqlite_utils
from langchain_core.embeddings import Embeddings

from langgraph_memgpt.stores.chunks import embed_parts
from langgraph_memgpt.stores.duplicates import NEAREST, fact_key, same_fact
from langgraph_memgpt.stores.embeddings import FloatArray, embed_texts, embedding_identity
from langgraph_memgpt.stores.passages import (
    INSERT_BATCH,
    MAX_TAG_CHARS,
    InsertsPassages,
    NewPassage,
    PreparedPassage,
    Writing,
    normalize_tags,
    replace_refusal,
    written,
)
from langgraph_memgpt.stores.search import ArchivalFilter, Signals
from langgraph_memgpt.stores.sqlite import retention
from langgraph_memgpt.stores.sqlite.archival_forget import ArchivalForgetting
from langgraph_memgpt.stores.sqlite.archival_rows import (
    BY_TIME,
    COLUMNS,
    CURRENT,
    TIER,
    VECTOR_KEY,
    filters,
    passage_from_row,
)
from langgraph_memgpt.stores.sqlite.archival_signals import ArchivalSignals
from langgraph_memgpt.stores.sqlite.db import transaction
from langgraph_memgpt.stores.sqlite.parts import PartIndex
from langgraph_memgpt.stores.sqlite.vectors import IndexKind, VectorIndex
from langgraph_memgpt.stores.supersession import SearchesCurrentFirst
from langgraph_memgpt.stores.types import Hit, Passage, RetentionRule

_EMBED_BATCH = INSERT_BATCH


class SqliteArchivalMemory(InsertsPassages, SearchesCurrentFirst):
    """The archival passages of one agent.

    Args:
        db: the memory database (``stores.sqlite.db.open_db``).
        agent_id: whose passages these are; every query is scoped to it.
        embeddings: the embedding model, or None for words-only (FTS) search.
        cache_dir: root folder of the FAISS caches (``<data_dir>/faiss``).
        index_kind: ``"auto"`` (exact, turning HNSW at 20k passages), ``"flat"`` (always
            exact) or ``"hnsw"`` (always approximate); see ``VectorIndex``.

    Raises:
        EmbeddingMismatchError: the archive was embedded with another model.
    """

    def __init__(
        self,
        db: sqlite_utils.Database,
        agent_id: str,
        embeddings: Embeddings | None,
        cache_dir: Path | str,
        index_kind: IndexKind = "auto",
    ) -> None:
        if not agent_id:
            raise ValueError("agent_id must be a non-empty string")
        self.db = db
        self.agent_id = agent_id
        self.embeddings = embeddings
        self.cache_dir = Path(cache_dir)
        self.index: VectorIndex | None = None
        self.parts: PartIndex | None = None
        if embeddings is not None:
            self.index = VectorIndex.for_tier(
                db,
                tier=TIER,
                agent_id=agent_id,
                cache_dir=self.cache_dir,
                identity=embedding_identity(embeddings),
                key=VECTOR_KEY,
                kind=index_kind,
            )
            self.parts = PartIndex(self.index)
        self._forgetting = ArchivalForgetting(db, agent_id, self.index, self.parts, self.cache_dir)

    # ------------------------------------------------------------------ writes

    def keyed(self, keys: Iterable[str]) -> dict[str, Passage]:
        """This agent's passages stored under any of ``keys`` (idempotency keys), by key."""
        return self._keyed(keys)

    def keys_of(self, passage_ids: Iterable[int]) -> dict[int, str]:
        """The keys of those of these passages that have one, by passage id."""
        ids = sorted({int(i) for i in passage_ids})
        if not ids:
            return {}
        rows = self.db.conn.execute(
            "SELECT id, key FROM archival WHERE agent_id = ? AND key IS NOT NULL "
            "AND id IN (SELECT value FROM json_each(?))",
            (self.agent_id, json.dumps(ids)),
        ).fetchall()
        return {int(row[0]): str(row[1]) for row in rows}

    def _keyed(self, keys: Iterable[str | None]) -> dict[str, Passage]:
        """This agent's passages stored under any of ``keys``, by key."""
        wanted = [k for k in keys if k is not None]
        if not wanted:
            return {}
        rows = self.db.conn.execute(
            f"SELECT b.key, {COLUMNS} FROM archival AS b WHERE b.agent_id = ? "
            "AND b.key IN (SELECT value FROM json_each(?))",
            (self.agent_id, json.dumps(wanted)),
        ).fetchall()
        return {str(row[0]): passage_from_row(row[1:]) for row in rows}

    def _insert_batch(self, batch: list[PreparedPassage], writing: list[Writing]) -> list[Passage]:
        # A replay finds its passage without embedding it again.
        done = self._keyed(row[5] for row in batch)
        todo = [i for i, row in enumerate(batch) if row[5] is None or row[5] not in done]
        texts = [batch[i][0] for i in todo]
        # Embed before taking the write lock: the model is the slow part.
        vectors = (
            embed_texts(self.embeddings, texts) if self.embeddings is not None and todo else None
        )
        parts = (
            embed_parts(self.embeddings, texts) if self.embeddings is not None and todo else None
        )
        found: list[Passage | None] = [None] * len(batch)
        stored: list[tuple[int, int]] = []  # (position in todo, passage id)
        with transaction(self.db):
            conn = self.db.conn
            # Checked again under the write lock: another process may have stored it since.
            done.update(self._keyed(batch[i][5] for i in todo))
            keys = [fact_key(text) for text in texts]
            held = self._current_facts(k for k, i in zip(keys, todo, strict=True) if writing[i][0])
            for n, i in enumerate(todo):
                text, tags, thread_id, turn, created_at, key = batch[i]
                merge, replaces = writing[i]
                if key is not None and key in done:
                    continue
                same = held.get(keys[n]) if merge else None
                if same is None and merge and vectors is not None:
                    same = self._nearest_same(text, vectors, n, stored, found, todo)
                if same is not None:
                    found[i] = replace(same, duplicate=True)
                    continue
                if replaces is not None:
                    self._check_replaceable(replaces)
                cursor = conn.execute(
                    "INSERT INTO archival (agent_id, text, tags, thread_id, turn, created_at, key, "
                    "fact_key, replaces) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        self.agent_id,
                        text,
                        json.dumps(tags),
                        thread_id,
                        turn,
                        created_at,
                        key,
                        keys[n],
                        replaces,
                    ),
                )
                passage_id = int(cursor.lastrowid or 0)
                conn.executemany(
                    "INSERT OR IGNORE INTO archival_tags (passage_id, agent_id, tag) "
                    "VALUES (?, ?, ?)",
                    [(passage_id, self.agent_id, tag) for tag in tags],
                )
                passage = Passage(
                    id=passage_id,
                    agent_id=self.agent_id,
                    text=text,
                    tags=tags,
                    created_at=created_at,
                    thread_id=thread_id,
                    turn=turn,
                    replaces=replaces,
                )
                found[i] = passage
                stored.append((n, passage_id))
                held = {k: p for k, p in held.items() if p.id != replaces}  # no longer current
                held.setdefault(keys[n], passage)
                if key is not None:
                    done[key] = passage
            if self.index is not None and vectors is not None and stored:
                self.index.upsert([pid for _, pid in stored], vectors[[n for n, _ in stored]])
                if self.parts is not None and parts is not None:
                    self.parts.store([pid for _, pid in stored], [parts[n] for n, _ in stored])
        if self.index is not None and self.parts is not None:
            self.index.maybe_persist()  # committed now: the cache file may be written
            self.parts.maybe_persist()
        # Keyed passages (new or replayed) are found by key, the others where they were put.
        return [
            done[row[5]] if row[5] is not None and row[5] in done else written(found[i])
            for i, row in enumerate(batch)
        ]

    def _current_facts(self, keys: Iterable[str]) -> dict[str, Passage]:
        """This agent's passages not replaced by another, by fact key (the oldest of each)."""
        wanted = sorted(set(keys))
        if not wanted:
            return {}
        rows = self.db.conn.execute(
            f"SELECT b.fact_key, {COLUMNS} FROM archival AS b WHERE b.agent_id = ? "
            f"AND b.fact_key IN (SELECT value FROM json_each(?)) AND {CURRENT} ORDER BY b.id",
            (self.agent_id, json.dumps(wanted)),
        ).fetchall()
        held: dict[str, Passage] = {}
        for row in rows:
            held.setdefault(str(row[0]), passage_from_row(row[1:]))
        return held

    def _nearest_same(
        self,
        text: str,
        vectors: FloatArray,
        n: int,
        stored: Sequence[tuple[int, int]],
        found: Sequence[Passage | None],
        todo: Sequence[int],
    ) -> Passage | None:
        """The current passage closest in meaning to ``text`` that it duplicates, if any.

        The agent's `NEAREST` passages by cosine (FAISS), and those of this batch written
        before it (not in FAISS yet), checked by ``stores.duplicates.same_fact``.
        """
        assert self.index is not None
        near = [i for i, _ in self.index.search(vectors[n], NEAREST)]
        if near:
            rows = self.db.conn.execute(
                f"SELECT {COLUMNS} FROM archival AS b WHERE +b.agent_id = ? "
                f"AND b.id IN (SELECT value FROM json_each(?)) AND {CURRENT}",
                (self.agent_id, json.dumps(near)),
            ).fetchall()
            by_id = {p.id: p for p in map(passage_from_row, rows)}
            for passage_id in near:
                passage = by_id.get(passage_id)
                if passage is not None and same_fact(text, passage.text):
                    return passage
        if stored:
            replaced = {p.replaces for p in found if p is not None}
            earlier = vectors[[m for m, _ in stored]] @ vectors[n]
            for j in earlier.argsort()[::-1][:NEAREST]:
                passage = found[todo[stored[int(j)][0]]]
                if passage is not None and passage.id not in replaced:
                    if same_fact(text, passage.text):
                        return passage
        return None

    def _check_replaceable(self, passage_id: int) -> None:
        """Refuse ``replaces=passage_id`` unless it is this agent's passage, not yet replaced."""
        older = self.get(passage_id)
        if older is None or older.replaced_by is not None:
            raise replace_refusal(passage_id, None if older is None else older.replaced_by)

    @classmethod
    def reembed(
        cls,
        db: sqlite_utils.Database,
        agent_id: str,
        embeddings: Embeddings,
        cache_dir: Path | str,
        index_kind: IndexKind = "auto",
        progress: Callable[[int, int], None] | None = None,
    ) -> SqliteArchivalMemory:
        """Drop an agent's archival vectors and embed every passage again with ``embeddings``.

        The way out of an ``EmbeddingMismatchError`` after changing the embedding model;
        ``progress`` is passed to `embed_missing`.
        """
        VectorIndex.drop_tier(db, tier=TIER, agent_id=agent_id, cache_dir=cache_dir)
        memory = cls(db, agent_id, embeddings, cache_dir, index_kind)
        memory.embed_missing(progress=progress)
        return memory

    def embed_missing(self, progress: Callable[[int, int], None] | None = None) -> int:
        """Embed the passages that have no vector yet; returns how many were embedded.

        Passages saved while no embedding model was configured are found by words only
        until this runs (after a ``reembed``, every passage is missing its vector).
        ``progress`` is called with (passages embedded so far, passages to embed) after
        each batch.
        """
        if self.index is None or self.embeddings is None:
            return 0
        missing = (
            "FROM archival AS b WHERE b.agent_id = ? AND b.id > ? "
            "AND NOT EXISTS (SELECT 1 FROM vectors AS v WHERE v.tier = ? "
            "AND v.agent_id = b.agent_id AND v.key = ? AND v.item_id = b.id)"
        )
        total = int(
            self.db.conn.execute(
                f"SELECT count(*) {missing}", (self.agent_id, 0, TIER, VECTOR_KEY)
            ).fetchone()[0]
        )
        done = 0
        last_id = 0
        while True:
            rows = self.db.conn.execute(
                f"SELECT b.id, b.text {missing} ORDER BY b.id LIMIT ?",
                (self.agent_id, last_id, TIER, VECTOR_KEY, _EMBED_BATCH),
            ).fetchall()
            if not rows:
                break
            texts = [str(text) for _, text in rows]
            vectors = embed_texts(self.embeddings, texts)
            parts = embed_parts(self.embeddings, texts)
            with transaction(self.db):
                self.index.upsert([int(i) for i, _ in rows], vectors)
                assert self.parts is not None
                self.parts.store([int(i) for i, _ in rows], parts)
            done += len(rows)
            last_id = int(rows[-1][0])
            if progress is not None:
                progress(done, max(done, total))
        self.index.close()
        if self.parts is not None:
            self.parts.close()
        return done

    # ------------------------------------------------------------------ reads

    def _archival_signals(self, chosen: ArchivalFilter) -> Signals[Passage]:
        where, params = filters(
            self.agent_id, chosen.tags, chosen.tag_match, chosen.start_date, chosen.end_date
        )
        return nullcontext(ArchivalSignals(self, where, params))

    def count(self) -> int:
        """Number of passages this agent has."""
        row = self.db.conn.execute(
            "SELECT passages FROM archival_counts WHERE agent_id = ?", (self.agent_id,)
        ).fetchone()
        return 0 if row is None else int(row[0])

    def tags(self) -> list[str]:
        """Every tag this agent has used, sorted."""
        rows = self.db.conn.execute(
            "SELECT DISTINCT tag FROM archival_tags WHERE agent_id = ? ORDER BY tag",
            (self.agent_id,),
        ).fetchall()
        return [str(row[0]) for row in rows]

    def last_modified(self) -> str | None:
        """Timestamp of this agent's newest passage, or None for an empty archive."""
        row = self.db.conn.execute(
            "SELECT max(created_at) FROM archival WHERE agent_id = ?", (self.agent_id,)
        ).fetchone()
        return None if row is None or row[0] is None else str(row[0])

    def recent(self, n: int = 5) -> list[Passage]:
        """The ``n`` newest passages, newest first."""
        where = "b.agent_id = ?"
        return BY_TIME.rows(
            self.db.conn, where, [self.agent_id], limit=max(0, n), newest_first=True
        )

    def get(self, passage_id: int) -> Passage | None:
        """One of this agent's passages by id (None if absent or another agent's)."""
        row = self.db.conn.execute(
            f"SELECT {COLUMNS} FROM archival AS b WHERE b.agent_id = ? AND b.id = ?",
            (self.agent_id, int(passage_id)),
        ).fetchone()
        return None if row is None else passage_from_row(row)

    def list_passages(
        self, *, after: int = 0, limit: int = 1000, thread_id: str | None = None
    ) -> list[tuple[Passage, str | None]]:
        """Passages with their idempotency key, in id order after ``after`` (export, forget)."""
        sql = f"SELECT {COLUMNS}, b.key FROM archival AS b WHERE b.agent_id = ? AND b.id > ?"
        params: list[object] = [self.agent_id, int(after)]
        if thread_id is not None:
            sql += " AND b.thread_id = ?"
            params.append(thread_id)
        rows = self.db.conn.execute(sql + " ORDER BY b.id LIMIT ?", [*params, max(1, limit)])
        return [(passage_from_row(row[:-1]), row[-1]) for row in rows.fetchall()]

    def delete(
        self, passage_ids: Sequence[int], *, actor: str = "user", detail: str = ""
    ) -> list[Passage]:
        """Forget passages: row, tags, full-text entry and vector, purged from FAISS on disk.

        Each deletion is logged (kind ``summary`` for an eviction summary, else
        ``passage``; never the text; ``detail``, e.g. the retention rule, beside it).
        Unknown ids, and other agents' passages, are skipped.

        Returns:
            The deleted passages.
        """
        ids = sorted({int(i) for i in passage_ids})
        if not ids:
            return []
        return self._forgetting.passages(ids, actor, detail)

    def add_sources(self, passage_id: int, sources: Sequence[tuple[str, str]]) -> None:
        """Record the messages (thread, message id) passage ``passage_id`` was made from."""
        rows = [(int(passage_id), self.agent_id, t, m) for t, m in sources]
        if not rows:
            return
        with transaction(self.db):
            self.db.conn.executemany(
                "INSERT OR IGNORE INTO archival_sources (passage_id, agent_id, thread_id, "
                "message_id) SELECT ?, ?, ?, ? FROM archival WHERE id = ? AND agent_id = ?",
                [(*row, row[0], self.agent_id) for row in rows],
            )

    def derived_from(self, thread_id: str, message_ids: Sequence[str] | None = None) -> list[int]:
        """Ids of the passages made from these messages of ``thread_id`` (None: any of its)."""
        sql = (
            "SELECT DISTINCT passage_id FROM archival_sources WHERE agent_id = ? AND thread_id = ?"
        )
        params: list[object] = [self.agent_id, thread_id]
        if message_ids is not None:
            sql += " AND message_id IN (SELECT value FROM json_each(?))"
            params.append(json.dumps(list(message_ids)))
        return sorted(int(r[0]) for r in self.db.conn.execute(sql + " ORDER BY 1", params))

    def retention_rules(self) -> list[RetentionRule]:
        """The agent's retention rules (``langgraph_memgpt.ops.retention``), by tag then source."""
        return retention.rules(self.db, self.agent_id)

    def set_retention_rule(self, rule: RetentionRule) -> None:
        """Add a rule, or change the age of the rule with the same tag and source."""
        with transaction(self.db):
            retention.put(self.db, self.agent_id, rule)

    def remove_retention_rule(self, tag: str, source: str | None = None) -> bool:
        """Drop the rule with this tag and source; whether there was one."""
        with transaction(self.db):
            return retention.remove(self.db, self.agent_id, tag, source)

    def expired(
        self, tag: str, *, source_tag: str | None, before: str, limit: int = 500
    ) -> list[int]:
        """Ids of passages tagged ``tag`` (and ``source_tag``) created before ``before``."""
        return retention.expired(self.db, self.agent_id, tag, source_tag, before, limit)

    def delete_all(self, *, actor: str = "user") -> int:
        """Forget every passage of the agent (one log entry, kind ``archival``)."""
        return self._forgetting.everything(actor)

    def close(self) -> None:
        """Write any unsaved FAISS cache changes."""
        if self.index is not None and self.parts is not None:
            self.index.close()
            self.parts.close()

    # ------------------------------------------------------------------ internals

    def _count_with_vector(self, where: str, params: Sequence[object]) -> int:
        """Filtered passages that have a vector."""
        if self.index is not None and self.index.count() >= self.count():
            # Every passage has a vector, so every filtered passage matches: a plain count.
            # The per-row EXISTS probe below would visit every passage of the agent.
            if len(params) == 1:  # no filter but the agent
                return self.count()
            row = self.db.conn.execute(
                f"SELECT count(*) FROM archival AS b WHERE ({where})", list(params)
            ).fetchone()
            return int(row[0])
        row = self.db.conn.execute(
            f"SELECT count(*) FROM archival AS b WHERE ({where}) AND EXISTS (SELECT 1 "
            "FROM vectors AS v WHERE v.tier = ? AND v.agent_id = b.agent_id AND v.key = ? "
            "AND v.item_id = b.id)",
            [*params, TIER, VECTOR_KEY],
        ).fetchone()
        return int(row[0])

    def _hits(self, ranked: Sequence[tuple[int, float]]) -> list[Hit[Passage]]:
        if not ranked:
            return []
        rows = self.db.conn.execute(
            # "+agent_id": look the page up by primary key, not by scanning the agent.
            f"SELECT {COLUMNS} FROM archival AS b WHERE +b.agent_id = ? "
            "AND b.id IN (SELECT value FROM json_each(?))",
            (self.agent_id, json.dumps([i for i, _ in ranked])),
        ).fetchall()
        by_id = {int(row[0]): passage_from_row(row) for row in rows}
        return [Hit(item=by_id[i], score=score) for i, score in ranked if i in by_id]


__all__ = ["MAX_TAG_CHARS", "SqliteArchivalMemory", "NewPassage", "normalize_tags"]
