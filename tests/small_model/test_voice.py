"""Replies that speak to the user: the small model's first-person copies of user facts."""

from __future__ import annotations

import json

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.tools import tool

from langgraph_memgpt.deps import policies_for
from langgraph_memgpt.llm.scripted import ScriptedChatModel
from langgraph_memgpt.llm.toolcalls import LocalToolCallingChatModel
from langgraph_memgpt.small_model.traits import ModelTraits
from langgraph_memgpt.small_model.voice import (
    held_to_the_user,
    relatives,
    reply_voice,
    the_name_asked,
    to_the_user,
    user_names,
)
from langgraph_memgpt.turn.policies import ModelCall, call_model
from langgraph_memgpt.turn.streaming import reply_so_far

STATED = "\n".join(
    [
        "Remember that I don't eat anything with nuts, nothing at all, just so you know about it.",
        "I'm allergic to hazelnuts, so keep that in mind.",
        "I keep recommending 'Middlemarch' to everyone in my book club.",
        "At work we switched our database to CockroachDB.",
        "Hi, I'm Ada. I love the colour teal.",
    ]
)


@pytest.mark.parametrize(
    ("reply", "question", "expected"),
    [
        (
            "I'm allergic to hazelnuts. Do you have any other allergies?",
            "What am I allergic to?",
            "You're allergic to hazelnuts. Do you have any other allergies?",
        ),
        (
            "I keep recommending 'Middlemarch'.",
            "Which book do I keep recommending?",
            "You keep recommending 'Middlemarch'.",
        ),
        (
            "At work we switched our database to CockroachDB.",
            "Which database did we switch to at work?",
            "At work you switched your database to CockroachDB.",
        ),
        ("My name is Ada.", "And what is my name?", "Your name is Ada."),
        ("My favorite color is teal!", "What colour do I love?", "Your favorite color is teal!"),
        (
            "I keep recommending 'Middlemarch' and I mean it.",
            "Which book do I keep recommending?",
            "You keep recommending 'Middlemarch' and you mean it.",
        ),
    ],
)
def test_a_user_fact_said_in_the_agents_voice_is_said_to_the_user(
    reply: str, question: str, expected: str
) -> None:
    assert to_the_user(reply, question, STATED) == expected


@pytest.mark.parametrize(
    ("reply", "question"),
    [
        ("I don't know: I have nothing about that in my memory.", "What is my dog called?"),
        ("I remember you love teal.", "What colour do I love?"),
        ("You're allergic to hazelnuts.", "What am I allergic to?"),
        ("I'm not sure, sorry.", "Where do I work?"),
        ("I like that book too!", "Which book do I keep recommending?"),
        ("I don't know: I have nothing about that in my memory.", "What car do I drive?"),
    ],
)
def test_the_agent_speaking_as_itself_is_left_alone(reply: str, question: str) -> None:
    assert to_the_user(reply, question, STATED) == reply


@pytest.mark.parametrize(
    ("reply", "question", "expected"),
    [
        ("Yes, I don't eat meat.", "Do I eat meat?", "Yes, you don't eat meat."),
        (
            "No, I'm not allergic to milk.",
            "Am I allergic to milk?",
            "No, you're not allergic to milk.",
        ),
    ],
)
def test_an_answer_made_of_the_users_own_question_speaks_to_them(
    reply: str, question: str, expected: str
) -> None:
    """Asked about themselves, the user is the "I" of an answer that only repeats the question."""
    stated = "I don't eat meat, remember, so no steak recipes please."
    assert to_the_user(reply, question, stated) == expected


def test_an_answer_about_what_the_agent_knows_keeps_its_first_person() -> None:
    stated = "I don't eat meat, remember."
    for reply in ("I have nothing about meat in my memory.", "I don't know.", "I'm not sure."):
        assert to_the_user(reply, "Do I eat meat?", stated) == reply


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ("Rosa is Ines' younger sister.", "Rosa is your younger sister."),
        ("Ines's sister is Rosa.", "Your sister is Rosa."),
        ("Ines has a younger sister, Rosa.", "You have a younger sister, Rosa."),
        (
            "Thanks, Ines! Rosa is starting university.",
            "Thanks, Ines! Your younger sister Rosa is starting university.",
        ),
    ],
)
def test_the_users_own_name_standing_for_them_is_said_to_them(reply: str, expected: str) -> None:
    """The name they gave is theirs: "Ines' sister" is "your sister"; "Thanks, Ines!" stays."""
    stated = "Name is Ines.\nUser's younger sister Rosa is starting university in September."
    assert to_the_user(reply, "What's my sister's name?", stated) == expected


def test_a_fact_at_the_end_of_a_long_human_block_counts_as_stated() -> None:
    """Every line of what the user stated is read, however long the block before it."""
    long_block = "\n".join(f"Knows fact number {i} about topic{i}." for i in range(80))
    stated = (
        f'Name is Sven.\n{long_block}\nSaid: "We\'re going back to Oslo, Norway for Christmas."'
    )
    assert (
        to_the_user(
            "We're going back to Oslo, Norway for Christmas.",
            "Where are we going for Christmas?",
            stated,
        )
        == "You're going back to Oslo, Norway for Christmas."
    )


@tool
def send_message(message: str) -> str:
    """Send a message to the user."""
    return "sent"


