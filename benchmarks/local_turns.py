"""Turns on a real chat model (the embedded one by default): latency, calls, cache, answers.

DMR-style scenarios of our own (``turn_scenarios.json``): each agent first lives through
earlier sessions, each in its own thread, where facts are stated among small talk; then
every question is asked in a new thread of the same agent, so its answer must come from
core memory or a search. Each turn goes through the real graph (``build_graph``, an
``InMemorySaver``, real SQLite and FAISS, MiniLM embeddings) and is measured:

* kind: ``search`` (any search call), ``edit`` (a memory edit, no search) or ``plain``;
* wall-clock latency of the whole turn, and model calls (AI messages) in it;
* prompt tokens the model evaluated vs took from its prefix cache, from the usage each
  response reports (llama.cpp: ``usage.prompt_tokens_details.cached_tokens``);
* for questions: whether the reply holds an expected string (or, for a fact that was never
  stated, says it does not know), and any search called with filters (dates, roles, tags).

At the end of each agent: what landed in which core block, each edit classified by the
scenario's fact keywords (a fact, a user fact in ``persona``, or chatter).

What a person reading the transcript would judge (``judge_*``; scenarios whose facts are
objects, as in ``turn_scenarios_broad.json``): answers that hold the fact *and* say it to the
user ("Your name is Ada.", not "My name is Ada."); capture, the stated facts found in the
``human`` block right after the thread that stated them; the lines of ``human`` that are
small talk (they match no stated fact); facts saved garbled (a word the fact needs is
missing) and corrected facts whose old value stayed. ``--half tune|held-out`` runs one half
of such a set: rules are tuned on one half and reported on the other.

Baseline in the same run: ``legacy``, the loop as it was before (``prompt_layout="legacy"``:
core memory inside the system text and the tools after it, the system prompt re-rendered
mid-turn; no search made for the model), everything else equal. ``cached-no-auto-search``
isolates what ``Context.auto_search`` does. Configurations run one after the other, never
at once: two model jobs on two cores would time each other.

Run: ``.venv/bin/python benchmarks/local_turns.py [--model local] [--layouts cached
cached-no-auto-search legacy]
[--agents mira tomas] [--json out.json]``
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
import time
import uuid
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.memory import InMemorySaver

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import percentile, print_header  # noqa: E402

from langgraph_memgpt import Context, build_graph  # noqa: E402
from langgraph_memgpt.small_model.auto_search import AUTO_FLAG  # noqa: E402
from langgraph_memgpt.stores.sqlite import open_memory  # noqa: E402
from langgraph_memgpt.tools.run import MEMORY_TOOLS  # noqa: E402
from langgraph_memgpt.turn.main_context import REPLY_FLAG  # noqa: E402

SCENARIOS = Path(__file__).with_name("turn_scenarios.json")
FILTER_ARGS = ("start_date", "end_date", "roles", "tags")
VARIANTS: dict[str, dict[str, Any]] = {
    "cached": {},
    "cached-no-auto-search": {"auto_search": "off"},
    "legacy": {"prompt_layout": "legacy", "auto_search": "off"},
}
"""What each measured configuration changes from the defaults. ``legacy`` is the loop as it
was before this benchmark: the old prompt layout, and no search made for the model."""
DONT_KNOW = re.compile(
    r"don'?t (know|have|recall|remember)|do not (know|have|recall)|not sure|no (information|record|"
    r"mention)|haven'?t (told|mentioned|said)|didn'?t (tell|mention|say)|not (mentioned|told)|"
    r"couldn'?t find|could not find|can'?t find|cannot find|unknown|did not know|didn'?t know|"
    r"have nothing (about|on)",
    re.IGNORECASE,
)


@dataclass
class Turn:
    """One measured user turn."""

    layout: str
    agent: str
    thread: str
    text: str
    kind: str
    seconds: float
    model_calls: int
    prompt_tokens: int
    cached_tokens: int
    first_of_thread: bool
    reply: str
    calls: list[dict[str, Any]] = field(default_factory=list)
    question: bool = False
    correct: bool | None = None
    unknown: bool = False
    addressed: bool | None = None
    volunteered: list[str] = field(default_factory=list)


def _kind(calls: Sequence[dict[str, Any]]) -> str:
    tools = [MEMORY_TOOLS.get(c["name"]) for c in calls]
    if any(t is not None and t.reads for t in tools):
        return "search"
    if any(t is not None and t.edits for t in tools):
        return "edit"
    return "plain"


def _usage(message: AIMessage) -> tuple[int, int]:
    usage = message.usage_metadata or {}
    details = usage.get("input_token_details") or {}
    return int(usage.get("input_tokens", 0)), int(details.get("cache_read", 0) or 0)


def _words(text: str) -> str:
    # Apostrophes stay inside words ("don't") but not as quotes around them ("'Solaris'").
    return " ".join(w.strip("'") for w in re.sub(r"[^\w\s']", " ", text.casefold()).split())


def answered(reply: str, expect: Sequence[str], unknown: bool) -> bool:
    """Whether a reply is right: holds one expected string, or says it does not know."""
    if unknown:
        return bool(DONT_KNOW.search(reply))
    words = f" {_words(reply)} "
    return any(f" {_words(e)}" in words for e in expect)


_SECOND_PERSON = re.compile(r"\b(you|your|yours|yourself|you're|you've|you'd|you'll)\b", re.I)
_FIRST_PERSON = re.compile(
    r"\b(i|i'm|i've|i'd|i'll|me|my|mine|myself|we|we're|we've|us|our|ours|ourselves)\b", re.I
)
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")


def addresses_user(reply: str, expect: Sequence[str]) -> bool:
    """Whether the sentence carrying the fact says it to the user, in the second person.

    "Your name is Ada." does; "My name is Ada." (the user's fact in the agent's voice) and
    "Teal is a lovely colour." (the fact, said to nobody) do not. Conservative: a sentence
    with any first-person word ("I remember you love teal") does not count either.
    """
    for sentence in _SENTENCE.split(reply):
        words = f" {_words(sentence)} "
        if not any(f" {_words(e)}" in words for e in expect):
            continue
        if _SECOND_PERSON.search(sentence) and not _FIRST_PERSON.search(sentence):
            return True
    return False


def _holds(text: str, keys: Sequence[str]) -> bool:
    words = f" {_words(text)} "
    return any(f" {_words(k)}" in words for k in keys)


def _human_lines(value: str, initial: str) -> list[str]:
    """The lines of a ``human`` block the agent wrote (its initial text left out)."""
    start = initial.strip()
    text = value.strip()
    if start and text.startswith(start):
        text = text[len(start) :]
    return [line.strip() for line in text.splitlines() if line.strip()]


def judge_capture(
    facts: Sequence[dict[str, Any]], after_session: Sequence[str]
) -> list[dict[str, Any]]:
    """Each stated fact: in ``human`` right after its thread? whole there?

    Args:
        facts: the scenario's facts (``session``, ``keys``, ``whole``).
        after_session: the ``human`` block's agent-written text after each session.
    """
    verdicts = []
    for fact in facts:
        lines = [
            line
            for line in after_session[fact["session"]].splitlines()
            if _holds(line, fact["keys"])
        ]
        joined = " ".join(lines)
        whole = bool(lines) and all(_holds(joined, group) for group in fact.get("whole", []))
        verdicts.append(
            {"keys": fact["keys"], "captured": bool(lines), "whole": whole, "lines": lines}
        )
    return verdicts


def judge_core(facts: Sequence[dict[str, Any]], lines: Sequence[str]) -> dict[str, Any]:
    """The ``human`` lines at the end: small talk (no stated fact in them), stale values,
    and facts held more than once (in two lines, in other words or the same)."""
    keys = [k for fact in facts for k in fact["keys"]]
    chatter = [line for line in lines if not _holds(line, keys)]
    stale_words = [w for fact in facts for w in fact.get("stale", [])]
    stale = [line for line in lines if stale_words and _holds(line, stale_words)]
    repeated = [
        held
        for fact in facts
        if not fact.get("superseded")
        and len(held := [line for line in lines if _holds(line, fact["keys"])]) > 1
    ]
    return {"lines": list(lines), "chatter": chatter, "stale": stale, "repeated": repeated}


def volunteered(reply: str, expect: Sequence[str], facts: Sequence[dict[str, Any]]) -> list[str]:
    """Keys of the agent's other facts an answer recites unasked.

    A fact is asked when one of its keys is among, or holds, an expected string (the
    question "Where did we buy a flat?" asks the fact keyed "karl", "ghent"); the answer
    to it may name anything of that fact. Any other stated fact's key in the reply is a
    memory recited that the question did not ask for.
    """
    asked = [_words(e) for e in expect]
    found: list[str] = []
    for fact in facts:
        keys = [_words(k) for k in fact["keys"]]
        if any(a.startswith(k) or k.startswith(a) for a in asked for k in keys):
            continue
        found.extend(k for k in fact["keys"] if _holds(reply, [k]))
    return found


def judge_gate(scenarios: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The deterministic rules alone, without a model: what they would let into ``human``.

    For every user message of the sessions: the sentences `core_gate.fact_sentences` takes
    for lasting facts that hold no stated fact (small talk let through), the stated facts
    no note of `auto_save.notes_for` holds (missed) and those it holds without a word the
    fact needs (garbled); and, with ``human`` made of those notes alone, corrected values
    left at the end (stale). Seconds to run: a rule can be tried on a half before a model
    run.
    """
    from langgraph_memgpt.small_model.auto_save import notes_for
    from langgraph_memgpt.small_model.core_gate import fact_sentences

    found: dict[str, list[Any]] = {
        "sentences": [],
        "chatter": [],
        "missed": [],
        "garbled": [],
        "stale": [],
    }
    facts_stated = 0
    for scenario in scenarios:
        keys = [k for fact in scenario["facts"] for k in fact["keys"]]
        human: list[str] = []
        for index, session in enumerate(scenario["sessions"]):
            facts = [f for f in scenario["facts"] if f["session"] == index]
            for text in session:
                sentences = fact_sentences(text)
                found["sentences"].extend(sentences)
                found["chatter"].extend(x for x in sentences if not _holds(x, keys))
                notes = notes_for(text)
                human.extend(notes)
                for fact in (f for f in facts if _holds(text, f["keys"])):
                    facts_stated += 1
                    lines = [n for n in notes if _holds(n, fact["keys"])]
                    if not lines:
                        found["missed"].append(text)
                    elif not all(_holds(" ".join(lines), g) for g in fact.get("whole", [])):
                        found["garbled"].append(lines)
        stale_words = [w for fact in scenario["facts"] for w in fact.get("stale", [])]
        found["stale"].extend(x for x in human if stale_words and _holds(x, stale_words))
    return {"facts_stated": facts_stated, **found}


