"""Runtime configuration of the MemGPT agent.

The loop's policy (window size, pressure fractions, step caps, page sizes, prompt layout,
the loop's own search) lives here, so Studio can show it as a form; limits that guard the
stores stay named constants beside the code they guard.
Every value is checked once, when the Context is made (numeric text such as ``"4096"`` is
accepted), and a bad one is a `ContextError` naming the field, the value and what is allowed.

In-process callers (``build_graph(...)`` then ``invoke(..., context=Context(...))``) set
every field. The served graph (`langgraph_memgpt.server.graph`) is different: the server
decides `SERVER_FIELDS` (data directory, models) from its environment (`ServerSettings`),
and an API client may set only `CLIENT_FIELDS`.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields, make_dataclass
from typing import Any, ClassVar, Literal, cast


def _default_data_dir() -> str:
    # Relative on purpose: the server builds a Context on its event loop, where
    # os.getcwd() counts as blocking I/O (BlockingError under `langgraph dev`); the
    # stores resolve the path later, in the nodes' worker threads.
    return os.environ.get("MEMGPT_DATA_DIR") or ".memgpt"


@dataclass(kw_only=True)
class Context:
    """Configuration read by every node through ``Runtime[Context]``."""

    agent_id: str = field(
        default="default",
        metadata={
            "description": "The agent whose long-term memory (core, recall, archival) this "
            "run reads and writes. Threads of the same agent share it; agents never see "
            "each other's memory."
        },
    )
    model: str = field(
        default="auto",
        metadata={
            "description": "Chat model: 'auto' (OPENAI_API_KEY / OPENAI_BASE_URL if set, "
            "else the embedded local llama.cpp model), 'openai:<name>', 'local', or "
            "'scripted:<path.json>' (a replayed script, for tests). A model passed to "
            "build_graph() wins over this field. Served: the server's $MEMGPT_MODEL."
        },
    )
    context_window: int = field(
        default=8192,
        metadata={"description": "Tokens the model's prompt may hold (main context size)."},
    )
    warning_fraction: float = field(
        default=0.70,
        metadata={
            "description": "Fraction of the window at which the agent is warned, once per "
            "cycle, to save what matters to core or archival memory."
        },
    )
    flush_fraction: float = field(
        default=1.0,
        metadata={
            "description": "Fraction of the window at which the oldest messages are "
            "summarized and evicted from the queue."
        },
    )
    evict_fraction: float = field(
        default=0.5,
        metadata={
            "description": "Fraction of the window the prompt is brought down to by an eviction."
        },
    )
    summary_fraction: float = field(
        default=0.10,
        metadata={"description": "Most of the window the recursive summary may take."},
    )
    max_message_fraction: float = field(
        default=0.25,
        metadata={
            "description": "Most of the window one message may take in the queue; a longer "
            "message is cut there and kept whole in recall memory."
        },
    )
    max_steps: int = field(
        default=50,
        metadata={"description": "Most model calls in one user turn before the turn is ended."},
    )
    max_repeated_calls: int = field(
        default=3,
        metadata={
            "description": "An identical tool call repeated this many times in a row ends the turn."
        },
    )
    max_context_retries: int = field(
        default=3,
        metadata={
            "description": "Summarize-and-retry attempts after a provider 'context length "
            "exceeded' error."
        },
    )
    search_page_size: int = field(
        default=5,
        metadata={"description": "Results per page of the memory search tools."},
    )
    result_char_limit: int = field(
        default=3000,
        metadata={
            "description": "Most characters one tool result may put into the queue; longer "
            "results are cut with a note, so a page can never overflow the window."
        },
    )
    core_block_limit: int = field(
        default=2000,
        metadata={"description": "Character limit of the default core memory blocks."},
    )
    prompt_layout: Literal["cached", "legacy"] = field(
        default="cached",
        metadata={
            "description": "'cached': instructions and tools first, core memory after them, "
            "and the system prompt re-rendered only between turns, so prefix caches hold. "
            "'legacy': the earlier layout (core memory inside the instructions, tools after "
            "it), kept as the turn benchmark's baseline."
        },
    )
    auto_search: Literal["auto", "on", "off"] = field(
        default="auto",
        metadata={
            "description": "Search recall for the model when the user asks a question that "
            "core memory does not cover, before its first step (the call and its result "
            "enter the queue as the model's own). 'auto': only for small models (the "
            "embedded one), which often answer without searching; 'on'; 'off'."
        },
    )
    data_dir: str = field(
        default_factory=_default_data_dir,
        metadata={
            "description": "Folder of the memory database (SQLite) and FAISS caches. "
            "Defaults to $MEMGPT_DATA_DIR or ./.memgpt (served: always the server's)."
        },
    )
    embedding_model: str = field(
        default="minilm",
        metadata={
            "description": "Embeddings: 'minilm' (embedded all-MiniLM-L6-v2 int8 ONNX, "
            "offline), 'openai:<model>' (needs OPENAI_API_KEY), or 'none' (search by "
            "words only). Served: the server's $MEMGPT_EMBEDDING_MODEL."
        },
    )
    persona: str = field(
        default="",
        metadata={"description": "Initial text of the 'persona' core block for a new agent."},
    )
    human: str = field(
        default="",
        metadata={"description": "Initial text of the 'human' core block for a new agent."},
    )

    def __post_init__(self) -> None:
        check_fields(self, _FIELD_RULES)

    @classmethod
    def from_any(cls, value: Context | ClientContext | Mapping[str, Any] | None) -> Context:
        """Return a validated Context.

        ``value`` is a Context, a served graph's client context (merged with the server's
        settings), a (possibly partial) mapping, or None (defaults).

        Raises:
            ContextError: an unknown field, or a value of the wrong kind or out of range.
        """
        if isinstance(value, Context):
            return value
        if isinstance(value, ClientContext):
            return value.to_context()
        if not value:
            return cls()
        if not isinstance(value, Mapping):
            raise ContextError(
                [f"the context must be a mapping of field names to values, not {value!r}"]
            )
        unknown = sorted(set(value) - set(CONTEXT_FIELDS))
        if unknown:
            raise ContextError(
                [f"unknown field(s) {unknown}; the fields are {sorted(CONTEXT_FIELDS)}"]
            )
        return cls(**value)


# --- validation ---------------------------------------------------------------------


class ContextError(ValueError):
    """A context value that cannot be used; the message names each field, value and range."""

    def __init__(self, problems: Sequence[str]) -> None:
        self.problems = list(problems)
        super().__init__("Invalid context: " + "; ".join(self.problems))


@dataclass(frozen=True)
class _Rule:
    kind: type  # int, float or str
    low: float | None = None
    high: float | None = None
    low_open: bool = False  # low itself not allowed
    non_empty: bool = False
    choices: tuple[str, ...] = ()

    def allowed(self) -> str:
        if self.choices:
            return "one of " + ", ".join(repr(c) for c in self.choices)
        if self.kind is str:
            return "a non-empty text" if self.non_empty else "a text"
        noun = "a whole number" if self.kind is int else "a number"
        if self.low is not None and self.high is not None:
            op = "above" if self.low_open else "from"
            low = _show(self.low)
            return f"{noun} {op} {low} to {_show(self.high)}"
        if self.low is not None:
            return f"{noun} {'above' if self.low_open else 'of at least'} {_show(self.low)}"
        return noun


def _show(number: float) -> str:
    return str(number) if isinstance(number, int) else f"{number:g}"


_INT_TEXT = re.compile(r"[+-]?\d[\d_]*")


def coerce(name: str, value: Any, rule: _Rule) -> tuple[Any, str | None]:
    """``value`` as ``rule.kind`` (numeric strings accepted), or the problem with it."""
    problem = f"{name}={value!r} is not allowed: use {rule.allowed()}"
    if rule.kind is str:
        if isinstance(value, os.PathLike):
            value = os.fspath(value)
        if not isinstance(value, str) or (rule.non_empty and not value.strip()):
            return value, problem
        if rule.choices and value not in rule.choices:
            return value, problem
        return value, None
    if isinstance(value, bool) or value is None:
        return value, problem
    number: float
    if isinstance(value, str):
        text = value.strip()
        try:
            if rule.kind is int and _INT_TEXT.fullmatch(text):
                number = int(text)
            else:
                number = float(text)
        except ValueError:
            return value, problem
    elif isinstance(value, int | float):
        number = value
    else:
        return value, problem
    if not math.isfinite(number):
        return value, problem
    if rule.kind is int:
        if isinstance(number, float):
            if not number.is_integer():
                return value, problem
            number = int(number)
    else:
        number = float(number)
    if rule.low is not None and (number < rule.low or (rule.low_open and number == rule.low)):
        return value, problem
    if rule.high is not None and number > rule.high:
        return value, problem
    return number, None


def check_fields(obj: Any, rules: Mapping[str, _Rule]) -> None:
    """Coerce and check every field of ``obj`` that has a rule, in place.

    Raises:
        ContextError: listing every field that is wrong, not just the first.
    """
    problems: list[str] = []
    for name, rule in rules.items():
        if not hasattr(obj, name):
            continue
        value, problem = coerce(name, getattr(obj, name), rule)
        if problem:
            problems.append(problem)
        else:
            object.__setattr__(obj, name, value)
    if not problems and hasattr(obj, "evict_fraction") and hasattr(obj, "flush_fraction"):
        if obj.evict_fraction >= obj.flush_fraction:
            problems.append(
                f"evict_fraction={obj.evict_fraction!r} must be below "
                f"flush_fraction={obj.flush_fraction!r}: an eviction brings the prompt "
                "down from the flush point to the evict point"
            )
    if problems:
        raise ContextError(problems)


def _model_problem(spec: str) -> str | None:
    kind, sep, arg = spec.strip().partition(":")
    if (not sep and kind in ("auto", "local")) or (
        sep and kind in ("openai", "scripted") and arg.strip()
    ):
        return None
    return (
        f"model={spec!r} is not allowed: use 'auto', 'local', 'openai:<name>' or "
        "'scripted:<path.json>'"
    )


def _embedding_problem(spec: str) -> str | None:
    kind, sep, arg = spec.strip().partition(":")
    if (not sep and kind in ("minilm", "none")) or (sep and kind == "openai" and arg.strip()):
        return None
    return f"embedding_model={spec!r} is not allowed: use 'minilm', 'openai:<model>' or 'none'"


_FIELD_RULES: dict[str, _Rule] = {
    "agent_id": _Rule(str, non_empty=True),
    "model": _Rule(str, non_empty=True),
    "context_window": _Rule(int, 1024, 10_000_000),
    "warning_fraction": _Rule(float, 0.0, 1.0, low_open=True),
    "flush_fraction": _Rule(float, 0.0, 1.0, low_open=True),
    "evict_fraction": _Rule(float, 0.0, 1.0, low_open=True),
    "summary_fraction": _Rule(float, 0.0, 0.5, low_open=True),
    "max_message_fraction": _Rule(float, 0.0, 1.0, low_open=True),
    "max_steps": _Rule(int, 1, 1000),
    # 1 would end every turn at its first tool call with "I was repeating myself".
    "max_repeated_calls": _Rule(int, 2, 1000),
    "max_context_retries": _Rule(int, 0, 100),
    "search_page_size": _Rule(int, 1, 100),
    "result_char_limit": _Rule(int, 200, 10_000_000),
    "core_block_limit": _Rule(int, 50, 1_000_000),
    "prompt_layout": _Rule(str, choices=("cached", "legacy")),
    "auto_search": _Rule(str, choices=("auto", "on", "off")),
    "data_dir": _Rule(str, non_empty=True),
    "embedding_model": _Rule(str, non_empty=True),
    "persona": _Rule(str),
    "human": _Rule(str),
}

CONTEXT_FIELDS: tuple[str, ...] = tuple(f.name for f in fields(Context))
assert set(_FIELD_RULES) == set(CONTEXT_FIELDS), "every Context field needs a rule"


# --- what a client of the served graph may set --------------------------------------

SERVER_FIELDS: tuple[str, ...] = ("data_dir", "model", "embedding_model")
"""Context fields only the server sets (from its environment), never a client."""
SERVER_ONLY_NAMES: tuple[str, ...] = (*SERVER_FIELDS, "database_url")
"""Names a client is told are the server's (``database_url``: `ServerSettings.database_url`)."""
CLIENT_FIELDS: tuple[str, ...] = tuple(n for n in CONTEXT_FIELDS if n not in SERVER_FIELDS)
"""The allow-list: what an API client of the served graph may set in a run's context."""

