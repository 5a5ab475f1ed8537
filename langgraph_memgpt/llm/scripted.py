"""A chat model that replays a fixed script of replies, for tests and offline demos.

The langchain-core fake chat models cannot ``bind_tools`` and drop tool calls when
streaming, so graph tests (and the server test, through ``scripted:<path.json>``) use
this one: it answers the n-th call with the n-th scripted message, keeps tool calls in
both ``invoke`` and ``stream``, and records what it was asked so a test can check the
prompt the agent built.

When the script runs out the model raises `ScriptExhaustedError` instead of repeating a
reply: an agent loop that makes one call more than the test expects is a bug the test
should see, not paper over.
"""

from __future__ import annotations

import json
import threading
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import AIMessage, BaseMessage, ToolCall
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langchain_core.runnables import Runnable
from langchain_core.tools import BaseTool
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import Field, PrivateAttr

from langgraph_memgpt.llm.chunks import message_chunks

ScriptStep = AIMessage | Mapping[str, Any] | str
"""One scripted reply: an AIMessage, a dict ``{"content", "tool_calls"}``, or plain text."""


class ScriptExhaustedError(RuntimeError):
    """The model was called more times than its script has replies."""


def to_ai_message(step: ScriptStep) -> AIMessage:
    """Turn one script step into an AIMessage with well-formed tool calls.

    Dict steps use the LangChain shape ``{"content": str, "tool_calls": [{"name", "args",
    "id"}]}``; a missing call id is filled in, because every tool result must point back
    at its call and providers reject a queue where one does not.
    """
    if isinstance(step, AIMessage):
        return step
    if isinstance(step, str):
        return AIMessage(content=step)
    if not isinstance(step, dict):
        raise ValueError(f"script step {step!r} is neither a string nor an object")
    unknown = sorted(set(step) - {"content", "tool_calls", "id"})
    if unknown:
        raise ValueError(f"script step has unknown keys {unknown}: use content / tool_calls")
    raw_calls = step.get("tool_calls") or []
    if not isinstance(raw_calls, list):
        raise ValueError(f"script step's tool_calls must be a list, got {raw_calls!r}")
    if not isinstance(step.get("content") or "", str | list):
        raise ValueError(f"script step's content must be text, got {step.get('content')!r}")
    calls: list[ToolCall] = []
    for raw in raw_calls:
        if not isinstance(raw, dict) or "name" not in raw:
            raise ValueError(f"scripted tool call {raw!r} is not an object with a 'name'")
        if not isinstance(raw.get("args") or {}, dict):
            raise ValueError(f"scripted tool call {raw!r}: 'args' must be an object")
        calls.append(
            ToolCall(
                name=str(raw["name"]),
                args=dict(raw.get("args") or {}),
                id=str(raw.get("id") or f"call_{uuid.uuid4().hex[:24]}"),
                type="tool_call",
            )
        )
    kwargs: dict[str, Any] = {"content": step.get("content") or "", "tool_calls": calls}
    if step.get("id"):
        kwargs["id"] = str(step["id"])
    return AIMessage(**kwargs)


class ScriptedChatModel(BaseChatModel):
    """Replays ``script`` in order: call n gets reply n; extra calls raise.

    Attributes:
        script: the replies, in order.
        calls: the messages of every call so far (one list per call), for assertions.
        call_kwargs: the keyword arguments of every call (bound ``tools``, ``tool_choice``).
        bound_tools: the tools of the latest ``bind_tools``, as OpenAI tool dicts.

    Example:
        >>> model = ScriptedChatModel.from_steps(["hello"])
        >>> model.invoke("hi").content
        'hello'
    """

    script: list[AIMessage]
    calls: list[list[BaseMessage]] = Field(default_factory=list)
    call_kwargs: list[dict[str, Any]] = Field(default_factory=list)
    bound_tools: list[dict[str, Any]] = Field(default_factory=list)
    stream_piece: int = 0
    """Characters per streamed chunk (0: text and each call's arguments in one chunk)."""
    # A served graph calls one model from several runs' threads at once: each reply once.
    _turn_lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)

    @classmethod
    def from_steps(cls, steps: Sequence[ScriptStep]) -> ScriptedChatModel:
        """Build a model from AIMessages, dicts or strings (see `to_ai_message`)."""
        return cls(script=[to_ai_message(step) for step in steps])

    @classmethod
    def from_file(cls, path: str | Path) -> ScriptedChatModel:
        """Build a model from a JSON file: a list of steps, or ``{"script": [...]}``.

        The object form may set ``"stream_piece"`` (characters per streamed chunk).

        Raises:
            ValueError: the file is not a JSON list of steps.
        """
        data = json.loads(Path(path).read_text(encoding="utf-8"))
        piece = 0
        if isinstance(data, dict):
            piece = int(data.get("stream_piece") or 0)
            data = data.get("script")
        if not isinstance(data, list):
            raise ValueError(f"{path}: expected a JSON list of replies or {{'script': [...]}}")
        steps: list[AIMessage] = []
        for number, step in enumerate(data, start=1):
            try:
                steps.append(to_ai_message(step))
            except (ValueError, TypeError) as err:  # pydantic's errors are ValueErrors
                detail = " ".join(str(err).split())
                raise ValueError(f"{path}: step {number}: {detail}") from None
        return cls(script=steps, stream_piece=piece)

    @property
    def _llm_type(self) -> str:
        return "scripted"

    @property
    def remaining(self) -> int:
        """Replies not yet used."""
        return len(self.script) - len(self.calls)

    def bind_tools(
        self,
        tools: Sequence[dict[str, Any] | type | Callable[..., Any] | BaseTool],
        *,
        tool_choice: str | None = None,
        **kwargs: Any,
    ) -> Runnable[LanguageModelInput, AIMessage]:
        """Accept and record tools like a real provider would; the replies stay scripted."""
        self.bound_tools = [convert_to_openai_tool(tool) for tool in tools]
        if tool_choice is not None:
            kwargs["tool_choice"] = tool_choice
        return self.bind(tools=self.bound_tools, **kwargs)

    def _next_reply(self, messages: list[BaseMessage], kwargs: dict[str, Any]) -> AIMessage:
        with self._turn_lock:
            index = len(self.calls)
            if index >= len(self.script):
                last = messages[-1].content if messages else ""
                raise ScriptExhaustedError(
                    f"ScriptedChatModel was called {index + 1} times but its script has "
                    f"{len(self.script)} replies (last input: {str(last)[:200]!r})"
                )
            self.calls.append(list(messages))
            self.call_kwargs.append(dict(kwargs))
        return self.script[index].model_copy(deep=True)

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        return ChatResult(generations=[ChatGeneration(message=self._next_reply(messages, kwargs))])

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        # Text first, then each call's arguments as JSON text (in ``stream_piece``-sized
        # pieces when set, as a provider streams them): merging the chunks gives back the
        # scripted message, invalid calls included.
        # Through _generate, so a model that overrides it (a test's failing model) streams
        # what it would have answered.
        generated = self._generate(messages, stop, run_manager, **kwargs).generations[0].message
        reply = generated if isinstance(generated, AIMessage) else AIMessage(generated.content)
        yield from message_chunks(reply, self.stream_piece)
