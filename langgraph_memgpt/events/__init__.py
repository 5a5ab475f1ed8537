"""System events.

A run's ``events`` input (``input``), events into the queue (``event_turn``), and the file
watcher that sends them (``watch``, ``watch_sinks``, ``watch_text``).

This face hands on the input's names, so ``langgraph_memgpt.events`` stays the import path of
the ``events`` channel.
"""

from langgraph_memgpt.events.input import (
    EVENT_KEY,
    EVENT_NAME,
    MAX_EVENTS,
    Event,
    EventError,
    add_events,
    check_events,
    event_message_id,
    is_event,
    message_id_refusal,
    render_event,
)

__all__ = [
    "EVENT_KEY",
    "EVENT_NAME",
    "MAX_EVENTS",
    "Event",
    "EventError",
    "add_events",
    "check_events",
    "event_message_id",
    "is_event",
    "message_id_refusal",
    "render_event",
]