DATA_DIR_ENV = "MEMGPT_DATA_DIR"
MODEL_ENV = "MEMGPT_MODEL"
EMBEDDING_MODEL_ENV = "MEMGPT_EMBEDDING_MODEL"
DATABASE_URL_ENV = "MEMGPT_DATABASE_URL"


@dataclass(frozen=True, kw_only=True)
class ServerSettings:
    """What the operator of a served graph decides.

    Read from the environment (which ``langgraph.json``'s ``env`` feeds), never from a
    client's run context.
    """

    data_dir: str = ".memgpt"
    model: str = "auto"
    embedding_model: str = "minilm"
    database_url: str = ""
    """Postgres URL (``postgresql://...``): memory and threads live there instead of in
    SQLite files under ``data_dir``. Empty: the embedded SQLite backend."""

    def __post_init__(self) -> None:
        # The model specs are checked here, at server start; in-process, the model factory
        # and the embeddings say what is wrong with a spec when it is first used.
        try:
            check_fields(self, {name: _FIELD_RULES[name] for name in SERVER_FIELDS})
            problems = [
                _model_problem(self.model),
                _embedding_problem(self.embedding_model),
                _database_problem(self.database_url),
            ]
            if any(problems):
                raise ContextError([p for p in problems if p])
        except ContextError as exc:
            raise ContextError(
                [
                    p.replace(f"{name}=", f"{env} ({name})=", 1)
                    for p in exc.problems
                    for name, env in _SERVER_ENV.items()
                    if p.startswith(f"{name}=")
                ]
            ) from None

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> ServerSettings:
        """Settings from ``MEMGPT_DATA_DIR``, ``_MODEL``, ``_EMBEDDING_MODEL``, ``_DATABASE_URL``.

        Raises:
            ContextError: a setting is not usable.
        """
        env = os.environ if environ is None else environ
        return cls(
            data_dir=env.get(DATA_DIR_ENV) or ".memgpt",
            model=env.get(MODEL_ENV) or "auto",
            embedding_model=env.get(EMBEDDING_MODEL_ENV) or "minilm",
            database_url=(env.get(DATABASE_URL_ENV) or "").strip(),
        )