def _small_step(model_writes: str, prompt: list[BaseMessage]) -> AIMessage:
    """The embedded model's step through the policies its traits name (as ``think`` calls it)."""
    model = LocalToolCallingChatModel(
        inner=ScriptedChatModel.from_steps([model_writes]), reply_tool="send_message"
    )
    bound = model.bind_tools([send_message])
    step = ModelCall([*prompt[1:]], ("send_message",))
    reply = call_model(
        policies_for(ModelTraits.of(model)), step, lambda call: bound.invoke(prompt, **call.options)
    )
    assert isinstance(reply, AIMessage)
    return reply


def _reply_to(user_text: str, model_says: str) -> str:
    call = json.dumps([{"name": "send_message", "arguments": {"message": model_says}}])
    prompt: list[BaseMessage] = [
        SystemMessage(
            content=[
                {"type": "text", "text": "You are a MemGPT agent."},
                {"type": "text", "text": "<human>\nAllergic to hazelnuts.\n</human>"},
            ]
        ),
        HumanMessage(f"[2026-12-01 09:30 UTC] {user_text}"),
    ]
    reply = _small_step(call, prompt)
    return next(str(c["args"]["message"]) for c in reply.tool_calls if c["name"] == "send_message")


def test_the_local_models_reply_to_a_question_about_the_user_is_repaired() -> None:
    said = _reply_to("What am I allergic to?", "I'm allergic to hazelnuts.")
    assert said == "You're allergic to hazelnuts."


def test_a_reply_copying_the_users_news_in_its_own_voice_is_said_to_the_user() -> None:
    said = _reply_to("Hi, I'm Ada. I love the colour teal.", "Hi Ada! I love the colour teal.")
    assert said == "Hi Ada! You love the colour teal."


@pytest.mark.parametrize(
    "reply", ["I'm glad you told me!", "Noted. I will keep it in mind.", "I love jazz myself."]
)
def test_the_agent_speaking_of_itself_after_news_is_left_alone(reply: str) -> None:
    assert _reply_to("I'm allergic to hazelnuts, by the way.", reply) == reply


def test_facts_read_in_a_search_result_count_as_stated() -> None:
    call = '[{"name": "send_message", "arguments": {"message": "I keep bees."}}]'
    prompt = [
        SystemMessage("You are a MemGPT agent."),
        HumanMessage("[2026-12-01 09:30 UTC] What do I keep?"),
        AIMessage(
            "", tool_calls=[{"name": "conversation_search", "args": {"query": "keep"}, "id": "c1"}]
        ),
        ToolMessage('{"status": "OK", "message": "- user: I keep bees."}', tool_call_id="c1"),
    ]
    reply = _small_step(call, prompt)
    assert reply.tool_calls[0]["args"]["message"] == "You keep bees."


def test_only_the_users_own_lines_of_a_search_result_count_as_stated() -> None:
    call = json.dumps(
        [{"name": "send_message", "arguments": {"message": "I found no results for that."}}]
    )
    result = json.dumps({"status": "OK", "message": "No results found for that question."})
    prompt = [
        SystemMessage("You are a MemGPT agent."),
        HumanMessage("[2026-12-01 09:30 UTC] What car do I drive?"),
        AIMessage(
            "", tool_calls=[{"name": "conversation_search", "args": {"query": "car"}, "id": "c1"}]
        ),
        ToolMessage(result, tool_call_id="c1"),
    ]
    reply = _small_step(call, prompt)
    assert reply.tool_calls[0]["args"]["message"] == "I found no results for that."


FACTS = "\n".join(
    [
        "I am a nurse at St Mary's and I have two cats.",
        "I was born in Lagos.",
        "Those scissors never work for me because I'm left-handed.",
        "I keep recommending 'My Brilliant Friend' to everyone.",
        "My daughter Noor turns seven in March.",
        "My husband Karl and I bought a flat in Ghent.",
        "We adopted a dog called Socks!",
    ]
)
HUMAN_NOTES = "Brother Otto is a pilot.\nUser's partner Sam is a paramedic.\nLoves orange."


@pytest.mark.parametrize(
    ("reply", "question", "expected"),
    [
        ("I am a nurse at St Mary's.", "What is my job?", "You are a nurse at St Mary's."),
        ("I have two cats.", "How many cats do I have?", "You have two cats."),
        ("I was born in Lagos.", "Where was I born?", "You were born in Lagos."),
        (
            "Those scissors never work for me.",
            "Which hand do I write with?",
            "Those scissors never work for you.",
        ),
        (
            "I keep recommending 'My Brilliant Friend'.",
            "Which book do I keep recommending?",
            "You keep recommending 'My Brilliant Friend'.",
        ),
        (
            "Karl and I bought a flat in Ghent. Any plans to decorate?",
            "Where did we buy a flat?",
            "Karl and you bought a flat in Ghent. Any plans to decorate?",
        ),
    ],
)
def test_each_first_person_form_is_said_to_the_user(
    reply: str, question: str, expected: str
) -> None:
    assert to_the_user(reply, question, FACTS) == expected


@pytest.mark.parametrize(
    ("reply", "question", "expected"),
    [
        (
            "Noor turns seven in March.",
            "When does my daughter turn seven?",
            "Your daughter Noor turns seven in March.",
        ),
        ("Otto is a pilot.", "What does my brother do?", "Your brother Otto is a pilot."),
        (
            "The flat is in Ghent, where Karl lives too.",
            "Where did we buy a flat?",
            "The flat is in Ghent, where your husband Karl lives too.",
        ),
        ("Socks is a greyhound.", "What is my dog called?", "Your dog Socks is a greyhound."),
    ],
)
def test_a_relative_named_without_the_relation_gets_it_back(
    reply: str, question: str, expected: str
) -> None:
    assert to_the_user(reply, question, f"{FACTS}\n{HUMAN_NOTES}") == expected