def run_turn(
    graph: Any, ctx: Context, agent: str, thread: str, text: str, layout: str, first: bool
) -> Turn:
    """Send one user message through the graph and measure the turn."""
    config = {"configurable": {"thread_id": thread}}
    before = len(graph.get_state(config).values.get("messages", []))
    started = time.perf_counter()
    out = graph.invoke({"messages": [HumanMessage(text)]}, config, context=ctx)
    seconds = time.perf_counter() - started
    new = graph.get_state(config).values["messages"][before:]
    ai = [m for m in new if isinstance(m, AIMessage) and not m.additional_kwargs.get(REPLY_FLAG)]
    model_messages = [m for m in ai if not m.additional_kwargs.get(AUTO_FLAG)]
    prompt = cached = 0
    for message in model_messages:
        p, c = _usage(message)
        prompt += p
        cached += c
    calls = [
        {"name": c["name"], "args": c["args"], "auto": bool(m.additional_kwargs.get(AUTO_FLAG))}
        for m in ai
        for c in m.tool_calls
    ]
    return Turn(
        layout=layout,
        agent=agent,
        thread=thread,
        text=text,
        kind=_kind(calls),
        seconds=seconds,
        model_calls=len(model_messages),
        prompt_tokens=prompt,
        cached_tokens=cached,
        first_of_thread=first,
        reply=str(out["messages"][-1].content),
        calls=calls,
    )


