"""What the operator of a served graph decides, and what its clients may set.

The served graph (`langgraph_memgpt.serve.server.graph`) takes `SERVER_FIELDS` of `Context` (data
directory, models) and the database URL from the server's environment (`ServerSettings`),
and lets an API client set only `CLIENT_FIELDS`: its context schema (`client_context_schema`,
the Studio form) holds those, and `check_client_context` refuses the rest naming the fields
a client may set.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import field, make_dataclass
from typing import Any, ClassVar, cast

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from langgraph_memgpt.context import CONTEXT_FIELDS, Context, ContextError, field_problems
from langgraph_memgpt.stores.registry import threads_in_database

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


class ServerSettings(BaseModel):
    """What the operator of a served graph decides.

    Read from the environment (which ``langgraph.json``'s ``env`` feeds), never from a
    client's run context. ``data_dir``, ``model`` and ``embedding_model`` are `Context`'s
    fields (checked by their declaration there); the model specs are also checked here, at
    server start, where in-process the model factory says what is wrong with a spec when it
    is first used.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    data_dir: str = Field(default=".memgpt", description=f"${DATA_DIR_ENV}")
    model: str = Field(default="auto", description=f"${MODEL_ENV}")
    embedding_model: str = Field(default="minilm", description=f"${EMBEDDING_MODEL_ENV}")
    database_url: str = Field(
        default="",
        description=f"${DATABASE_URL_ENV}: a Postgres URL (``postgresql://...``), where "
        "memory and threads then live instead of SQLite files under ``data_dir``. Empty: "
        "the embedded SQLite backend.",
    )

    def __init__(self, **values: Any) -> None:
        try:
            super().__init__(**values)
        except ValidationError as invalid:
            raise ContextError(field_problems(invalid, values)) from None
        problems: list[str] = []
        try:
            Context(**{name: getattr(self, name) for name in SERVER_FIELDS})
        except ContextError as refused:
            problems = refused.problems
        if not problems:
            found = [
                _model_problem(self.model),
                _embedding_problem(self.embedding_model),
                _database_problem(self.database_url),
            ]
            problems = [p for p in found if p]
        if problems:
            raise ContextError(
                [
                    p.replace(f"{name}=", f"{env} ({name})=", 1)
                    for p in problems
                    for name, env in _SERVER_ENV.items()
                    if p.startswith(f"{name}=")
                ]
            )

    @field_validator("database_url")
    @classmethod
    def _stripped(cls, url: str) -> str:
        return url.strip()

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> ServerSettings:
        """Settings from ``MEMGPT_DATA_DIR``, ``_MODEL``, ``_EMBEDDING_MODEL``, ``_DATABASE_URL``.

        An empty variable counts as unset.

        Raises:
            ContextError: a setting is not usable.
        """
        env = os.environ if environ is None else environ
        return cls(**{name: env[var] for name, var in _SERVER_ENV.items() if env.get(var)})


_SERVER_ENV = {
    "data_dir": DATA_DIR_ENV,
    "model": MODEL_ENV,
    "embedding_model": EMBEDDING_MODEL_ENV,
    "database_url": DATABASE_URL_ENV,
}


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


def _database_problem(url: str) -> str | None:
    # A served database holds the threads too: only an engine that keeps them (Postgres).
    if not url or threads_in_database(url):
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

    Made from `Context`'s declarations (same defaults and descriptions): it is the Studio
    form of the served graph, and a dataclass, as that form has always been.
    """
    specs: list[tuple[str, Any, Any]] = []
    for name in CLIENT_FIELDS:
        info = Context.model_fields[name]
        specs.append(
            (
                name,
                info.annotation,
                field(default=info.default, metadata={"description": info.description}),
            )
        )
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


__all__ = [
    "CLIENT_FIELDS",
    "DATABASE_URL_ENV",
    "DATA_DIR_ENV",
    "EMBEDDING_MODEL_ENV",
    "MODEL_ENV",
    "SERVER_FIELDS",
    "SERVER_ONLY_NAMES",
    "ClientContext",
    "ServerSettings",
    "check_client_context",
    "client_context_schema",
]
