"""Runtime configuration of the MemGPT agent.

The loop's policy (window size, pressure fractions, step caps, page sizes, prompt layout,
the loop's own search) lives here, so Studio can show it as a form; limits that guard the
stores stay named constants beside the code they guard.

Each setting is declared once, as a pydantic ``Field`` of `Context`: its default, its range
and its description (the Studio form's text). Every value is checked when the Context is
made (numeric text such as ``"4096"`` is accepted), and a bad value or an unknown field is a
`ContextError` naming the field, the value and what is allowed.

In-process callers (``build_graph(...)`` then ``invoke(..., context=Context(...))``) set
every field. The served graph (`langgraph_memgpt.serve.server.graph`) is different: the server
decides `settings.SERVER_FIELDS` (data directory, models) from its environment
(`settings.ServerSettings`), and an API client may set only `settings.CLIENT_FIELDS`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Annotated, Any, Literal, Protocol, get_args, runtime_checkable

import annotated_types
from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    model_validator,
)
from pydantic.fields import FieldInfo


def _default_data_dir() -> str:
    # Relative on purpose: the server builds a Context on its event loop, where
    # os.getcwd() counts as blocking I/O (BlockingError under `langgraph dev`); the
    # stores resolve the path later, in the nodes' worker threads.
    return os.environ.get("MEMGPT_DATA_DIR") or ".memgpt"


def _not_a_flag(value: Any) -> Any:
    """A boolean is refused where a number goes (pydantic would read True as 1)."""
    if isinstance(value, bool):
        raise ValueError("a boolean is not a number")
    return value


def _path_as_text(value: Any) -> Any:
    return os.fspath(value) if isinstance(value, os.PathLike) else value


Whole = Annotated[int, BeforeValidator(_not_a_flag)]
Number = Annotated[float, BeforeValidator(_not_a_flag)]
Text = Annotated[str, BeforeValidator(_path_as_text)]


def _whole(default: int, low: int, high: int, description: str) -> Any:
    """A whole-number setting from ``low`` to ``high``."""
    return Field(default=default, ge=low, le=high, description=description)


def _fraction(default: float, description: str, *, most: float = 1.0) -> Any:
    """A share of the context window: above 0, at most ``most``."""
    return Field(default=default, gt=0, le=most, description=description)


NON_EMPTY = r"\S"
"""The pattern of a text that must hold more than blanks."""


class Context(BaseModel):
    """Configuration read by every node through ``Runtime[Context]``."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False, validate_assignment=True)

    agent_id: Text = Field(
        default="default",
        pattern=NON_EMPTY,
        description="The agent whose long-term memory (core, recall, archival) this "
        "run reads and writes. Threads of the same agent share it; agents never see "
        "each other's memory.",
    )
    model: Text = Field(
        default="auto",
        pattern=NON_EMPTY,
        description="Chat model: 'auto' (OPENAI_API_KEY / OPENAI_BASE_URL if set, "
        "else the embedded local llama.cpp model), 'openai:<name>', 'local', or "
        "'scripted:<path.json>' (a replayed script, for tests). A model passed to "
        "build_graph() wins over this field. Served: the server's $MEMGPT_MODEL.",
    )
    context_window: Whole = _whole(
        8192, 1024, 10_000_000, "Tokens the model's prompt may hold (main context size)."
    )
    warning_fraction: Number = _fraction(
        0.70,
        "Fraction of the window at which the agent is warned, once per "
        "cycle, to save what matters to core or archival memory.",
    )
    flush_fraction: Number = _fraction(
        1.0,
        "Fraction of the window at which the oldest messages are "
        "summarized and evicted from the queue.",
    )
    evict_fraction: Number = _fraction(
        0.5, "Fraction of the window the prompt is brought down to by an eviction."
    )
    summary_fraction: Number = _fraction(
        0.10, "Most of the window the recursive summary may take.", most=0.5
    )
    max_message_fraction: Number = _fraction(
        0.25,
        "Most of the window one message may take in the queue; a longer "
        "message is cut there and kept whole in recall memory.",
    )
    max_steps: Whole = _whole(
        50, 1, 1000, "Most model calls in one user turn before the turn is ended."
    )
    # 1 would end every turn at its first tool call with "I was repeating myself".
    max_repeated_calls: Whole = _whole(
        3, 2, 1000, "An identical tool call repeated this many times in a row ends the turn."
    )
    max_context_retries: Whole = _whole(
        3, 0, 100, "Summarize-and-retry attempts after a provider 'context length exceeded' error."
    )
    search_page_size: Whole = _whole(5, 1, 100, "Results per page of the memory search tools.")
    result_char_limit: Whole = _whole(
        3000,
        200,
        10_000_000,
        "Most characters one tool result may put into the queue; longer "
        "results are cut with a note, so a page can never overflow the window.",
    )
    core_block_limit: Whole = _whole(
        2000, 50, 1_000_000, "Character limit of the default core memory blocks."
    )
    prompt_layout: Literal["cached", "legacy"] = Field(
        default="cached",
        description="'cached': instructions and tools first, core memory after them, "
        "and the system prompt re-rendered only between turns, so prefix caches hold. "
        "'legacy': the earlier layout (core memory inside the instructions, tools after "
        "it), kept as the turn benchmark's baseline.",
    )
    auto_search: Literal["auto", "on", "off"] = Field(
        default="auto",
        description="Search recall for the model when the user asks a question that "
        "core memory does not cover, before its first step (the call and its result "
        "enter the queue as the model's own). 'auto': only for small models (the "
        "embedded one), which often answer without searching; 'on'; 'off'.",
    )
    data_dir: Text = Field(
        default_factory=_default_data_dir,
        pattern=NON_EMPTY,
        description="Folder of the memory database (SQLite) and FAISS caches. "
        "Defaults to $MEMGPT_DATA_DIR or ./.memgpt (served: always the server's).",
    )
    embedding_model: Text = Field(
        default="minilm",
        pattern=NON_EMPTY,
        description="Embeddings: 'minilm' (embedded all-MiniLM-L6-v2 int8 ONNX, "
        "offline), 'openai:<model>' (needs OPENAI_API_KEY), or 'none' (search by "
        "words only). Served: the server's $MEMGPT_EMBEDDING_MODEL.",
    )
    persona: Text = Field(
        default="",
        description="Initial text of the 'persona' core block for a new agent.",
    )
    human: Text = Field(
        default="",
        description="Initial text of the 'human' core block for a new agent.",
    )

    if not TYPE_CHECKING:
        # Type checkers and IDEs see pydantic's own signature (each field, typed), so they
        # catch Context(agent="x"); at run time a bad value is a ContextError naming it.
        def __init__(self, **values: Any) -> None:
            try:
                super().__init__(**values)
            except ValidationError as invalid:
                raise ContextError(field_problems(invalid, values)) from None

    @model_validator(mode="after")
    def _eviction_lowers_the_prompt(self) -> Context:
        if self.evict_fraction >= self.flush_fraction:
            raise ValueError(
                f"evict_fraction={self.evict_fraction!r} must be below "
                f"flush_fraction={self.flush_fraction!r}: an eviction brings the prompt "
                "down from the flush point to the evict point"
            )
        return self

    @classmethod
    def from_any(cls, value: Context | MakesContext | Mapping[str, Any] | None) -> Context:
        """Return a validated Context.

        ``value`` is a Context, a served graph's client context (merged with the server's
        settings), a (possibly partial) mapping, or None (defaults).

        Raises:
            ContextError: an unknown field, or a value of the wrong kind or out of range.
        """
        if isinstance(value, Context):
            return value
        if isinstance(value, MakesContext):
            return value.to_context()
        if not value:
            return cls()
        if not isinstance(value, Mapping):
            raise ContextError(
                [f"the context must be a mapping of field names to values, not {value!r}"]
            )
        return cls(**value)

    @classmethod
    def for_run(
        cls,
        value: Context | MakesContext | Mapping[str, Any] | None,
        config: Mapping[str, Any] | None,
    ) -> Context:
        """The Context of a run given ``value`` (as `from_any`) and the run's ``config``.

        The agent is the one `run_agent_id` names (the context's ``agent_id`` when it sets
        one, else ``configurable["agent_id"]``), the default otherwise.

        Raises:
            ContextError: as `from_any`; or a ``configurable["agent_id"]`` that is blank.
        """
        ctx = cls.from_any(value)
        agent = run_agent_id(value, config)
        if agent is None or agent == ctx.agent_id:
            return ctx
        return cls(**{**ctx.fields(), "agent_id": agent})

    def fields(self) -> dict[str, Any]:
        """Every field's value, by name (for a Context made from this one with changes)."""
        return {name: getattr(self, name) for name in CONTEXT_FIELDS}


