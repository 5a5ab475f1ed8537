"""An agent's MemGPT memory as a LangGraph ``BaseStore``.

LangGraph's long-term memory is the ``BaseStore`` API: ``get_store()`` in any node or tool,
LangMem's ``create_manage_memory_tool`` / ``create_search_memory_tool``, the server's
``/store`` routes. `MemGPTStore` answers that API from the package's own backends, so
those readers and writers see the same memory a MemGPT agent pages through its tools,
instead of a second copy in another schema. Every operation goes through the tier code
(archival inserts and deletions, core edits with their history and read-only rules,
recall's forgetting), never around it.

Namespaces (``agent_id`` is the agent whose memory it is):

- ``("memgpt", agent_id, "archival")`` — passages. ``put`` saves one (value
  ``{"content": text, "tags": [...]}``; a content that is not text is saved as its JSON),
  ``put`` on a key already there replaces that passage, ``delete`` forgets it as
  ``forget --passage`` does (`forget.forget_passages`: quotes in recall, the threads'
  checkpoints, the engine's files; logged).
  ``search`` is archival's hybrid search (words + meaning); ``filter={"tags": ...}``
  keeps passages with any of those tags. The key of a passage is the key it was put
  under, else its id (passages the agent saved itself).
- ``("memgpt", agent_id, "core")`` — core blocks, key = label, value ``{"value",
  "description", "char_limit", "read_only"}``. ``put`` of ``{"value": ...}`` sets the
  block as the store's actor (read-only blocks refuse a non-owner); blocks are neither
  created nor deleted here.
- ``("memgpt", agent_id, "recall")`` — every message; ``("memgpt", agent_id, "recall",
  thread_id)`` — one thread's. Key = message id, which is unique per thread only (ids
  numbered per thread: every thread has a message ``"1"``), so search results carry their
  thread's namespace, and ``get`` / ``delete`` act on one thread's message: in the
  thread's namespace, or in the agent's when exactly one thread has that id (several: a
  clear error asking for the thread). Read and search (recall's hybrid search);
  ``delete`` forgets a message as ``forget --message`` does (`forget.forget_messages`);
  ``put`` is refused (recall is written ahead by the
  conversation itself).

Keys are any text; a search's ``offset + limit`` is at most `MAX_RESULTS` (a larger one
is a clear error, not a query the engine cannot run).

Not supported: TTLs, and the store's own ``index`` configuration (vectors are the
backend's embeddings, always kept).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from langgraph.store.base import (
    BaseStore,
    GetOp,
    Item,
    ListNamespacesOp,
    MatchCondition,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
)

from langgraph_memgpt.checkpoints import ThreadsAt, current_run, threads_for
from langgraph_memgpt.context import Context
from langgraph_memgpt.deps import Deps
from langgraph_memgpt.stores.backends import open_backend
from langgraph_memgpt.stores.base import Memory, MemoryBackend
from langgraph_memgpt.stores.capabilities import (
    ArchivalForget,
    BlockEdits,
    BlockHistory,
    MessageListing,
    PassageListing,
    require,
)
from langgraph_memgpt.stores.types import Block, Passage, RecallMessage

PREFIX = "memgpt"
"""First element of every namespace of the view."""
TIERS = ("archival", "core", "recall")
"""The third element: which tier a namespace is."""
MAX_RESULTS = 10_000
"""Most results one search may reach (``offset + limit``)."""
MAX_PASSAGE_ID = 2**63 - 1
"""Largest id a passage can have (a 64-bit integer in both engines)."""


def namespace(agent_id: str, tier: str = "archival") -> tuple[str, str, str]:
    """The store namespace of one tier of ``agent_id``'s memory."""
    if tier not in TIERS:
        raise ValueError(f"unknown tier {tier!r}; the tiers are {list(TIERS)}")
    return (PREFIX, agent_id, tier)


def thread_namespace(agent_id: str, thread_id: str) -> tuple[str, str, str, str]:
    """The store namespace of one thread's messages in ``agent_id``'s recall."""
    return (PREFIX, agent_id, "recall", thread_id)


