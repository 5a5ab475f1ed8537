"""The embedded model's raw JSON, streamed with its reply already said to the user.

The small model's step repairs (`small_model.repairs`, which the embedded model's wrapper
applies as it parses the step) repair a finished reply's voice (`voice.reply_voice`: "I
love the colour teal." -> "You love the colour teal."). Streamed as the model wrote it, the
reply would reach a chat UI unrepaired, and the repaired one after it as a second message.
`VoicedRaw` rewrites the reply's JSON string as it streams: a sentence goes out repaired
once it is finished (the repair works sentence by sentence, so what went out stays a prefix
of the repaired whole), and of the open sentence what the repair cannot change
(`voice.ReplyVoice.settled`); the rest of the JSON passes through as it comes.
"""

from __future__ import annotations

import json
import re

from langgraph_memgpt.small_model.voice import ReplyVoice

_SURROGATE_HIGH = ("\ud800", "\udbff")
_OPEN_ESCAPE = re.compile(r"(?<!\\)(\\\\)*\\(u[0-9a-fA-F]{0,3})?$")


class VoicedRaw:
    """Raw JSON pieces in, the same JSON with the reply voiced out (see the module).

    An `llm.toolcalls.RawRepair`: `repairs.StepRepairs.raw` hands one to the model.
    """

    def __init__(self, voice: ReplyVoice, reply_tool: str) -> None:
        """``voice`` repairs the reply of tool ``reply_tool``."""
        self.voice = voice
        self.marker = f'"{reply_tool}"'
        self.raw = ""
        self.sent = ""

    def add(self, piece: str) -> str:
        """Take the next raw piece; return what may go out now (maybe nothing)."""
        self.raw += piece
        return self._out(self._view())

    def end(self) -> str:
        """The stream ended: whatever is left to go out."""
        return self._out(self._view(finished=True))

    def _out(self, view: str) -> str:
        if len(view) <= len(self.sent) or not view.startswith(self.sent):
            return ""
        out, self.sent = view[len(self.sent) :], view
        return out

    def _view(self, finished: bool = False) -> str:
        """The raw text as it may be shown: the reply string voiced, what may still change held."""
        raw = self.raw
        base = raw.rfind(self.marker)
        if base < 0:
            return raw
        opening = re.compile(r'"message"\s*:\s*"').search(raw, base)
        if opening is None:
            return raw
        start = opening.end()
        close = _string_end(raw, start)
        if close is None:
            if finished:  # cut off mid-string: show what is there, as written
                return raw
            return raw[:start] + _escaped(self.voice.settled(_decoded_prefix(raw[start:])))
        try:
            text = json.loads('"' + raw[start:close] + '"')
        except ValueError:  # not JSON (an invalid escape): shown as written, parsed later
            return raw
        return raw[:start] + _escaped(self.voice.repair(text)) + raw[close:]


def _string_end(raw: str, start: int) -> int | None:
    """Index of the quote closing the JSON string whose body starts at ``start``."""
    index = start
    while index < len(raw):
        char = raw[index]
        if char == "\\":
            index += 2
            continue
        if char == '"':
            return index
        index += 1
    return None


def _decoded_prefix(body: str) -> str:
    """The decoded text of an unfinished JSON string body (an escape cut in half left out)."""
    body = _OPEN_ESCAPE.sub(lambda m: m.group(1) or "", body)
    try:
        text = str(json.loads('"' + body + '"'))
    except ValueError:
        return ""
    if text and _SURROGATE_HIGH[0] <= text[-1] <= _SURROGATE_HIGH[1]:
        text = text[:-1]  # half of a pair: the other half is still to come
    return text


def _escaped(text: str) -> str:
    """``text`` as the body of a JSON string."""
    return json.dumps(text, ensure_ascii=False)[1:-1]
