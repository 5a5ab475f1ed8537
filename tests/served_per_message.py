"""A served graph for tests whose model replays one script per user message.

The served graph takes its model from the server, never from a client, so tests that run
several conversations at once on one server cannot pick a script per run. This module
serves `langgraph_memgpt.serve.server.served_graph` with a model that picks the script by the
newest user message, from the JSON object ``{"<user message>": [steps]}`` in the file
``$MEMGPT_TEST_SCRIPTS`` (read at the first call, so a test can write it after the server
started). Name it in a test's own ``langgraph.json``: ``"<path of this file>:graph"``.
"""

from __future__ import annotations

import json
import os
import re
import threading
from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from pydantic import Field, PrivateAttr

from langgraph_memgpt.llm.scripted import ScriptedChatModel
from langgraph_memgpt.serve.server import served_graph
from langgraph_memgpt.turn.main_context import ALERT_NAME

SCRIPTS_ENV = "MEMGPT_TEST_SCRIPTS"


class ScriptPerUserMessage(ScriptedChatModel):
    """Call n of the conversation whose newest user message is M gets reply n of M's script."""

    script: list[AIMessage] = Field(default_factory=list)
    _models: dict[str, ScriptedChatModel] | None = PrivateAttr(default=None)
    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)

    def _next_reply(self, messages: list[BaseMessage], kwargs: dict[str, Any]) -> AIMessage:
        with self._lock:
            if self._models is None:
                scripts = json.loads(Path(os.environ[SCRIPTS_ENV]).read_text())
                self._models = {k: ScriptedChatModel.from_steps(v) for k, v in scripts.items()}
        user = next(
            str(m.content)
            for m in reversed(messages)
            if isinstance(m, HumanMessage) and m.name != ALERT_NAME
        )
        user = re.sub(r"^\[[^\]]* UTC\] ", "", user)  # the time the model is shown
        return self._models[user]._next_reply(messages, kwargs)


graph = served_graph(model=ScriptPerUserMessage())