@pytest.mark.parametrize(
    ("reply", "question", "expected"),
    [
        (
            "User's partner Sam is a paramedic.",
            "What does my partner do?",
            "Your partner Sam is a paramedic.",
        ),
        ("The user loves orange.", "What colour do I love?", "You love orange."),
        ("User is a nurse at St Mary's.", "What is my job?", "You are a nurse at St Mary's."),
    ],
)
def test_the_third_person_of_the_notes_is_said_to_the_user(
    reply: str, question: str, expected: str
) -> None:
    assert to_the_user(reply, question, f"{FACTS}\n{HUMAN_NOTES}") == expected


@pytest.mark.parametrize(
    ("reply", "question"),
    [
        ("I can help you with that.", "What is my job?"),
        ("I can help with that.", "What is my job?"),
        ("I'm not sure I have that in my notes.", "Where was I born?"),
        ("Do I know your cats' names? Not yet!", "How many cats do I have?"),
        ('Your note says "I have two cats".', "How many cats do I have?"),
        ("Noor and your daughter's party are in March.", "When does my daughter turn seven?"),
        ("Aiko is a lovely name.", "When does my daughter turn seven?"),
        ("Noor is your daughter.", "When does my daughter turn seven?"),
    ],
)
def test_the_agents_own_words_questions_and_quotes_are_left_alone(
    reply: str, question: str
) -> None:
    assert to_the_user(reply, question, f"{FACTS}\n{HUMAN_NOTES}") == reply


def test_a_quote_inside_a_repaired_sentence_keeps_its_words() -> None:
    said = to_the_user('I was born in Lagos, "my favourite city".', "Where was I born?", FACTS)
    assert said == 'You were born in Lagos, "my favourite city".'


def test_news_replies_get_no_relation_added() -> None:
    """Replying to news the agent names people as it likes: only first person is repaired."""
    news = "My daughter Noor turns seven in March."
    said = to_the_user("Noor turns seven, how lovely!", "", news, echo=True)
    assert said == "Noor turns seven, how lovely!"


@pytest.mark.parametrize(
    ("reply", "question", "expected"),
    [
        (
            "I'm allergic to hazelnuts, do you have any other allergies?",
            "What am I allergic to?",
            "You're allergic to hazelnuts, do you have any other allergies?",
        ),
        (
            "Sure, I can tell you: I keep recommending 'Middlemarch'.",
            "Which book do I keep recommending?",
            "Sure, I can tell you: you keep recommending 'Middlemarch'.",
        ),
        (
            "I remember you love teal, and I like it too.",
            "What colour do I love?",
            "I remember you love teal, and I like it too.",
        ),
    ],
)
def test_a_sentence_that_also_speaks_to_the_user_is_judged_clause_by_clause(
    reply: str, question: str, expected: str
) -> None:
    assert to_the_user(reply, question, STATED) == expected


NOTES = "Name is Ada.\nWorks as a welder at the shipyard.\nIs allergic to hazelnuts.\nThanks, bye."


@pytest.mark.parametrize(
    ("reply", "question", "expected"),
    [
        ("Name is Ada.", "What is my name?", "Your name is Ada."),
        (
            "Works as a welder at the shipyard.",
            "What do I do for work?",
            "You work as a welder at the shipyard.",
        ),
        ("Is allergic to hazelnuts.", "What am I allergic to?", "You are allergic to hazelnuts."),
        ("Thanks, hazelnuts it is.", "What am I allergic to?", "Thanks, hazelnuts it is."),
        ("Is it hazelnuts?", "What am I allergic to?", "Is it hazelnuts?"),
    ],
)
def test_a_note_copied_without_its_subject_is_said_to_the_user(
    reply: str, question: str, expected: str
) -> None:
    assert to_the_user(reply, question, NOTES) == expected


def _answered(human: str, question: str, model_says: str) -> str:
    """The reply the small model's step sends, the model having said ``model_says`` to
    ``question`` with ``human`` holding ``human``."""
    call = json.dumps([{"name": "send_message", "arguments": {"message": model_says}}])
    prompt: list[BaseMessage] = [
        SystemMessage(f"<human>\n{human}\n</human>"),
        HumanMessage(f"[2026-12-01 09:30 UTC] {question}"),
    ]
    return str(_small_step(call, prompt).tool_calls[0]["args"]["message"])


def _streamed_small_step(
    model_writes: str, piece: int, said: str, system: str | None = None
) -> tuple[AIMessage, list[str]]:
    """The step streamed through the small model's policies: the merged message, and the
    reply a UI shows after each chunk. ``system``: a system message before ``said``."""
    inner = ScriptedChatModel.from_steps([model_writes])
    inner.stream_piece = piece
    model = LocalToolCallingChatModel(
        inner=inner, reply_tool="send_message", companions=("core_memory_append",)
    )
    bound = model.bind_tools([send_message])
    prompt: list[BaseMessage] = [HumanMessage(said)]
    if system is not None:
        prompt.insert(0, SystemMessage(system))
    step = ModelCall(prompt[-1:], ("send_message",))
    chunks = call_model(
        policies_for(ModelTraits.of(model)),
        step,
        lambda call: list(bound.stream(prompt, **call.options)),
    )
    merged = chunks[0]
    seen: list[str] = []
    for chunk in chunks[1:]:
        merged = merged + chunk
        seen.append(reply_so_far(merged) or "")
    return merged, seen