def classify_edits(data_dir: str, agent: str, facts: Sequence[Sequence[str]]) -> dict[str, Any]:
    """Every agent edit of core memory, sorted into fact / user fact in persona / chatter."""
    memory = open_memory(data_dir, agent)
    edits: list[dict[str, Any]] = []
    for block in memory.core.blocks():
        for change in memory.core.history(block.label):
            if not str(change["actor"]).startswith("agent"):
                continue
            old, new = str(change["old_value"] or ""), str(change["new_value"] or "")
            added = new[len(old) :] if new.startswith(old) else new
            lowered = added.casefold()
            is_fact = any(any(k in lowered for k in keys) for keys in facts)
            verdict = "fact" if is_fact else "chatter"
            if is_fact and block.label == "persona":
                verdict = "user fact in persona"
            if "-q-" in str(change["actor"]):
                # A question states no new fact: whatever was written then is invented.
                verdict = "edit while answering"
            edits.append({"block": block.label, "added": added.strip(), "verdict": verdict})
    blocks = {b.label: b.value for b in memory.core.blocks()}
    return {"edits": edits, "blocks": blocks}


def run_layout(
    model: BaseChatModel, layout: str, scenarios: Sequence[dict[str, Any]], data_dir: str
) -> tuple[list[Turn], dict[str, Any]]:
    """Every scenario on one prompt layout, in a fresh data dir."""
    graph = build_graph(model=model).compile(checkpointer=InMemorySaver())
    turns: list[Turn] = []
    memory_report: dict[str, Any] = {}
    for scenario in scenarios:
        agent = scenario["agent"]
        ctx = Context(agent_id=agent, data_dir=data_dir, max_steps=6, **VARIANTS[layout])
        judged = any(isinstance(f, dict) for f in scenario["facts"])
        after_session: list[str] = []
        for index, session in enumerate(scenario["sessions"]):
            thread = f"{agent}-session-{index}"
            for number, text in enumerate(session):
                turn = run_turn(graph, ctx, agent, thread, text, layout, number == 0)
                turns.append(turn)
                _show(turn)
            if judged:
                after_session.append(_agent_lines(data_dir, agent, ctx))
        for question in scenario["questions"]:
            thread = f"{agent}-q-{uuid.uuid4().hex[:6]}"
            turn = run_turn(graph, ctx, agent, thread, question["q"], layout, True)
            turn.question = True
            turn.unknown = bool(question.get("unknown"))
            turn.correct = answered(turn.reply, question["expect"], turn.unknown)
            if not turn.unknown:
                turn.addressed = turn.correct and addresses_user(turn.reply, question["expect"])
            if judged:
                turn.volunteered = volunteered(turn.reply, question["expect"], scenario["facts"])
            turns.append(turn)
            _show(turn)
        memory_report[agent] = classify_edits(data_dir, agent, _fact_keys(scenario["facts"]))
        if after_session:
            lines = after_session[-1].splitlines()
            memory_report[agent]["capture"] = judge_capture(scenario["facts"], after_session)
            memory_report[agent]["core"] = judge_core(scenario["facts"], lines)
    return turns, memory_report


