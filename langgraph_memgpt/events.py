"""System events: what the host tells the agent, as a run's input beside (or instead of) a message.

MemGPT's queue holds "user prompts, system events, and function execution results". A
host that saw a configuration file change or a credential rotate should not have to pose
as the user to tell the agent (who would then reply to nobody). A run's input may carry
``events``: each has a ``source`` (who noticed: ``"watcher"``, ``"deploy"``), a ``time``
(when it happened; default: when it arrived) and a ``text``. They are checked when the
input is applied (`add_events`, the channel's reducer), so a malformed event fails the run
before any node runs, with an error naming the field (``events[0].source: must be a
non-empty string``), and nothing of that input is kept.

An event's message id is ``event:<its id>`` (`event_message_id`): events keep ids of their
own and never stand for, nor overwrite, a user's message with the same id; a client's
message with an id in that namespace is refused (`message_id_refusal`).

``open_turn`` turns waiting events into messages of the queue (`take_events`): user-role
messages named `EVENT_NAME`, which the prompt shows as events from the host (`render_event`)
and recall keeps under the role ``event``. A turn opened by events alone expects no reply
(`awaits_reply`): the loop does not ask the model for one, ``respond`` sends none, and the
run's ``event_outcome`` lists the memory edits the events led to (`event_outcome`).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

from langchain_core.messages import BaseMessage, HumanMessage, RemoveMessage
from typing_extensions import TypedDict

from langgraph_memgpt.osutil import utc_now
from langgraph_memgpt.stores.dates import to_utc_iso

EVENT_NAME = "system_event"
"""Name of the user-role messages that carry events (the recall role ``event``)."""
EVENT_KEY = "memgpt_event"
"""Where an event message keeps its source and time (``additional_kwargs``)."""
FIELDS = ("source", "time", "text", "id")
EVENT_ID_PREFIX = "event:"
"""The namespace of events' message ids (`event_message_id`)."""
MAX_SOURCE_CHARS = 200
"""A source names who noticed; anything longer is text in the wrong field."""
MAX_EVENTS = 100
"""Events one run may carry: more is a host flooding the agent, each costs prompt tokens."""
EVENT_NOTE = (
    "[System event from {source}, {time}. This is the host, not the user: nobody is waiting "
    "for a reply, so do not call send_message. If this changes what your core memory says, "
    "correct that line where it is (block 'human' for the user).]"
)


class Event(TypedDict):
    """One checked event, as the ``events`` channel keeps it until ``open_turn`` reads it."""

    id: str
    source: str
    time: str
    text: str


class EventError(ValueError):
    """A run's ``events`` input is malformed; the message names the field."""


def check_events(value: Any) -> list[Event]:
    """``value`` (a run's ``events``) checked and normalised: ids given, times in UTC.

    Raises:
        EventError: not a list of objects with a non-empty ``source`` and ``text`` (and an
            ISO-8601 ``time``, a string ``id``, when given); the message names the field.
    """
    if not isinstance(value, list | tuple):
        raise EventError(f"events: must be a list of objects, got {type(value).__name__}")
    if len(value) > MAX_EVENTS:
        raise EventError(f"events: at most {MAX_EVENTS} in one run, got {len(value)}")
    return [_check_event(item, f"events[{index}]") for index, item in enumerate(value)]