@runtime_checkable
class MakesContext(Protocol):
    """A served graph's client context (``settings.ClientContext``): it makes the full Context."""

    def to_context(self) -> Context:
        """The full Context: the server's settings plus the client's fields."""
        ...


def run_agent_id(run_context: Any, config: Mapping[str, Any] | None) -> str | None:
    """The agent a run names, by the one convention of every surface; None: it names none.

    The run context's ``agent_id`` when the context sets one (a `Context` made without it
    sets none: its ``"default"`` is a default, not a choice), else the run config's
    ``configurable["agent_id"]``. A graph or middleware built for one agent
    (``agent_id=...``) is that agent whatever the run says; that choice is its caller's.
    """
    if isinstance(run_context, Context):
        given: Any = run_context.agent_id if "agent_id" in run_context.model_fields_set else None
    elif isinstance(run_context, Mapping):
        given = run_context.get("agent_id")
    else:
        given = getattr(run_context, "agent_id", None)
    if given:
        return str(given)
    configured = ((config or {}).get("configurable") or {}).get("agent_id")
    return None if configured is None else str(configured)


# --- what a refusal says ------------------------------------------------------------


class ContextError(ValueError):
    """A context value that cannot be used; the message names each field, value and range."""

    def __init__(self, problems: Sequence[str]) -> None:
        self.problems = list(problems)
        super().__init__("Invalid context: " + "; ".join(self.problems))


