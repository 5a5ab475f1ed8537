"""The search the loop makes for a small model when the user asks something core memory lacks."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver

from langgraph_memgpt import Context, build_graph, prompts
from langgraph_memgpt.llm.scripted import ScriptedChatModel
from langgraph_memgpt.small_model.auto_search import (
    AUTO_FLAG,
    close_to_best,
    is_memory_question,
    without_when_words,
)
from langgraph_memgpt.stores.sqlite import open_memory
from langgraph_memgpt.stores.types import Hit


class SmallScriptedModel(ScriptedChatModel):
    """A scripted model that declares itself small, as the embedded one does."""

    compact_tools: bool = True
    accepts_step_tools: bool = True


def reply(text: str) -> dict[str, Any]:
    return {"content": "", "tool_calls": [{"name": "send_message", "args": {"message": text}}]}


def search(query: str) -> dict[str, Any]:
    return {
        "content": "",
        "tool_calls": [{"name": "conversation_search", "args": {"query": query}}],
    }


class Agent:
    def __init__(
        self, data_dir: Path, script: list[Any], *, small: bool = True, **ctx: Any
    ) -> None:
        kind = SmallScriptedModel if small else ScriptedChatModel
        self.model = kind.from_steps(script)
        self.graph = build_graph(model=self.model).compile(checkpointer=InMemorySaver())
        self.ctx = Context(data_dir=str(data_dir), embedding_model="none", **ctx)

    def say(self, text: str, thread: str) -> dict[str, Any]:
        config = {"configurable": {"thread_id": thread}}
        return self.graph.invoke({"messages": [HumanMessage(text)]}, config, context=self.ctx)

    def seen_results(self, call: int) -> list[str]:
        """The tool results the model's ``call``-th call (from 0) had in its prompt."""
        return [str(m.content) for m in self.model.calls[call] if isinstance(m, ToolMessage)]


@pytest.fixture
def told(tmp_path: Path) -> Agent:
    """An agent that heard the user's name in one thread (and saved nothing)."""
    agent = Agent(tmp_path, [reply("Nice to meet you, Mira!")] + [reply("-")] * 5)
    agent.say("Hi! My name is Mira, I play the harp.", thread="first")
    return agent


def test_a_question_in_a_new_thread_is_searched_before_the_first_step(told: Agent) -> None:
    out = told.say("What is my name?", thread="second")
    results = told.seen_results(1)
    assert len(results) == 1 and "My name is Mira, I play the harp." in results[0]
    # The question itself is in view, so it never takes a result slot.
    assert "What is my name?" not in results[0]
    # Nearest is not relevant: the model is told it may still not know.
    assert json.loads(results[0])["message"].endswith(prompts.AUTO_SEARCH_NOTE)
    queue = out["messages"]
    auto = [m for m in queue if isinstance(m, AIMessage) and m.additional_kwargs.get(AUTO_FLAG)]
    assert len(auto) == 1
    assert auto[0].tool_calls[0]["name"] == "conversation_search"
    assert auto[0].tool_calls[0]["args"] == {"query": "What is my name?"}
    # A valid queue: the call's result follows it, then the model's own step.
    index = queue.index(auto[0])
    assert isinstance(queue[index + 1], ToolMessage)
    assert queue[index + 1].tool_call_id == auto[0].tool_calls[0]["id"]
    assert out["messages"][-1].content == "-"


def test_the_search_shows_what_the_user_stated_not_earlier_questions_or_replies(
    tmp_path: Path,
) -> None:
    # An earlier question and the agent's (wrong) reply share the new question's words;
    # shown to a small model, they become its answer. Only the user's statements are shown.
    script = ["Nice to meet you, Mira!", "Your name is Mira.", "My dog's name is Mira.", "-"]
    agent = Agent(tmp_path, [reply(text) for text in script])
    agent.say("Hi! My name is Mira, I play the harp.", thread="first")
    agent.say("What is my name?", thread="second")
    agent.say("What is the name of my dog?", thread="third")
    [shown] = agent.seen_results(2)
    assert "My name is Mira, I play the harp." in shown
    assert "What is my name?" not in shown and "Your name is Mira" not in shown
    agent.say("What is the name of my cat?", thread="fourth")
    [shown] = agent.seen_results(3)
    assert "dog's name is Mira" not in shown and "name of my dog" not in shown


@pytest.mark.parametrize(
    ("question", "query"),
    [
        ("What was stolen from me this week?", "What was stolen from me?"),
        ("Where did I go on holiday last summer?", "Where did I go on holiday?"),
        (
            "Which instrument did I start learning this year?",
            "Which instrument did I start learning?",
        ),
        # Nothing but when: the question stays whole.
        ("What did I do yesterday?", "What did I do yesterday?"),
    ],
)
def test_the_search_looks_for_what_not_when(question: str, query: str) -> None:
    # "this week" is a date: as search words it finds "Ugh, what a week." first.
    assert without_when_words(question) == query


def test_the_search_shows_only_results_that_compete_with_the_best() -> None:
    # Seen on the embedded model: the answer first and two distant small-talk lines under
    # it got "I don't know"; the answer alone got the answer.
    hits = [Hit("Someone stole my bike.", 1.83), Hit("Ugh, what a week.", 1.0), Hit("Bye.", 0.8)]
    assert [h.item for h in close_to_best(hits)] == ["Someone stole my bike."]
    close = [Hit("Harp on Monday.", 2.0), Hit("Harp recital in May.", 1.9), Hit("Hi.", 0.4)]
    assert [h.item for h in close_to_best(close)] == ["Harp on Monday.", "Harp recital in May."]
    assert len(close_to_best([Hit(str(n), 1.0) for n in range(9)])) == 3
    assert close_to_best([]) == []


