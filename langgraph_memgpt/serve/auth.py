"""An example of LangGraph custom auth for the served agent: who may use which agent.

Enable it in ``langgraph.json`` (``"auth": {"path": "langgraph_memgpt.serve.auth:auth"}``) and
give the server ``MEMGPT_AUTH_TOKENS``, a JSON object of bearer token → user name::

    MEMGPT_AUTH_TOKENS='{"s3cret-a": "alice", "s3cret-b": "bob"}'

Then every request needs ``Authorization: Bearer <token>``, and:

- a user's runs use that user's agents only: ``agent_id`` must be the user name or
  ``<user>/<anything>``; a run without ``agent_id`` gets the user name. Another agent id
  is refused (403) before the run is created;
- threads belong to the user who created them: other users neither see nor run them;
  a thread's owner writes its conversation only: a run's ``command`` updating any other
  state key (``agent_id`` above all) is refused here, and the served graph refuses such
  a state update (``POST /threads/{id}/state``, whose values no auth handler sees) for
  every server, with auth or without (`langgraph_memgpt.ownership`);
- assistants can be read (the server's own), not created, changed or deleted, so no
  assistant context can carry another user's agent id; crons and the store are refused.

It is an example (tokens in an environment variable, no expiry, no hashing): replace
``authenticate`` with your identity provider and keep the authorization rules.
"""

from __future__ import annotations

import functools
import json
import os
from typing import Any

from langgraph_sdk import Auth

from langgraph_memgpt.ownership import OWNER_KEY, command_refusal, may_use

TOKENS_ENV = "MEMGPT_AUTH_TOKENS"

auth = Auth()


@functools.lru_cache(maxsize=4)
def _parse_tokens(raw: str) -> dict[str, str]:
    try:
        tokens = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise ValueError(f"{TOKENS_ENV} is not JSON ({exc})") from None
    if not isinstance(tokens, dict) or not all(
        isinstance(k, str) and k and isinstance(v, str) and v.strip() and "/" not in v
        for k, v in tokens.items()
    ):
        raise ValueError(
            f"{TOKENS_ENV} must be a JSON object of token to user name, e.g. "
            '{"s3cret-a": "alice"} (user names without "/")'
        )
    return tokens


def tokens() -> dict[str, str]:
    """The token → user mapping of ``$MEMGPT_AUTH_TOKENS`` (no tokens: nobody gets in)."""
    return _parse_tokens(os.environ.get(TOKENS_ENV) or "{}")


@auth.authenticate
async def authenticate(authorization: str | None) -> Auth.types.MinimalUserDict:
    """A bearer token of ``$MEMGPT_AUTH_TOKENS`` names the user; anything else is 401."""
    scheme, _, token = (authorization or "").partition(" ")
    user = tokens().get(token.strip()) if scheme.lower() == "bearer" else None
    if user is None:
        raise Auth.exceptions.HTTPException(
            status_code=401, detail="send 'Authorization: Bearer <token>' with a known token"
        )
    return {"identity": user, "is_authenticated": True}


def _own(ctx: Auth.types.AuthContext, value: Any) -> dict[str, str]:
    """Stamp the user as owner of what is written; filter what is read to the user's."""
    metadata = value.get("metadata") if isinstance(value, dict) else None
    if isinstance(metadata, dict):
        metadata[OWNER_KEY] = ctx.user.identity
    return {OWNER_KEY: ctx.user.identity}


@auth.on
async def deny_the_rest(ctx: Auth.types.AuthContext, value: Any) -> None:
    """Anything without a rule below (crons, the store) is refused."""
    raise Auth.exceptions.HTTPException(
        status_code=403, detail=f"{ctx.resource}.{ctx.action} is not allowed on this server"
    )


@auth.on.threads
async def own_threads(ctx: Auth.types.AuthContext, value: Any) -> dict[str, str]:
    """Threads are the creator's: created with their name, visible only to them."""
    return _own(ctx, value)


@auth.on.threads.create_run
async def own_agents(ctx: Auth.types.AuthContext, value: Auth.types.RunsCreate) -> dict[str, str]:
    """A run uses one of the user's agents (default: the one named after the user)."""
    user = ctx.user.identity
    kwargs = value["kwargs"]
    context = kwargs.get("context")
    if not isinstance(context, dict):
        context = {}
        kwargs["context"] = context
    refused = command_refusal(kwargs.get("command"))
    if refused is not None:
        # The thread's agent and counters are the graph's: a command writes the conversation.
        raise Auth.exceptions.HTTPException(status_code=403, detail=refused)
    agent_id = context.get("agent_id")
    if agent_id is None:
        # Set explicitly: the run's context wins over any assistant's.
        context["agent_id"] = user
    elif not may_use(user, agent_id):
        raise Auth.exceptions.HTTPException(
            status_code=403,
            detail=f"user {user!r} may use agent_id {user!r} or {user + '/<name>'!r}, "
            f"not {agent_id!r}",
        )
    return _own(ctx, value)


@auth.on.assistants.read
async def read_assistants(ctx: Auth.types.AuthContext, value: Any) -> None:
    """The server's assistants are readable by every user (Studio needs them)."""


@auth.on.assistants.search
async def search_assistants(ctx: Auth.types.AuthContext, value: Any) -> None:
    """As read."""


@auth.on.assistants
async def no_assistant_changes(ctx: Auth.types.AuthContext, value: Any) -> None:
    """No user creates or changes assistants: an assistant's context could name any agent."""
    raise Auth.exceptions.HTTPException(
        status_code=403,
        detail=f"assistants.{ctx.action} is not allowed: set agent_id in the run's context",
    )