_SERVER_ENV = {
    "data_dir": DATA_DIR_ENV,
    "model": MODEL_ENV,
    "embedding_model": EMBEDDING_MODEL_ENV,
    "database_url": DATABASE_URL_ENV,
}


def _database_problem(url: str) -> str | None:
    if not url or url.startswith(("postgresql://", "postgres://")):
        return None
    shown = url.split("@")[-1]  # never echo a password
    return (
        f"database_url='...{shown}' is not allowed: use a postgresql://user:password@host/db "
        "URL, or leave it unset for SQLite under the data directory"
    )


class ClientContext:
    """Base of a served graph's context schema: the allow-listed fields only.

    `client_context_schema` makes the concrete dataclass, bound to the server's settings;
    `Context.from_any` turns an instance into the full Context the nodes read.
    """

    server_settings: ClassVar[ServerSettings] = ServerSettings()

    def __post_init__(self) -> None:
        # Validate (and coerce) through the full Context, then keep the coerced values.
        ctx = self.to_context()
        for name in CLIENT_FIELDS:
            if hasattr(self, name):
                object.__setattr__(self, name, getattr(ctx, name))

    def to_context(self) -> Context:
        """The full Context: the server's settings plus this client's allow-listed fields."""
        settings = type(self).server_settings
        client = {name: getattr(self, name) for name in CLIENT_FIELDS if hasattr(self, name)}
        return Context(
            data_dir=settings.data_dir,
            model=settings.model,
            embedding_model=settings.embedding_model,
            **client,
        )