def test_the_search_is_recorded_in_recall_and_never_found_itself(told: Agent) -> None:
    told.say("What is my name?", thread="second")
    memory = open_memory(told.ctx.data_dir, told.ctx.agent_id)
    roles = [m.role for m in memory.recall.latest(10)]
    assert "tool" in roles
    page = memory.recall.search("name", mode="fts", page_size=10)
    assert all(hit.item.role == "user" or hit.item.tool_calls for hit in page.hits)
    assert not any("Page 1" in hit.item.text for hit in page.hits)


def test_a_question_core_memory_covers_is_not_searched(told: Agent) -> None:
    memory = open_memory(told.ctx.data_dir, told.ctx.agent_id)
    memory.core.append("human", "Sister Keiko is getting married in June.", actor="user")
    told.say("Who in my family is getting married in June?", thread="second")
    assert told.seen_results(1) == []


def test_one_shared_word_with_core_memory_is_not_coverage(told: Agent) -> None:
    memory = open_memory(told.ctx.data_dir, told.ctx.agent_id)
    memory.core.append("human", "Sister Keiko is getting married in June.", actor="user")
    told.say("What is my sister's job?", thread="second")
    assert len(told.seen_results(1)) == 1  # searched: the wedding line says nothing of a job


def test_a_statement_is_not_searched(told: Agent) -> None:
    told.say("I also like sailing.", thread="second")
    assert told.seen_results(1) == []


def test_nothing_is_searched_when_recall_holds_only_the_queue(tmp_path: Path) -> None:
    agent = Agent(tmp_path, [reply("I don't know yet.")])
    agent.say("What is my name?", thread="only")
    assert agent.seen_results(0) == []


def test_later_steps_of_the_turn_add_no_second_search(tmp_path: Path) -> None:
    save = {
        "content": "",
        "tool_calls": [
            {"name": "core_memory_append", "args": {"label": "human", "content": "Is Mira."}}
        ],
    }
    agent = Agent(tmp_path, [reply("Hi Mira"), save, reply("You are Mira.")])
    agent.say("Hi! My name is Mira.", thread="first")
    out = agent.say("What is my name?", thread="second")
    auto = [m for m in out["messages"] if m.additional_kwargs.get(AUTO_FLAG)]
    assert len(auto) == 1
    assert len(agent.model.calls) == 3 and out["messages"][-1].content == "You are Mira."


def test_a_small_model_asked_about_the_user_may_search_or_reply_but_not_edit(told: Agent) -> None:
    told.say("What is my name?", thread="second")
    allowed = told.model.call_kwargs[1]["step_tools"]
    assert "send_message" in allowed and "conversation_search" in allowed
    assert not {"core_memory_append", "core_memory_replace", "archival_memory_insert"} & set(
        allowed
    )
    told.say("I also like sailing.", thread="second")
    assert "step_tools" not in told.model.call_kwargs[2]


def test_hosted_models_decide_for_themselves_unless_asked(tmp_path: Path) -> None:
    hosted = Agent(tmp_path / "a", [reply("Hi Mira")] + [reply("-")] * 3, small=False)
    hosted.say("Hi! My name is Mira.", thread="first")
    hosted.say("What is my name?", thread="second")
    assert hosted.seen_results(1) == []

    asked = Agent(
        tmp_path / "b", [reply("Hi Mira")] + [reply("-")] * 3, small=False, auto_search="on"
    )
    asked.say("Hi! My name is Mira.", thread="first")
    asked.say("What is my name?", thread="second")
    assert "Mira" in asked.seen_results(1)[0]


def test_off_means_off_for_small_models_too(tmp_path: Path) -> None:
    agent = Agent(tmp_path, [reply("Hi Mira")] + [reply("-")] * 3, auto_search="off")
    agent.say("Hi! My name is Mira.", thread="first")
    agent.say("What is my name?", thread="second")
    assert agent.seen_results(1) == []


def test_the_models_own_search_skips_what_is_in_view(tmp_path: Path) -> None:
    agent = Agent(
        tmp_path,
        [reply("Noted.")] + [search("sailing"), reply("You like sailing.")],
        auto_search="off",
    )
    agent.say("I like sailing on Sundays.", thread="first")
    agent.say("Tell me what you know about sailing", thread="second")
    result = json.loads(agent.seen_results(2)[-1])["message"]
    assert "I like sailing on Sundays." in result
    assert "Tell me what you know about sailing" not in result


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("What is my name?", True),
        ("which city did we move to", True),
        ("Remind me what my cat is called", True),
        ("Do you remember my sister's name?", True),
        ("Hey, what's my name?", True),
        ("Hi! Where do I work?", True),
        ("So which city did we move to?", True),
        ("whats my budgies name", True),  # question words as typed in a hurry
        ("wat do i do on weekdays", True),
        ("wheres my allotment again", True),
        ("wat a week", False),
        ("How are you doing?", False),  # small talk
        ("Hi, how are you?", False),
        ("Hi!", False),
        ("What is the capital of Peru?", False),  # the world, not the user
        ("I moved to Lyon.", False),
        ("I adopted a dog! Any tips?", False),  # news to save, then a question
        ("Thanks, talk soon!", False),
    ],
)
def test_what_counts_as_a_question_about_the_user(text: str, expected: bool) -> None:
    assert is_memory_question(text) is expected


def test_auto_search_must_be_a_known_choice() -> None:
    with pytest.raises(ValueError, match="auto_search"):
        Context(auto_search="sometimes")  # type: ignore[arg-type]