def test_a_streamed_reply_is_said_to_the_user_as_it_streams() -> None:
    """The repaired reply streams; a UI never shows the first-person one it replaces."""
    reply = "Hi Ada! I love the colour teal. It is such a calming colour."
    calls = [{"name": "send_message", "arguments": {"message": reply}}]
    merged, seen = _streamed_small_step(
        json.dumps(calls), 4, "Hi, I'm Ada. I love the colour teal."
    )
    final = "Hi Ada! You love the colour teal. It is such a calming colour."
    assert merged.tool_calls[-1]["args"]["message"] == final
    growing = [s for s in seen if s]
    assert all(final.startswith(s) for s in growing), "nothing shown is taken back"
    assert len(set(growing)) >= 5 and growing[-1] == final
    assert "Hi Ada! " in growing, "a sentence without the user's words goes out at once"


def test_a_reply_that_is_not_json_streams_without_failing_the_step() -> None:
    """An invalid escape inside the reply: the stream goes on, the step reads it as text."""
    raw = '[{"name": "send_message", "arguments": {"message": "I love \\q teal."}}]'
    merged, _ = _streamed_small_step(raw, 5, "Hi, I'm Ada. I love teal.")
    assert not merged.tool_calls  # the parser leaves what it cannot read as text


ASKED_STATED = "\n".join(
    [
        "Loud music gives me headaches.",
        "The bins were not collected this week.",
        "I teach maths at the grammar school.",
        "My son is Tom and my daughter is Ann.",
    ]
)


@pytest.mark.parametrize(
    ("question", "reply", "expected"),
    [
        (  # what else it read, recited after the answer, is left out; a pleasantry stays
            "What gives me headaches?",
            "Loud music gives you headaches. The bins were not collected this week. "
            "You teach maths at the grammar school. Anything else I can do?",
            "Loud music gives you headaches. Anything else I can do?",
        ),
        (  # the answer after an opening that states nothing is the answer
            "What's my job?",
            "Sure! You teach maths at the grammar school.",
            "Sure! You teach maths at the grammar school.",
        ),
        (  # a question about their people keeps each person named
            "What are my kids called?",
            "Your son is Tom. Your daughter is Ann.",
            "Your son is Tom. Your daughter is Ann.",
        ),
        (  # a sentence on the question's words stays wherever it comes
            "Where do I teach maths?",
            "At the grammar school. You teach maths there, to older pupils.",
            "At the grammar school. You teach maths there, to older pupils.",
        ),
    ],
)
def test_an_answer_leaves_out_the_memories_it_recites_unasked(
    question: str, reply: str, expected: str
) -> None:
    from langgraph_memgpt.small_model.voice import answer_only

    assert answer_only(reply, question, ASKED_STATED) == expected


def test_a_streamed_answer_never_shows_a_recited_memory() -> None:
    """The reply streams sentence by sentence: a memory recited unasked is never shown."""
    reply = "You are allergic to hazelnuts. You keep recommending 'Middlemarch'. Take care!"
    calls = [{"name": "send_message", "arguments": {"message": reply}}]
    merged, seen = _streamed_small_step(
        json.dumps(calls),
        4,
        "[2026-12-01 09:30 UTC] What am I allergic to?",
        system="<human>\nAllergic to hazelnuts.\nKeeps recommending 'Middlemarch'.\n</human>",
    )
    final = "You are allergic to hazelnuts. Take care!"
    assert merged.tool_calls[-1]["args"]["message"] == final
    assert all(final.startswith(s) for s in seen if s), "nothing shown is taken back"
    assert not any("Middlemarch" in s for s in seen)


def test_the_users_like_i_said_copied_into_an_answer_is_left_out() -> None:
    from langgraph_memgpt.small_model.voice import cues_to_the_user

    stated = "I fix boats for a living, like I told you.\nAs I said, I live on a barge."
    assert (
        cues_to_the_user("You fix boats for a living, like I told you.", stated)
        == "You fix boats for a living."
    )
    assert cues_to_the_user("As I said, you live on a barge.", stated) == ("You live on a barge.")
    assert cues_to_the_user("Sure. As I said, you live on a barge.", stated) == (
        "Sure. You live on a barge."
    )
    # the agent's own "as I told you", with no such words of the user's, stays
    assert cues_to_the_user("As I mentioned, I can't browse.", stated) == (
        "As I mentioned, I can't browse."
    )


def test_an_answer_copying_the_users_cue_from_a_search_result_is_repaired() -> None:
    call = json.dumps(
        [
            {
                "name": "send_message",
                "arguments": {"message": "You fix boats for a living, like I told you."},
            }
        ]
    )
    prompt = [
        SystemMessage("You are a MemGPT agent."),
        HumanMessage("[2026-12-01 09:30 UTC] What do I do for a living?"),
        AIMessage(
            "", tool_calls=[{"name": "conversation_search", "args": {"query": "job"}, "id": "c1"}]
        ),
        ToolMessage(
            '{"status": "OK", "message": "- user: I fix boats for a living, like I told you."}',
            tool_call_id="c1",
        ),
    ]
    reply = _small_step(call, prompt)
    assert reply.tool_calls[0]["args"]["message"] == "You fix boats for a living."