def _check_event(item: Any, where: str) -> Event:
    if not isinstance(item, Mapping):
        raise EventError(f"{where}: must be an object with source, time and text")
    unknown = sorted(str(k) for k in item if k not in FIELDS)
    if unknown:
        raise EventError(f"{where}.{unknown[0]}: unknown field (fields: {', '.join(FIELDS)})")
    source, text = item.get("source"), item.get("text")
    if not isinstance(source, str) or not source.strip():
        raise EventError(f"{where}.source: must be a non-empty string")
    if len(source) > MAX_SOURCE_CHARS:
        raise EventError(f"{where}.source: at most {MAX_SOURCE_CHARS} characters")
    if not isinstance(text, str) or not text.strip():
        raise EventError(f"{where}.text: must be a non-empty string")
    when = item.get("time")
    if when is None:
        when = utc_now("seconds")
    elif not isinstance(when, str):
        raise EventError(f"{where}.time: must be an ISO-8601 string, e.g. 2026-12-02T09:30:00Z")
    else:
        try:
            when = to_utc_iso(when)[:19] + "+00:00"
        except ValueError:
            raise EventError(
                f"{where}.time: must be ISO-8601, e.g. 2026-12-02T09:30:00Z, got {when!r}"
            ) from None
    event_id = item.get("id")
    if event_id is not None and (not isinstance(event_id, str) or not event_id.strip()):
        raise EventError(f"{where}.id: must be a non-empty string when given")
    # A caller's id makes a retried delivery (a webhook sent twice) one message in recall.
    return Event(
        id=event_message_id(event_id or str(uuid.uuid4())),
        source=source.strip(),
        time=when,
        text=text.strip(),
    )


def event_message_id(event_id: str) -> str:
    """The id an event's message has in the queue and in recall: ``event:<the event's id>``.

    Events have ids of their own, apart from messages': a host numbering its events
    ``1, 2, ...`` never names a user's message ``1``, so an event is never taken for that
    message (left out of the queue while it is in view) nor recorded over it in recall.
    The same event id always gives the same message id, so a retried delivery is one
    message; an id already in the namespace is kept as it is.
    """
    event_id = event_id.strip()
    return event_id if event_id.startswith(EVENT_ID_PREFIX) else EVENT_ID_PREFIX + event_id


def message_id_refusal(messages: Any) -> str | None:
    """Why a client's ``messages`` are refused: an id in the events' namespace (None: fine).

    Events and messages share the queue and recall, which keep a message by its id: a
    user's message ``event:7`` would stand for event ``7`` while in view and be recorded
    over by it (or over it) once evicted. So the namespace is the events' alone: a message
    whose id starts with `EVENT_ID_PREFIX` is refused, unless it is an event's own message
    (a parent graph handing the agent its queue back) or removes one from the queue. The
    run's input check (`langgraph_memgpt.turn.admission`) and a client's state write
    (`ownership`) both ask here.
    """
    from langchain_core.messages import convert_to_messages

    items = messages if isinstance(messages, list | tuple) else [messages]
    for index, item in enumerate(items):
        raw = item.id if isinstance(item, BaseMessage) else None
        if isinstance(item, Mapping):
            raw = item.get("id")
        if not (isinstance(raw, str) and raw.strip().startswith(EVENT_ID_PREFIX)):
            continue
        try:
            (message,) = convert_to_messages([item])
        except Exception:  # noqa: BLE001 - malformed: not an event's message either
            message = None
        if message is not None and (is_event(message) or isinstance(message, RemoveMessage)):
            continue  # an event's own message, or taking one out of the queue
        return (
            f"messages[{index}].id: {raw!r} is in the events' namespace (ids starting with "
            f"{EVENT_ID_PREFIX!r} are system events' own); give the message another id, or "
            "send an event as `events` ({source, text, id})"
        )
    return None


def add_events(waiting: list[Event] | None, new: Any) -> list[Event]:
    """Reducer of the ``events`` channel: new events are checked and wait with the others.

    ``None`` clears the channel (``open_turn`` has put them in the queue). Checking
    here, as the input is applied, refuses a malformed event before any node runs.
    """
    if new is None:
        return []
    return [*(waiting or []), *check_events(new)]


def is_event(message: BaseMessage) -> bool:
    """True for a queue message that carries a system event."""
    return isinstance(message, HumanMessage) and message.name == EVENT_NAME


def render_event(message: BaseMessage, text: str) -> str:
    """An event as the model reads it: a header saying it comes from the host, then ``text``."""
    meta = message.additional_kwargs.get(EVENT_KEY) or {}
    when = str(meta.get("time") or "")
    shown = f"{when[:10]} {when[11:16]} UTC" if when else "time unknown"
    return f"{EVENT_NOTE.format(source=meta.get('source') or 'host', time=shown)}\n{text}"