def _fact_keys(facts: Sequence[Any]) -> list[list[str]]:
    """Keywords per fact, from either scenario format (a list of words, or an object)."""
    return [list(f["keys"]) if isinstance(f, dict) else list(f) for f in facts]


def _agent_lines(data_dir: str, agent: str, ctx: Context) -> str:
    """The agent-written lines of its ``human`` block now."""
    memory = open_memory(data_dir, agent)
    values = {b.label: b.value for b in memory.core.blocks()}
    return "\n".join(_human_lines(values.get("human", ""), ctx.human))


def _show(turn: Turn) -> None:
    mark = "" if turn.correct is None else (" ✓" if turn.correct else " ✗")
    if turn.addressed is False and turn.correct:
        mark += " (not said to the user)"
    calls = ", ".join(c["name"] for c in turn.calls)
    print(
        f"  [{turn.layout}] {turn.seconds:6.1f}s {turn.kind:6} calls={turn.model_calls} "
        f"prompt={turn.prompt_tokens} cached={turn.cached_tokens} | {turn.text[:50]!r} -> "
        f"{turn.reply[:70]!r}{mark}  ({calls})",
        flush=True,
    )


def summarize(turns: Sequence[Turn], memory: dict[str, Any]) -> dict[str, Any]:
    """The figures of one layout: per turn kind, cache share, answers, edits, filters."""
    kinds: dict[str, Any] = {}
    for kind in ("plain", "edit", "search"):
        chosen = [t for t in turns if t.kind == kind]
        seconds = [t.seconds for t in chosen]
        kinds[kind] = {
            "turns": len(chosen),
            "p50_s": round(percentile(seconds, 50), 1),
            "p95_s": round(percentile(seconds, 95), 1),
            "model_calls_mean": round(sum(t.model_calls for t in chosen) / max(1, len(chosen)), 2),
        }
    later = [t for t in turns if not t.first_of_thread]
    first = [t for t in turns if t.first_of_thread]
    ordinary = [t for t in turns if t.kind != "search"]
    questions = [t for t in turns if t.question]
    known = [t for t in questions if not t.unknown]
    searches = [c for t in turns for c in t.calls if MEMORY_TOOLS.get(c["name"], None)]
    searches = [c for c in searches if MEMORY_TOOLS[c["name"]].reads]
    auto = [c for c in searches if c.get("auto")]
    filtered = [c for c in searches if any(c["args"].get(k) for k in FILTER_ARGS)]
    edits = [e for report in memory.values() for e in report["edits"]]
    verdict_names = ("fact", "chatter", "user fact in persona", "edit while answering")
    verdicts = {v: sum(e["verdict"] == v for e in edits) for v in verdict_names}
    captures = [c for report in memory.values() for c in report.get("capture", [])]
    core_lines = [
        line for report in memory.values() for line in report.get("core", {}).get("lines", [])
    ]
    chatter = [
        line for report in memory.values() for line in report.get("core", {}).get("chatter", [])
    ]
    stale = [line for report in memory.values() for line in report.get("core", {}).get("stale", [])]
    repeated = [r for report in memory.values() for r in report.get("core", {}).get("repeated", [])]
    person = {
        "answers_with_fact_to_user": sum(bool(t.addressed) for t in known),
        "known_questions": len(known),
        "answer_share": round(sum(bool(t.addressed) for t in known) / max(1, len(known)), 3),
        "facts_stated": len(captures),
        "facts_captured": sum(c["captured"] for c in captures),
        "capture_share": round(sum(c["captured"] for c in captures) / max(1, len(captures)), 3),
        "facts_garbled": sum(c["captured"] and not c["whole"] for c in captures),
        "core_lines": len(core_lines),
        "chatter_lines": len(chatter),
        "chatter_share": round(len(chatter) / max(1, len(core_lines)), 3),
        "stale_lines": len(stale),
        "repeated_facts": len(repeated),
        "repeated": repeated,
        "answers_reciting_other_memories": sum(bool(t.volunteered) for t in questions),
        "recited": [[t.text, t.volunteered] for t in questions if t.volunteered],
    }
    return {
        "turns": len(turns),
        "by_kind": kinds,
        "person": person,
        "all_p50_s": round(percentile([t.seconds for t in turns], 50), 1),
        "model_calls_per_ordinary_turn": round(
            sum(t.model_calls for t in ordinary) / max(1, len(ordinary)), 2
        ),
        "cache_share_later_turns": round(
            sum(t.cached_tokens for t in later) / max(1, sum(t.prompt_tokens for t in later)), 3
        ),
        "cache_share_first_turns": round(
            sum(t.cached_tokens for t in first) / max(1, sum(t.prompt_tokens for t in first)), 3
        ),
        "prompt_tokens_evaluated": sum(t.prompt_tokens - t.cached_tokens for t in turns),
        "prompt_tokens_cached": sum(t.cached_tokens for t in turns),
        "accuracy": round(sum(bool(t.correct) for t in questions) / max(1, len(questions)), 3),
        "accuracy_known_facts": round(sum(bool(t.correct) for t in known) / max(1, len(known)), 3),
        "questions": len(questions),
        "dont_know_on_known_facts": sum(bool(DONT_KNOW.search(t.reply)) for t in known),
        "searches": len(searches),
        "auto_searches": len(auto),
        "searches_with_filters": len(filtered),
        "filtered_searches": filtered,
        "core_edits": verdicts,
        "clean_edit_share": round(verdicts["fact"] / max(1, len(edits)), 3),
    }