@pytest.mark.parametrize(
    ("user_text", "model_says", "expected"),
    [
        ("Hello! Amara speaking.", "Hello! Amara speaking.", "Hello! Nice to meet you, Amara!"),
        (
            "Hi there, Chen here.",
            "Chen here. How can I help?",
            "Nice to meet you, Chen! How can I help?",
        ),
        (
            "Hi, I'm Ada. I love the colour teal.",
            "Hi Ada! Nice to meet you.",
            "Hi Ada! Nice to meet you.",
        ),
    ],
)
def test_the_users_introduction_copied_as_the_agents_greets_them(
    user_text: str, model_says: str, expected: str
) -> None:
    assert _reply_to(user_text, model_says) == expected


def test_news_told_without_its_i_copied_as_the_agents_is_said_to_the_user() -> None:
    said = _reply_to(
        "Missed the last ferry and had to take a taxi.",
        "Oh no, I missed the last ferry and had to take a taxi.",
    )
    assert said == "Oh no, you missed the last ferry and had to take a taxi."


@pytest.mark.parametrize(
    ("question", "model_says", "expected"),
    [
        (
            "What's my husband's name?",
            "Your husband's name is Ada.",
            "I don't know: I have nothing about that in my memory.",
        ),
        (
            "What is my daughter called?",
            "Your daughter is called Ada. Anything else?",
            "I don't know: I have nothing about that in my memory. Anything else?",
        ),
        ("What's my name?", "Your name is Ada.", "Your name is Ada."),
    ],
)
def test_the_users_own_name_is_never_given_for_one_of_their_people(
    question: str, model_says: str, expected: str
) -> None:
    """With no husband in memory the model names the only person it knows: the user."""
    assert _answered("Name is Ada.\nAllergic to hazelnuts.", question, model_says) == expected


@pytest.mark.parametrize(
    ("question", "model_says", "expected"),
    [
        (
            "What's my daughter's name?",
            "Ngozi is your wife.",
            "I don't know: I have nothing about that in my memory.",
        ),
        (
            "What is my dad called?",
            "Your dad is called Ngozi. Anything else?",
            "I don't know: I have nothing about that in my memory. Anything else?",
        ),
        # someone known can be the one asked about: the model's answer stands
        ("What's my partner's name?", "Your partner is Ngozi.", "Your partner is Ngozi."),
        ("What's my wife called?", "Your wife is called Ngozi.", "Your wife is called Ngozi."),
    ],
)
def test_one_of_their_people_is_never_given_for_another(
    question: str, model_says: str, expected: str
) -> None:
    """Asked about a daughter it was never told of, the model names the one person it
    knows: the wife. A wife is no daughter and no dad; a partner can be a wife."""
    assert _answered("Name is Ada.\nWife Ngozi runs a bakery.", question, model_says) == expected


def test_a_known_relative_of_the_asked_kind_keeps_the_answer_that_names_others_too() -> None:
    said = _answered(
        "Wife Ngozi runs a bakery.\nDaughter Yuki is five.",
        "What's my daughter's name?",
        "Your daughter is Yuki; your wife is Ngozi.",
    )
    assert said.startswith("Your daughter is Yuki")


@pytest.mark.parametrize(
    ("question", "model_says", "expected"),
    [
        ("What's my name?", "Leilani's the name.", "As you said, Leilani's the name."),
        ("What can't I have?", "Caffeine is not allowed.", "As you said, caffeine is not allowed."),
        (  # an opening that states nothing goes first, as it is
            "What do I do for work?",
            "Great question! A flower shop in Hilo, run by yourself.",
            "Great question! A flower shop in Hilo, run by yourself.",
        ),
        ("What's my twin called?", "Keoni is your twin brother.", "Keoni is your twin brother."),
    ],
)
def test_an_answer_in_no_person_is_said_to_the_user(
    question: str, model_says: str, expected: str
) -> None:
    """A 1.5B model copies how the user put a fact ("Leilani's the name."): said back to
    them, it says whose fact it is."""
    human = "Name is Leilani.\nCan't have caffeine, doctor's orders.\nTwin brother Keoni."
    assert _answered(f"{human}\nRuns a flower shop in Hilo.", question, model_says) == expected


def test_a_streamed_answer_in_no_person_is_said_to_the_user_as_it_streams() -> None:
    reply = "Caffeine is not allowed. Anything else?"
    calls = [{"name": "send_message", "arguments": {"message": reply}}]
    merged, seen = _streamed_small_step(
        json.dumps(calls),
        4,
        "[2026-12-01 09:30 UTC] What can't I have?",
        system="<human>\nCan't have caffeine, doctor's orders.\n</human>",
    )
    final = "As you said, caffeine is not allowed. Anything else?"
    assert merged.tool_calls[-1]["args"]["message"] == final
    assert all(final.startswith(s) for s in seen if s), "nothing shown is taken back"


@pytest.mark.parametrize(
    ("user_text", "model_says", "expected"),
    [
        ("I'm pescatarian.", "I'm a pescatarian.", "You're a pescatarian."),
        (
            "Bit flustered today. I'm a welder, by the way.",
            "Yes, I am a welder.",
            "Yes, you are a welder.",
        ),
        ("I'm a nurse.", "I'm glad you told me!", "I'm glad you told me!"),
    ],
)
def test_what_the_user_is_in_one_word_copied_as_the_agents_is_said_to_them(
    user_text: str, model_says: str, expected: str
) -> None:
    """Told "I'm pescatarian", the model says "I'm a pescatarian.": the user's fact, in its
    one word, said as the agent's own."""
    assert _reply_to(user_text, model_says) == expected