def client_context_schema(settings: ServerSettings) -> type[ClientContext]:
    """A context dataclass holding only `CLIENT_FIELDS`, bound to ``settings``.

    Same defaults and descriptions as Context: it is the Studio form of the served graph.
    """
    specs: list[tuple[str, Any, Any]] = []
    for f in fields(Context):
        if f.name in CLIENT_FIELDS:
            specs.append((f.name, f.type, field(default=f.default, metadata=f.metadata)))
    schema = make_dataclass(
        "Context",
        specs,
        bases=(ClientContext,),
        namespace={"server_settings": settings, "__module__": __name__},
        kw_only=True,
    )
    schema.__doc__ = (
        "What a client may set for a run of the served agent; the server sets data_dir, "
        "model and embedding_model."
    )
    return cast("type[ClientContext]", schema)


def check_client_context(raw: Mapping[str, Any] | None, settings: ServerSettings) -> None:
    """Refuse a served run's context that sets server settings, unknown fields or bad values.

    Raises:
        ContextError: naming the offending fields and the fields a client may set.
    """
    if not raw:
        return
    if not isinstance(raw, Mapping):
        raise ContextError([f"the context must be a JSON object, not {raw!r}"])
    allowed = f"a client may set only {list(CLIENT_FIELDS)}"
    server = sorted(k for k in raw if k in SERVER_ONLY_NAMES)
    if server:
        raise ContextError(
            [
                f"{server} are set by the server's configuration (environment "
                f"{DATA_DIR_ENV}, {MODEL_ENV}, {EMBEDDING_MODEL_ENV}), not by a client; " + allowed
            ]
        )
    unknown = sorted(k for k in raw if k not in CLIENT_FIELDS and not _langgraph_key(k))
    if unknown:
        raise ContextError([f"unknown field(s) {unknown}; " + allowed])
    client_context_schema(settings)(**{k: v for k, v in raw.items() if k in CLIENT_FIELDS})


_LANGGRAPH_KEYS = frozenset(
    {"thread_id", "checkpoint_id", "checkpoint_ns", "checkpoint_map", "run_id"}
    | {"assistant_id", "graph_id", "user_id"}
)


def _langgraph_key(key: str) -> bool:
    """Keys LangGraph itself may copy into a run's context (from a client's configurable)."""
    return key in _LANGGRAPH_KEYS or key.startswith(("__", "langgraph_", "x-", "ls_"))