def _print_summary(layout: str, s: dict[str, Any]) -> None:
    print(f"\n--- layout {layout}: {s['turns']} turns ---")
    for kind, k in s["by_kind"].items():
        print(
            f"{kind:7} turns={k['turns']:3} p50={k['p50_s']:6.1f}s p95={k['p95_s']:6.1f}s "
            f"calls/turn={k['model_calls_mean']}"
        )
    print(f"model calls per ordinary (non-search) turn: {s['model_calls_per_ordinary_turn']}")
    print(
        f"prompt tokens from cache: later turns of a thread {s['cache_share_later_turns']:.1%}, "
        f"first turns {s['cache_share_first_turns']:.1%} (evaluated {s['prompt_tokens_evaluated']}"
        f", cached {s['prompt_tokens_cached']})"
    )
    print(
        f"answers: {s['accuracy']:.1%} of {s['questions']} questions (known facts "
        f"{s['accuracy_known_facts']:.1%}, 'don't know' on a known fact: "
        f"{s['dont_know_on_known_facts']})"
    )
    print(
        f"searches: {s['searches']} ({s['auto_searches']} by the loop), with filters: "
        f"{s['searches_with_filters']}"
    )
    print(f"core edits: {s['core_edits']} (clean share {s['clean_edit_share']:.1%})")
    p = s["person"]
    if p["facts_stated"]:
        print(
            f"as a person judges: answers holding the fact, said to the user "
            f"{p['answers_with_fact_to_user']}/{p['known_questions']} ({p['answer_share']:.1%}); "
            f"facts in core after their thread {p['facts_captured']}/{p['facts_stated']} "
            f"({p['capture_share']:.1%}), garbled {p['facts_garbled']}; small-talk lines in "
            f"core {p['chatter_lines']}/{p['core_lines']} ({p['chatter_share']:.1%}); stale "
            f"corrected values {p['stale_lines']}; facts held twice {p['repeated_facts']}; "
            f"answers reciting other memories {p['answers_reciting_other_memories']}"
        )