class MemGPTStore(BaseStore):
    """A ``BaseStore`` over agents' MemGPT memory (see the module docstring for namespaces).

    Args:
        backend: where the memory lives (`SqliteBackend`, `PostgresBackend`); None: the
            embedded backend in ``context.data_dir``, as ``build_graph`` opens it.
        context: the settings memory is opened with (data dir, embeddings, default blocks).
        actor: who the edits are made by in block history and the deletion log. The
            default ``"store"`` is refused by read-only blocks, like the agent's own
            tools; an application acting for a person may pass ``"user"``.
        threads: the checkpointer of the agents' threads (or a function opening it),
            where a ``delete`` also cleans every copy of what it forgets; None: the
            checkpointer of the graph run the store is called from, if any
            (`checkpoints.threads_for`).
    """

    supports_ttl = False

    def __init__(
        self,
        backend: MemoryBackend | None = None,
        *,
        context: Context | None = None,
        actor: str = "store",
        threads: ThreadsAt = None,
    ) -> None:
        self.context = context or Context()
        self.actor = actor
        self.threads = threads
        self.backend: MemoryBackend = backend or open_backend(
            self.context.data_dir,
            embedding_model=self.context.embedding_model,
            core_block_limit=self.context.core_block_limit,
        )
        self._deps = Deps(backend=self.backend)

    # -- the BaseStore contract -----------------------------------------------------

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run the operations in order; each result is at its operation's position."""
        results: list[Result] = []
        for op in ops:
            if isinstance(op, GetOp):
                results.append(self._get(op))
            elif isinstance(op, SearchOp):
                results.append(self._search(op))
            elif isinstance(op, PutOp):
                self._put(op)
                results.append(None)
            elif isinstance(op, ListNamespacesOp):
                results.append(self._list_namespaces(op))
            else:
                raise TypeError(f"unknown store operation {type(op).__name__}")
        return results

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """`batch` on a worker thread: the backends block (SQLite, FAISS, psycopg)."""
        return await asyncio.to_thread(self.batch, list(ops))

    # -- operations -----------------------------------------------------------------

    def memory(self, agent_id: str) -> Memory:
        """The tiers of ``agent_id`` (default blocks ensured, as the loop opens them)."""
        fields = self.context.fields()
        return self._deps.memory(Context.from_any({**fields, "agent_id": agent_id}))

    def _get(self, op: GetOp) -> Item | None:
        agent_id, tier = _split(op.namespace)
        memory = self.memory(agent_id)
        if tier == "recall":
            message = _find_message(memory, op.namespace, op.key)
            return None if message is None else _message_item(op.namespace[:3], message)
        if tier == "archival":
            passage = _find_passage(memory, op.key)
            return None if passage is None else _passage_item(op.namespace, op.key, passage)
        block = next((b for b in memory.core.blocks() if b.label == op.key), None)
        return None if block is None else _block_item(op.namespace, block, memory)

    def _search(self, op: SearchOp) -> list[SearchItem]:
        agent_id, tier = _split(op.namespace_prefix, "search")
        wanted = _window(op.offset, op.limit)
        memory = self.memory(agent_id)
        filters = dict(op.filter or {})
        ns = op.namespace_prefix[:3]
        thread = _thread_of(op.namespace_prefix)
        if tier == "archival":
            tags = filters.pop("tags", None)
            _no_other_filters(filters, tier, "tags")
            page = memory.archival.search(op.query or "", tags=tags, page_size=max(1, wanted))
            hits = page.hits[op.offset :]
            keys = require(memory.archival, PassageListing, "the store view").keys_of(
                h.item.id for h in hits
            )
            return [
                _passage_item(ns, keys.get(h.item.id, str(h.item.id)), h.item, h.score)
                for h in hits
            ]
        if tier == "recall":
            roles = filters.pop("role", None)
            _no_other_filters(filters, tier, "role")
            role_list = [roles] if isinstance(roles, str) else roles
            # One thread's: from the agent's best (newest) MAX_RESULTS, that thread's.
            pool = max(1, wanted) if thread is None else MAX_RESULTS
            ranked: list[tuple[RecallMessage, float | None]]
            if op.query:
                found = memory.recall.search(op.query, roles=role_list, page_size=pool)
                ranked = [(h.item, h.score) for h in found.hits]
            else:
                ranked = [
                    (m, None)
                    for m in require(memory.recall, MessageListing, "the store view").latest(pool)
                ]
            kept = [
                (m, score)
                for m, score in ranked
                if (role_list is None or m.role in role_list)
                and (thread is None or m.thread_id == thread)
            ]
            return [_message_item(ns, m, score) for m, score in kept[op.offset : wanted]]
        _no_other_filters(filters, tier)
        blocks = memory.core.blocks()[op.offset : wanted]
        return [_block_item(ns, b, memory) for b in blocks]

    def _put(self, op: PutOp) -> None:
        agent_id, tier = _split(op.namespace)
        if op.ttl is not None:
            raise ValueError("MemGPTStore keeps no TTLs: memory is forgotten by deleting it")
        memory = self.memory(agent_id)
        if tier == "archival":
            self._put_passage(memory, op.key, op.value)
        elif tier == "core":
            self._put_block(memory, op.key, op.value)
        elif op.value is None:
            message = _find_message(memory, op.namespace, op.key)
            if message is not None:  # one thread's message, never every thread's
                self._forget(memory, message=message)
        else:
            raise ValueError(
                "recall memory is read-only through the store: it is written ahead by the "
                "conversation itself (delete a message to forget it)"
            )

    def _put_passage(self, memory: Memory, key: str, value: Mapping[str, Any] | None) -> None:
        old = _find_passage(memory, key)
        if value is None:
            if old is not None:
                self._forget(memory, passage=old)
            return
        text, tags = _passage_value(value)
        if old is not None:
            if old.text == text and sorted(old.tags) == sorted(tags):
                return  # the same passage: nothing to write, nothing to log
            # Passages are not edited in place: the old one is forgotten (logged) and
            # the new one saved under the same key.
            require(memory.archival, ArchivalForget, "the store view").delete(
                [old.id], actor=self.actor
            )
        # A put under a key writes that key, even when another key holds the same text.
        memory.archival.insert(text, tags, key=key, merge_duplicates=False)

    def _forget(
        self,
        memory: Memory,
        *,
        passage: Passage | None = None,
        message: RecallMessage | None = None,
    ) -> None:
        """A delete: the one eraser (`forget`), in the threads too, as ``forget`` does."""
        from langgraph_memgpt.ops.forget import forget_messages, forget_passages

        run = current_run()
        running = ((run or {}).get("configurable") or {}).get("thread_id")
        with threads_for(self.threads, run) as saver:
            if passage is not None:
                forget_passages(
                    memory, [passage.id], actor=self.actor, checkpointer=saver, running=running
                )
            if message is not None:
                forget_messages(
                    memory,
                    [message.message_id],
                    actor=self.actor,
                    checkpointer=saver,
                    thread_id=message.thread_id,
                    running=running,
                )

    def _put_block(self, memory: Memory, label: str, value: Mapping[str, Any] | None) -> None:
        if value is None:
            raise ValueError(
                f"core block {label!r} cannot be deleted through the store: put "
                '{"value": ""} to empty it'
            )
        current = memory.core.get(label)  # raises BlockEditError naming the labels
        new = value.get("value")
        if not isinstance(new, str):
            raise ValueError('a core block is put as {"value": "<text>"}')
        for name in ("description", "char_limit", "read_only"):
            if name in value and value[name] != getattr(current, name):
                raise ValueError(f"a block's {name} is not changed through the store")
        unknown = set(value) - {"value", "description", "char_limit", "read_only"}
        if unknown:
            raise ValueError(f"unknown block fields {sorted(unknown)}")
        if new != current.value:
            require(memory.core, BlockEdits, "the store view").set(label, new, actor=self.actor)

    def _list_namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        spaces: list[tuple[str, ...]] = [
            (PREFIX, agent, tier) for agent in self.backend.agents() for tier in TIERS
        ]
        spaces = [ns for ns in spaces if all(_matches(ns, c) for c in op.match_conditions or ())]
        if op.max_depth is not None:
            spaces = sorted({ns[: op.max_depth] for ns in spaces})
        return spaces[op.offset : op.offset + op.limit]