def allowed(info: FieldInfo) -> str:
    """What a field accepts, in words, read from its declaration (type, range, pattern)."""
    choices = get_args(info.annotation)
    if choices:
        return "one of " + ", ".join(repr(c) for c in choices)
    if info.annotation is str:
        return "a non-empty text" if _bound(info, "pattern") else "a text"
    noun = "a whole number" if info.annotation is int else "a number"
    low_open, low = (
        (True, _bound(info, "gt"))
        if _bound(info, "gt") is not None
        else (
            False,
            _bound(info, "ge"),
        )
    )
    high = _bound(info, "le")
    if low is not None and high is not None:
        return f"{noun} {'above' if low_open else 'from'} {_show(low)} to {_show(high)}"
    if low is not None:
        return f"{noun} {'above' if low_open else 'of at least'} {_show(low)}"
    return noun


def _bound(info: FieldInfo, name: str) -> Any:
    for item in info.metadata:
        if name == "pattern" and getattr(item, "pattern", None) is not None:
            return item.pattern
        if isinstance(item, annotated_types.BaseMetadata) and hasattr(item, name):
            return getattr(item, name)
    return None


def _show(number: float) -> str:
    return str(number) if isinstance(number, int) else f"{number:g}"


def field_problems(invalid: ValidationError, given: Mapping[str, Any]) -> list[str]:
    """One readable problem per bad field, in declaration order; unknown fields first."""
    unknown = sorted(str(e["loc"][0]) for e in invalid.errors() if e["type"] == "extra_forbidden")
    problems = (
        [f"unknown field(s) {unknown}; the fields are {sorted(CONTEXT_FIELDS)}"] if unknown else []
    )
    bad: set[str] = set()
    for error in invalid.errors():
        if error["type"] == "extra_forbidden":
            continue
        if not error["loc"]:  # a rule across fields
            problems.append(str(error["msg"]).removeprefix("Value error, "))
            continue
        name = str(error["loc"][0])
        if name not in bad:
            bad.add(name)
            info = Context.model_fields[name]
            problems.append(f"{name}={given.get(name)!r} is not allowed: use {allowed(info)}")
    return problems


CONTEXT_FIELDS: tuple[str, ...] = tuple(Context.model_fields)


__all__ = [
    "CONTEXT_FIELDS",
    "Context",
    "ContextError",
    "MakesContext",
    "allowed",
    "field_problems",
    "run_agent_id",
]