def main(argv: list[str] | None = None) -> int:
    """Run the scenarios on each layout and print (and optionally save) the figures."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default="local", help="model spec (default: local)")
    parser.add_argument(
        "--layouts", nargs="+", default=["cached", "legacy"], choices=sorted(VARIANTS)
    )
    parser.add_argument("--agents", nargs="*", help="only these scenario agents")
    parser.add_argument(
        "--half",
        choices=("tune", "held-out"),
        help="only the scenarios of this half (tune rules on one, report the other)",
    )
    parser.add_argument("--scenarios", type=Path, default=SCENARIOS)
    parser.add_argument("--json", type=Path, help="write every turn and the summary here")
    parser.add_argument(
        "--gate-only",
        action="store_true",
        help="no model: what core_gate/auto_save's rules alone take for facts (seconds)",
    )
    parser.add_argument(
        "--full-tools",
        action="store_true",
        help="offer the embedded model every tool and optional argument (date and role "
        "filters included), as before compact schemas: the 'before' of the filter figures",
    )
    args = parser.parse_args(argv)
    from langgraph_memgpt.models import resolve_model

    print_header("turns on a real model (benchmarks/local_turns.py)")
    scenarios = json.loads(args.scenarios.read_text())["scenarios"]
    if args.agents:
        scenarios = [s for s in scenarios if s["agent"] in args.agents]
    if args.half:
        scenarios = [s for s in scenarios if s.get("half") == args.half]
    if args.gate_only:
        gate = judge_gate(scenarios)
        print(
            f"rules alone ({args.half or 'both halves'}): {len(gate['sentences'])} sentences "
            f"taken as facts, {len(gate['chatter'])} of them small talk; stated facts "
            f"{gate['facts_stated']}, missed {len(gate['missed'])}, garbled "
            f"{len(gate['garbled'])}; corrected values left {len(gate['stale'])}"
        )
        if args.json:
            args.json.write_text(json.dumps(gate, indent=1, ensure_ascii=False))
        return 0
    model = resolve_model(args.model)
    if args.full_tools:
        model.compact_tools = False  # type: ignore[attr-defined]
    report: dict[str, Any] = {
        "model": args.model,
        "full_tools": args.full_tools,
        "half": args.half,
        "layouts": {},
    }
    for layout in args.layouts:
        with tempfile.TemporaryDirectory(prefix=f"turns-{layout}-") as data_dir:
            turns, memory = run_layout(model, layout, scenarios, data_dir)
            summary = summarize(turns, memory)
        report["layouts"][layout] = {
            "summary": summary,
            "memory": memory,
            "turns": [asdict(t) for t in turns],
        }
        _print_summary(layout, summary)
        for agent, m in memory.items():
            print(f"  {agent}: " + json.dumps(m["blocks"], ensure_ascii=False))
            for c in m.get("capture", []):
                if not (c["captured"] and c["whole"]):
                    state = "garbled" if c["captured"] else "not in core"
                    print(f"    {state}: {c['keys']} {c['lines']}")
            for line in m.get("core", {}).get("chatter", []):
                print(f"    small talk in core: {line!r}")
    if len(args.layouts) > 1:
        base = report["layouts"][args.layouts[-1]]["summary"]
        ours = report["layouts"][args.layouts[0]]["summary"]
        print(f"\n{args.layouts[0]} / {args.layouts[-1]} (same run):")
        for kind in ("plain", "edit", "search"):
            a, b = ours["by_kind"][kind]["p50_s"], base["by_kind"][kind]["p50_s"]
            print(f"  {kind} p50 {a}s / {b}s = {a / b:.2f}x" if b else f"  {kind}: no turns")
    if args.json:
        args.json.write_text(json.dumps(report, indent=1, ensure_ascii=False, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