def _split(ns: tuple[str, ...], verb: str = "use") -> tuple[str, str]:
    thread_scoped = len(ns) == 4 and len(ns) > 2 and ns[2] == "recall" and bool(ns[3])
    if (len(ns) != 3 and not thread_scoped) or ns[0] != PREFIX or ns[2] not in TIERS or not ns[1]:
        raise ValueError(
            f"cannot {verb} namespace {ns!r}: MemGPTStore's namespaces are "
            f"({PREFIX!r}, agent_id, tier) with tier one of {list(TIERS)}, and "
            f"({PREFIX!r}, agent_id, 'recall', thread_id) for one thread's messages"
        )
    return ns[1], ns[2]


def _thread_of(ns: tuple[str, ...]) -> str | None:
    """The thread a recall namespace names (None: the agent's whole recall)."""
    return ns[3] if len(ns) == 4 else None


def _window(offset: object, limit: object) -> int:
    """``offset + limit`` of a search, checked: whole numbers, at most `MAX_RESULTS`."""
    for name, value in (("offset", offset), ("limit", limit)):
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise ValueError(f"a search's {name} must be a whole number from 0, got {value!r}")
    assert isinstance(offset, int) and isinstance(limit, int)
    if offset + limit > MAX_RESULTS:
        raise ValueError(
            f"a search reaches at most {MAX_RESULTS} results (offset + limit), got "
            f"offset={offset}, limit={limit}: narrow the query or the namespace"
        )
    return offset + limit


