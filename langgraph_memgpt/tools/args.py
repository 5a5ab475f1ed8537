"""What the model may pass to each memory tool: one pydantic model per tool.

A model's docstring is the tool's description and its fields' descriptions are what the
model reads about each argument; `langgraph_memgpt.tools.run` turns them into the schemas the
model is offered (whole, or only a tool's compact arguments for a small model).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

HEARTBEAT_DESCRIPTION = "true: think again after this returns; false: end your turn."
SECTION_DESCRIPTION = "Only for a block in labelled sections: the section to edit; others stay."
MAX_PAGE = 10_000
"""Highest result page a search takes: beyond it a page number is a model's mistake (a
2**64 page overflowed SQLite's integer), refused with a readable error."""


class HeartbeatArgs(BaseModel):
    """The argument every memory tool but the reply takes: think again after it, or not."""

    request_heartbeat: bool = Field(default=False, description=HEARTBEAT_DESCRIPTION)


class SendMessageArgs(BaseModel):
    """Send your reply to the user: the only text the user sees. Once per user message.

    Example: {"message": "<your reply>"}
    """

    message: str = Field(description="The full message to show the user.")


class CoreMemoryAppendArgs(HeartbeatArgs):
    """Add a lasting fact to a core memory block (always in view). Not for chatter or questions.

    'human' holds facts about the user, 'persona' facts about you. Write a short note in
    the third person, not the user's words. Example: {"label": "human", "content": "<one
    short fact about the user>"}
    """

    label: str = Field(description="Block to edit: 'human' (the user) or 'persona' (you).")
    content: str = Field(description="The fact, as a short note.")
    section: str | None = Field(default=None, description=SECTION_DESCRIPTION)


class CoreMemoryReplaceArgs(HeartbeatArgs):
    """Correct or delete a fact in a core memory block: old_content must be its exact text.

    Example: {"label": "human", "old_content": "<exact old text>", "new_content": "<the
    corrected text>"}; an empty new_content deletes.
    """

    label: str = Field(description="Block to edit: 'human' or 'persona'.")
    old_content: str = Field(description="Exact text currently in the block.")
    new_content: str = Field(description="Text to put in its place.")
    section: str | None = Field(default=None, description=SECTION_DESCRIPTION)


class ArchivalMemoryInsertArgs(HeartbeatArgs):
    """Save a long or detailed passage to archival memory (unlimited, found by search later).

    Example: {"content": "<a detailed passage worth keeping>"}
    """

    content: str = Field(description="Self-contained text to keep.")
    tags: list[str] = Field(default_factory=list, description="Tags for later filtering.")
    replaces: int | None = Field(
        default=None, description="When a saved fact changed: the #id of its old passage."
    )


class ArchivalMemorySearchArgs(HeartbeatArgs):
    """Search archival memory (saved passages, summaries of old conversations) by meaning.

    Only when core memory does not already hold the answer. Example: {"query": "<topic words>"}
    """

    query: str = Field(description="What to look for: a few topic words.")
    tags: list[str] = Field(default_factory=list, description="Only passages with these tags.")
    tag_match: Literal["any", "all"] = Field(
        default="any", description="'any': a passage needs one of the tags; 'all': every tag."
    )
    start_date: str = Field(default="", description="Inclusive, YYYY-MM-DD.")
    end_date: str = Field(default="", description="Inclusive, YYYY-MM-DD.")
    page: int = Field(default=0, ge=0, le=MAX_PAGE, description="Result page, from 0.")


class ConversationSearchArgs(HeartbeatArgs):
    """Search every earlier message with this user, in all conversations, by words and meaning.

    Only when core memory does not already hold the answer. Example: {"query": "<topic
    words>"}
    """

    query: str = Field(description="What to look for: a few topic words.")
    roles: list[Literal["user", "assistant", "event"]] = Field(
        default_factory=list,
        description="Only messages from these roles ('event': what the host reported).",
    )
    start_date: str = Field(default="", description="Inclusive, YYYY-MM-DD.")
    end_date: str = Field(default="", description="Inclusive, YYYY-MM-DD.")
    page: int = Field(default=0, ge=0, le=MAX_PAGE, description="Result page, from 0.")


class ConversationSearchDateArgs(HeartbeatArgs):
    """List earlier messages between two dates, oldest first.

    Example: {"start_date": "<YYYY-MM-DD>", "end_date": "<YYYY-MM-DD>"}
    """

    start_date: str = Field(description="Inclusive, YYYY-MM-DD.")
    end_date: str = Field(description="Inclusive, YYYY-MM-DD.")
    page: int = Field(default=0, ge=0, le=MAX_PAGE, description="Result page, from 0.")


class ForgetArgs(HeartbeatArgs):
    """Delete from your memory what the user asks you to forget (their own data only).

    Deletes every saved passage and past message containing all the words you give, and
    the summaries written from them. Only when the user asks you to forget something;
    never to tidy up. Example: {"about": "<words naming what to forget>"}
    """

    about: str = Field(description="A few words the forgotten text contains, e.g. a name.")