def test_a_name_the_user_goes_by_is_never_given_for_one_of_their_people() -> None:
    """ "Is Thandiwe, but friends call user Thandi.": both are the user's names."""
    human = "Is Thandiwe, but friends call user Thandi.\nAllergic to cats."
    for name in ("Thandiwe", "Thandi"):
        said = _answered(human, "What's my niece's name?", f"Your niece's name is {name}.")
        assert said == "I don't know: I have nothing about that in my memory."


def test_the_users_we_copied_beside_the_agents_your_is_said_to_them() -> None:
    """ "Your mum Lupita is moving in with us": the "us" is the user's household."""
    human = "Mum Lupita is moving in with us next month."
    said = _answered(
        human, "What's my mum's name?", "Your mum Lupita is moving in with us next month."
    )
    assert said == "Your mum Lupita is moving in with you next month."
    kept = _answered(human, "What's my mum's name?", "I'm glad your mum Lupita is moving in.")
    assert kept == "I'm glad your mum Lupita is moving in."


@pytest.mark.parametrize(
    ("human", "question", "model_says", "expected"),
    [
        (  # it asks back though the name is held
            "Name is Thandi.\nAnaemic, takes iron tablets.",
            "What's my name?",
            "Hello! What's your name?",
            "Hello! Your name is Thandi.",
        ),
        (  # it says it does not know though the relative is held
            "User's older sister Nomsa lives two streets away.",
            "What's my sister called?",
            "I don't know: I have nothing about that in my memory.",
            "Your older sister is Nomsa.",
        ),
        (  # a relation read from its own word, though no kin table has it
            "Ranger at a national park.\nMy nana Huia lives with us now.",
            "What's my nana's name?",
            "Your nana's name is your nana. Anything else?",
            "Your nana is Huia.",
        ),
        (  # it names one of the user's other people
            "Name is Aroha.\nWife Minji is expecting.\nSon Radu is six.",
            "What is my son called?",
            "Your son is called Minji.",
            "Your son is Radu.",
        ),
        (  # right already: left as it is
            "User's older sister Nomsa lives two streets away.",
            "What's my sister's name?",
            "Nomsa is your sister's name.",
            "Nomsa is your sister's name.",
        ),
        (  # a relative's name of two words
            "Has tinnitus for years.\nGranddaughter Wee Eilidh lost her first tooth.",
            "What's my granddaughter's name?",
            "I don't know: I have nothing about that in my memory.",
            "Your granddaughter is Wee Eilidh.",
        ),
        (  # the user's name asked as what they are called
            "Name is Fergus.\nHas tinnitus for years.",
            "Remind me what I'm called?",
            "I'm called [Your Name].",
            "Your name is Fergus.",
        ),
        (  # an animal of theirs named by its kind, after "our": its line answers
            "Name is Ana.\nOur golden retriever Bruno is fourteen.",
            "What's our retriever called?",
            "I don't know: I have nothing about that in my memory.",
            "Your golden retriever Bruno is fourteen.",
        ),
        (  # any name the user gave themselves answers
            "Name is Thandi.\nIs Thandiwe, but friends call user Thandi.",
            "What's my name?",
            "Your name is Thandiwe.",
            "Your name is Thandiwe.",
        ),
        (  # their name asked as what people call them, a line of their place held
            "Name is Efe.\nLives in Benin City, near the ring road.",
            "What do people in my street call me?",
            "I don't know: I have nothing about that in my memory.",
            "Your name is Efe.",
        ),
        (  # their name asked as what the agent should call them
            "Name is Mei Ling.\nTeaches swimming to toddlers.",
            "What should you call me?",
            "I'm not sure.",
            "Your name is Mei Ling.",
        ),
        (  # their full name, stated inside a longer line
            "Friends shout 'Bart' across the yard, but the full name is Bartholomew.",
            "Do you know what my name is?",
            "I don't know: I have nothing about that in my memory.",
            "Your name is Bartholomew.",
        ),
    ],
)
def test_a_name_asked_for_is_answered_with_the_one_memory_ties_to_them(
    human: str, question: str, model_says: str, expected: str
) -> None:
    """When what the user stated ties exactly one name to the person asked about, the
    answer gives that name: a 1.5B model asks back, says it does not know, or names
    someone else though the line is in front of it."""
    assert _answered(human, question, model_says) == expected


@pytest.mark.parametrize(
    ("human", "question", "model_says", "expected"),
    [
        (  # a name the user never stated
            "Repairs pianos for a living.",
            "What's my name?",
            "Your name is Otto.",
            "I don't know: I have nothing about that in my memory.",
        ),
        (
            "Repairs pianos for a living.\nMy niece got a gold star.",
            "What's my niece's name?",
            "Your niece's name is Noma.",
            "I don't know: I have nothing about that in my memory.",
        ),
        (  # it says a name and gives none
            "Repairs pianos for a living.\nMy stepdad finally learned video calls.",
            "What's my stepdad called?",
            "Your stepdad's name is your stepdad.",
            "I don't know: I have nothing about that in my memory.",
        ),
        (  # the relation taken for a name
            "Repairs pianos for a living.\nMy auntie sent a parcel.",
            "What's my auntie's name?",
            "Your auntie's name is Auntie.",
            "I don't know: I have nothing about that in my memory.",
        ),
        (  # one of their people's names is not the user's
            "Zsuzsa, my girlfriend, got us opera tickets.",
            "Do you remember what I'm called?",
            "You're called Zsuzsa.",
            "I don't know: I have nothing about that in my memory.",
        ),
        (  # asked their name, an answer with no name in it
            "Husband Olivier set off the smoke alarm.",
            "What's my first name?",
            "Hello! Bonne nuit!",
            "Hello! I don't know: I have nothing about that in my memory.",
        ),
        (  # two sisters: the model's choice stands
            "Sister Anna lives in Leeds.\nSister Priya is a nurse.",
            "What's my sister's name?",
            "Your sister is Priya.",
            "Your sister is Priya.",
        ),
        (  # not a question for a name
            "Sister Anna lives in Leeds.",
            "Where does my sister live?",
            "I don't know: I have nothing about that in my memory.",
            "I don't know: I have nothing about that in my memory.",
        ),
    ],
)
def test_a_name_no_memory_ties_to_the_one_asked_about_is_not_given(
    human: str, question: str, model_says: str, expected: str
) -> None:
    """With no name held for them, a name the user never stated is made up: "I don't
    know" says what memory holds. Where memory holds several, or the question asks no
    name, the answer is the model's."""
    assert _answered(human, question, model_says) == expected