def _find_message(memory: Memory, ns: tuple[str, ...], key: str) -> RecallMessage | None:
    """The message ``key`` names: in the namespace's thread, or the one thread holding it.

    Raises:
        ValueError: the agent's namespace names an id several threads have.
    """
    thread = _thread_of(ns)
    if thread is not None:
        found = memory.recall.get([key], thread_id=thread)
        return found[0] if found else None
    copies = memory.recall.count() - memory.recall.count([key])
    if copies > 1:
        raise ValueError(
            f"message id {key!r} is in {copies} threads of agent {ns[1]!r} (message ids are "
            f"unique per thread): name its thread, namespace {(*ns[:3], '<thread_id>')!r}; "
            "a search result's namespace carries it"
        )
    found = memory.recall.get([key]) if copies else []
    return found[0] if found else None


def _no_other_filters(filters: Mapping[str, Any], tier: str, *allowed: str) -> None:
    if filters:
        can = f"only {list(allowed)}" if allowed else "none"
        raise ValueError(f"unsupported filter {sorted(filters)} on {tier} ({can})")


def _find_passage(memory: Memory, key: str) -> Passage | None:
    """The passage put under ``key``, else the keyless passage whose id ``key`` is."""
    keyed = require(memory.archival, PassageListing, "the store view").keyed([key])
    if key in keyed:
        return keyed[key]
    # A passage's id as ASCII digits ("²" is a digit to Python, not to int()), within
    # the engines' 64-bit ids; any other key is a key, never a crash.
    if key.isascii() and key.isdigit() and int(key) <= MAX_PASSAGE_ID:
        passage = memory.archival.get(int(key))
        if passage is not None and not require(
            memory.archival, PassageListing, "the store view"
        ).keys_of([passage.id]):
            return passage
    return None


def _passage_value(value: Mapping[str, Any]) -> tuple[str, list[str]]:
    unknown = set(value) - {"content", "tags"}
    if unknown or "content" not in value:
        raise ValueError(
            'an archival passage is put as {"content": ..., "tags": [...]}; '
            f"got the fields {sorted(value)}"
        )
    content = value["content"]
    text = content if isinstance(content, str) else json.dumps(content, ensure_ascii=False)
    tags = value.get("tags") or []
    if isinstance(tags, str):
        tags = [tags]
    if not isinstance(tags, Sequence) or not all(isinstance(t, str) for t in tags):
        raise ValueError("tags must be a list of strings")
    return text, list(tags)


def _when(text: str | None) -> datetime:
    if not text:
        return datetime.now(UTC)
    stamp = datetime.fromisoformat(text)
    return stamp if stamp.tzinfo else stamp.replace(tzinfo=UTC)


def _passage_item(
    ns: tuple[str, ...], key: str, passage: Passage, score: float | None = None
) -> SearchItem:
    value = {
        "content": passage.text,
        "tags": list(passage.tags),
        "thread_id": passage.thread_id,
        "turn": passage.turn,
    }
    at = _when(passage.created_at)
    return SearchItem(ns, key, value, at, at, score)


def _block_item(ns: tuple[str, ...], block: Block, memory: Memory) -> SearchItem:
    history = require(memory.core, BlockHistory, "the store view").history(block.label)
    created = _when(history[0]["created_at"] if history else None)
    updated = _when(history[-1]["created_at"] if history else None)
    value = {
        "value": block.value,
        "description": block.description,
        "char_limit": block.char_limit,
        "read_only": block.read_only,
    }
    return SearchItem(ns, block.label, value, created, updated)


def _message_item(
    ns: tuple[str, ...], message: RecallMessage, score: float | None = None
) -> SearchItem:
    """A message as an item of its thread's namespace (``ns`` is the agent's recall one)."""
    ns = (*ns[:3], message.thread_id)
    value = {
        "content": message.text,
        "role": message.role,
        "thread_id": message.thread_id,
        "turn": message.turn,
        "name": message.name,
    }
    at = _when(message.created_at)
    return SearchItem(ns, message.message_id, value, at, at, score)


def _matches(ns: tuple[str, ...], condition: MatchCondition) -> bool:
    path = tuple(condition.path)
    if len(path) > len(ns):
        return False
    part = ns[: len(path)] if condition.match_type == "prefix" else ns[-len(path) :]
    return all(p == "*" or p == n for p, n in zip(path, part, strict=True))
