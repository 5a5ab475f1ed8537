"""The eviction summarizer call: token cap, local-only penalty, and the copied-reply guard."""

from __future__ import annotations

from langgraph_memgpt.llm.scripted import ScriptedChatModel
from langgraph_memgpt.llm.toolcalls import LocalToolCallingChatModel
from langgraph_memgpt.nodes.summarize_evict import copied_fraction, write_summary
from langgraph_memgpt.small_model.traits import LLAMA_CPP_SUMMARY_SAMPLING
from langgraph_memgpt.turn.tokens import TokenCounter

PREVIOUS = (
    "I met Caroline, who went to an LGBTQ support group and wants to work in counseling. "
    "Melanie painted a lake sunrise last year and says painting helps her relax."
)
TRANSCRIPT = "\n".join(
    [
        "date: 1:14 pm on 25 May, 2023",
        "Melanie: I ran a charity race for mental health last Saturday, it was rewarding.",
        "Caroline: That charity race sounds great, I am proud of you for taking part!",
        "Caroline: I am researching adoption agencies because I want to give kids a home.",
    ]
)
WRITTEN = (
    "I met Caroline, who joined an LGBTQ support group, wants to be a counselor and now "
    "researches adoption agencies. Melanie paints and ran a charity race for mental health."
)
FRESH = "Melanie ran a charity race for mental health; Caroline looks into adoption agencies."


def test_the_summary_call_is_capped_at_the_summary_budget() -> None:
    model = ScriptedChatModel.from_steps([WRITTEN])
    summary = write_summary(model, PREVIOUS, TRANSCRIPT, 819, TokenCounter())
    assert summary == WRITTEN
    assert len(model.calls) == 1
    # A hosted model gets the cap and no sampling penalty.
    assert model.call_kwargs == [{"max_tokens": 819}]
    assert "Previous summary:\nI met Caroline" in str(model.calls[0][-1].content)


def test_the_local_model_summarizes_with_a_repetition_penalty() -> None:
    inner = ScriptedChatModel.from_steps([WRITTEN])
    local = LocalToolCallingChatModel(inner=inner)
    assert write_summary(local, PREVIOUS, TRANSCRIPT, 819, TokenCounter()) == WRITTEN
    (kwargs,) = inner.call_kwargs
    assert kwargs["max_tokens"] == 819
    for key, value in LLAMA_CPP_SUMMARY_SAMPLING.items():
        assert kwargs[key] == value
    assert "response_format" not in (kwargs.get("extra_body") or {})  # plain text, no grammar


def test_a_reply_that_copies_its_prompt_is_not_kept_as_the_summary() -> None:
    copy = f"{PREVIOUS}\n\n{TRANSCRIPT}"
    assert copied_fraction(copy, PREVIOUS, TRANSCRIPT) > 0.9
    assert copied_fraction(WRITTEN, PREVIOUS, TRANSCRIPT) < 0.6
    model = ScriptedChatModel.from_steps([copy, FRESH])
    summary = write_summary(model, PREVIOUS, TRANSCRIPT, 819, TokenCounter())
    # The previous summary is kept and a summary of just the new messages appended.
    assert summary == f"{PREVIOUS}\n\n{FRESH}"
    assert len(model.calls) == 2
    second = str(model.calls[1][-1].content)
    assert second.startswith("Previous summary:\n(none yet)\n")
    assert "charity race" in second
    assert model.call_kwargs[1] == {"max_tokens": 409}


def test_an_empty_reply_gives_an_empty_summary() -> None:
    model = ScriptedChatModel.from_steps([""])
    assert write_summary(model, PREVIOUS, TRANSCRIPT, 819, TokenCounter()) == ""


def test_sentences_the_model_repeats_are_dropped() -> None:
    loop = "Melanie ran a charity race. Caroline looks into adoption. "
    model = ScriptedChatModel.from_steps([WRITTEN + " " + loop * 20])
    summary = write_summary(model, PREVIOUS, TRANSCRIPT, 819, TokenCounter())
    assert summary == f"{WRITTEN} {loop.strip()}"