def test_a_streamed_name_answer_never_takes_back_what_it_showed() -> None:
    """The repair reads each sentence on the ones before it only: what a reply's first
    sentences are repaired to stays the start of what the whole reply is repaired to."""
    stated = "Name is Thandi.\nUser's older sister Nomsa lives two streets away."
    question = "What's my sister called?"
    reply = "Hi! I'm not sure. Maybe it is Zola? Ask me again."

    def repaired(text: str) -> str:
        return the_name_asked(text, question, stated, user_names(stated), relatives(stated))

    whole = repaired(reply)
    assert whole == "Hi! Your older sister is Nomsa."
    for end in [i + 1 for i, c in enumerate(reply) if c in ".!?"]:
        assert whole.startswith(repaired(reply[:end]))


WORK_HELD = (
    "Name is Ada.\nFixes lifts in office buildings.\nSundays mean fishing on the river for user."
)


@pytest.mark.parametrize(
    "model_says",
    [
        "I don't know: I have nothing about that in my memory.",
        "I'm sorry, I don't know what your line of work is. Could you tell me?",
        "You go fishing on the river on Sundays.",  # another held line
    ],
)
def test_asked_for_their_work_the_answer_is_the_held_line_of_work(model_says: str) -> None:
    """ "What do I do for a living?" shares no word with "Fixes lifts in office buildings.":
    a 1.5B model says it does not know, or answers with another line. The line whose kind
    is work (`kinds`) answers, said to the user, and what followed the wrong answer goes."""
    said = _answered(WORK_HELD, "What do I do for a living?", model_says)
    assert said == "You fix lifts in office buildings."


PET_HELD = "Name is Ada.\nLurcher Biscuit steals socks off the radiator.\nSwims every morning."


@pytest.mark.parametrize(
    "question", ["What's my dog called?", "What is my dog's name?", "What's the name of my dog?"]
)
def test_asked_for_their_pets_name_the_answer_is_the_held_pet_line(question: str) -> None:
    """The pet line answers a question for a pet's name, though "my dog" is one of theirs
    and no word but "dog" is shared with it."""
    said = _answered(PET_HELD, question, "I don't know: I have nothing about that in my memory.")
    assert "Biscuit" in said


def test_asked_for_a_pets_name_never_told_the_line_of_another_animal_is_no_answer() -> None:
    dont_know = "I don't know: I have nothing about that in my memory."
    assert _answered(PET_HELD, "What's my cat called?", dont_know) == dont_know


def test_asked_what_the_agent_should_know_the_answer_is_the_held_line_of_health() -> None:
    """ "Is there a health thing you should know about?" asks about the user without "me"."""
    human = "Name is Ada.\nAllergic to penicillin, found out the hard way.\nSwims every morning."
    said = _answered(
        human,
        "Is there a health thing you should know about?",
        "Yes, it's important to get regular exercise and eat a balanced diet.",
    )
    assert "penicillin" in said


@pytest.mark.parametrize(
    ("human", "question", "model_says"),
    [
        (WORK_HELD, "What do I do for a living?", "You fix lifts, mostly in offices."),
        (WORK_HELD, "What's my name?", "Your name is Ada."),  # a question for no kind
        (  # nothing of the kind held: the model's "I don't know" is the truth
            "Name is Ada.\nSundays mean fishing on the river for user.",
            "What do I do for a living?",
            "I don't know: I have nothing about that in my memory.",
        ),
    ],
)
def test_an_answer_from_the_line_asked_for_or_to_no_kind_stands(
    human: str, question: str, model_says: str
) -> None:
    assert _answered(human, question, model_says) == model_says


@pytest.mark.parametrize(
    ("line", "said"),
    [
        ("Fixes lifts in office buildings.", "You fix lifts in office buildings."),
        ("Is a tailor, alterations mostly.", "You are a tailor, alterations mostly."),
        ("Allergic to latex.", "You are allergic to latex."),
        ("Born in Kochi.", "You were born in Kochi."),
        ("Grew up in Gdansk.", "You grew up in Gdansk."),
        ("User's dog Bruno is deaf.", "Your dog Bruno is deaf."),
        ("Work is nights.", "Your work is nights."),
        ('Said: "I live in York now."', "You live in York now."),
        ("Eggs make user's throat swell.", "Eggs make your throat swell."),
        ("The tinnitus never stops.", "From what you said: the tinnitus never stops."),
        ("Can't have caffeine, doctor's orders.", "You can't have caffeine, doctor's orders."),
        ("Never eats pork.", "You never eat pork."),
        ("Only gold against user's skin.", "Only gold against your skin."),
    ],
)
def test_a_held_line_given_as_the_answer_is_said_to_the_user(line: str, said: str) -> None:
    assert held_to_the_user(line) == said


def test_a_streamed_kind_answer_never_takes_back_what_it_showed() -> None:
    """Sentence by sentence: what the first sentences are repaired to stays the start of
    what the whole reply is repaired to."""
    prompt: list[BaseMessage] = [
        SystemMessage(f"<human>\n{WORK_HELD}\n</human>"),
        HumanMessage("[2026-12-01 09:30 UTC] What do I do for a living?"),
    ]
    voice = reply_voice(prompt)
    assert voice is not None
    reply = "Hello! I'm not sure. You might be a teacher? Tell me more."
    whole = voice.repair(reply)
    assert whole == "Hello! You fix lifts in office buildings."
    for end in [i + 1 for i, c in enumerate(reply) if c in ".!?"]:
        assert whole.startswith(voice.repair(reply[:end]))


@pytest.mark.parametrize(
    ("question", "model_says"),
    [
        (
            "What's my job?",
            "I'm a software assistant designed to assist with information and tasks.",
        ),
        ("Where was I born?", "I was born in a small town in the countryside."),
    ],
)
def test_an_answer_with_the_agents_own_story_says_it_does_not_know(
    question: str, model_says: str
) -> None:
    """Asked about the user with nothing held, a 1.5B model answers about itself or makes
    a story up in the first person: no answer about the user, so "I don't know"."""
    said = _answered("Name is Ada.\nAllergic to latex.", question, model_says)
    assert said == "I don't know: I have nothing about that in my memory."


@pytest.mark.parametrize(
    ("question", "model_says"),
    [
        ("What am I allergic to?", "I'm allergic to latex."),  # the user's fact, copied
        ("What's my job?", "I'm sorry, I don't have that in my notes."),  # what it knows
        ("What's my name?", "Your name is Ada. I hope that helps!"),  # after the answer
    ],
)
def test_a_first_person_answer_that_says_the_users_fact_or_the_agents_knowledge_stands(
    question: str, model_says: str
) -> None:
    said = _answered("Name is Ada.\nAllergic to latex.", question, model_says)
    assert "I don't know: I have nothing" not in said


@pytest.mark.parametrize(
    "held_pet",
    ["Lurcher Biscuit steals socks off the radiator.", "Ferrets Pip and Gherkin live in the hall."],
)
def test_asked_for_my_pets_name_with_no_animal_named_any_kept_animals_line_answers(
    held_pet: str,
) -> None:
    """ "What's my pet called?" names no animal: the line about whichever animal they keep
    answers it, so long as it is a pet line."""
    human = f"Name is Ada.\n{held_pet}\nSwims every morning."
    said = _answered(
        human, "What's my pet called?", "I don't know: I have nothing about that in my memory."
    )
    assert held_pet.split()[1] in said


@pytest.mark.parametrize(
    ("human", "question", "model_says", "held_and_guessed"),
    [
        (
            "Name is Ada.\nAllergic to sesame since childhood, carries an EpiPen.",
            "What am I allergic to?",
            "You are allergic to peanuts.",
            ("sesame", "peanuts"),
        ),
        (
            'Name is Ada.\nSaid: "we fly to Lagos for my cousin\'s wedding on the 4th of March"',
            "Where am I going in March?",
            "You are going to Paris in March.",
            ("Lagos", "Paris"),
        ),
    ],
)
def test_an_answer_sharing_only_the_questions_words_with_the_held_line_is_replaced(
    human: str, question: str, model_says: str, held_and_guessed: tuple[str, str]
) -> None:
    """ "allergic" and "March" are the question's words: an answer that repeats them around
    a fact of its own has not read the line, which answers instead."""
    said = _answered(human, question, model_says)
    held, guessed = held_and_guessed
    assert held in said
    assert guessed not in said


def test_an_answer_saying_the_held_fact_in_the_questions_words_stands() -> None:
    human = "Name is Ada.\nAllergic to sesame since childhood, carries an EpiPen."
    assert _answered(human, "What am I allergic to?", "You're allergic to sesame.") == (
        "You're allergic to sesame."
    )


STORY_HELD = (
    "Name is Ada.\n"
    "Since half six user has been on the roof of the library on Mill Lane relaying slates "
    "in the wind, the apprentice dropped a whole pallet, and user's sister rang twice about "
    "the christening.\n"
    "Swims every morning."
)


@pytest.mark.parametrize("question", ["What do I do at work?", "What do I do all day at work?"])
def test_asked_for_their_work_a_long_story_of_their_day_answers(question: str) -> None:
    """Work told only through a day's story is the line the kind model finds most likely
    work, though not sure of it (`kinds.likely_of`); a question no rule reads as asking
    for work is read by the question model."""
    said = _answered(STORY_HELD, question, "I don't know: I have nothing about that in my memory.")
    assert "slates" in said


def test_a_line_most_likely_of_another_kind_does_not_answer() -> None:
    """Nothing held is most likely of the kind asked: the model's "I don't know" stands."""
    dont_know = "I don't know: I have nothing about that in my memory."
    human = "Name is Ada.\nSwims every morning.\nDaughter Ines lives in Porto with two kids."
    assert _answered(human, "What do I do at work?", dont_know) == dont_know
