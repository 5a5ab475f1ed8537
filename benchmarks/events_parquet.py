"""Issue 29's scenario on a real model: a config file's output format goes JSON -> Parquet.

An agent's ``human`` block says the user's preferred output format is JSON (as an earlier
conversation would have left it; seeded here so the run measures the event, not how well
the model saves a fact). A real `Watcher` watches a temporary folder holding
``config.yaml`` (``output_format: json``); the file is rewritten with ``parquet`` and the
watcher's event runs the real graph (the agent's own thread, real SQLite and FAISS,
MiniLM). Then, in a new thread, the user asks "What is my preferred output format?".

Measured per repetition (each in a fresh data dir): whether core memory says Parquet after
the event turn, whether the answer says Parquet, the model calls and seconds of each turn,
and whether the event turn sent anything (it should not). Baseline: the same question
with no event (``--no-event``) answers JSON: what the agent would say without the watcher.

``--scenario`` picks another file change: ``parquet`` is the issue's (the event note and the
small-model rules were tuned on it); ``timezone`` (a setting in ``settings.toml`` that core
memory quotes changes) and ``unrelated`` (a grocery list changes: core memory must stay as
it is) were written after the tuning; the second showed that offering appends made the
model save the file's content in ``human``, so the rules changed on it (no longer held
out). ``rotated`` (a credential file changes: its content withheld, core memory must stay)
and ``editor`` (a setting core memory quotes) were written after that change; ``editor``
failed (the model copied the file's ``editor=emacs`` as the text to replace, which core
memory words differently), and the replace refusal changed on it; ``shell`` and ``city``
were written before that change and failed too (0 of 3, 1 of 3), and the embedded model's
wrapper now corrects a changed value itself (`event_notes`); ``browser`` and ``team`` were
written before that and never tuned on. "Says the new value" counts only
when the old one is gone from ``human``.

Run: ``.venv/bin/python benchmarks/events_parquet.py [--model local] [--repeat 3]
[--scenario parquet|timezone|unrelated] [--json out.json]``
"""

from __future__ import annotations

import argparse
import json
import queue
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.memory import InMemorySaver

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import print_header  # noqa: E402

from langgraph_memgpt import Context, build_graph  # noqa: E402
from langgraph_memgpt.cli.watch import Watcher, watch_thread  # noqa: E402
from langgraph_memgpt.stores.sqlite import close_all, open_memory  # noqa: E402
from langgraph_memgpt.turn.main_context import REPLY_FLAG  # noqa: E402

HUMAN = "Name: Ada\nPreferred output format: JSON (set in config.yaml)"
QUESTION = "What is my preferred output format?"

SCENARIOS: dict[str, dict[str, str]] = {
    # The scenario: the event note and the small-model rules were tuned on it.
    "parquet": {
        "human": HUMAN,
        "file": "config.yaml",
        "before": "report: weekly\noutput_format: json\n",
        "after": "report: weekly\noutput_format: parquet\n",
        "question": QUESTION,
        "new": "parquet",
        "old": "json",
    },
    # Held out (written after the tuning, never tuned on).
    "timezone": {
        "human": "Name: Ravi\nWorks from Berlin; calendar timezone Europe/Berlin (settings.toml)",
        "file": "settings.toml",
        "before": 'editor = "vim"\ntimezone = "Europe/Berlin"\n',
        "after": 'editor = "vim"\ntimezone = "America/Toronto"\n',
        "question": "Which timezone is my calendar in?",
        "new": "toronto",
        "old": "europe/berlin",
    },
    # Held out again: written after the rules changed on the two above.
    "rotated": {
        "human": "Name: Lina\nDeploys with the key in deploy.env; on-call on Fridays.",
        "file": "deploy.env",
        "before": "DEPLOY_KEY=abc123old\n",
        "after": "DEPLOY_KEY=zz987new\n",
        "question": "Which day am I on call?",
        "new": "friday",
        "old": "",
    },
    "editor": {
        "human": "Name: Tom\nWrites code in Emacs (editor setting in .toolrc).",
        "file": ".toolrc",
        "before": "theme=dark\neditor=emacs\n",
        "after": "theme=dark\neditor=neovim\n",
        "question": "Which editor do I write code in?",
        "new": "neovim",
        "old": "emacs",
    },
    # Held out a third time: written before the replace refusal named the lines it means.
    "shell": {
        "human": "Name: Iris\nUses zsh as her login shell.",
        "file": ".profile",
        "before": "export EDITOR=nano\nSHELL=/bin/zsh\n",
        "after": "export EDITOR=nano\nSHELL=/usr/bin/fish\n",
        "question": "Which shell do I use?",
        "new": "fish",
        "old": "zsh",
    },
    "city": {
        "human": "Name: Jon\nGets weather reports for Lyon (city in weather.ini).",
        "file": "weather.ini",
        "before": "[report]\ncity=Lyon\nhour=7\n",
        "after": "[report]\ncity=Porto\nhour=7\n",
        "question": "For which city do I get weather reports?",
        "new": "porto",
        "old": "lyon",
    },
    # Held out a fourth time: written before the wrapper corrected changed values itself.
    "browser": {
        "human": "Name: Noa\nReads the news in Firefox (default browser in apps.conf).",
        "file": "apps.conf",
        "before": "mail=thunderbird\nbrowser=firefox\n",
        "after": "mail=thunderbird\nbrowser=chromium\n",
        "question": "Which browser do I read the news in?",
        "new": "chromium",
        "old": "firefox",
    },
    "team": {
        "human": "Name: Ola\nWorks on the billing team (team in profile.yml).",
        "file": "profile.yml",
        "before": "name: Ola\nteam: billing\n",
        "after": "name: Ola\nteam: identity\n",
        "question": "Which team do I work on?",
        "new": "identity",
        "old": "billing",
    },
    "unrelated": {
        "human": "Name: Mei\nPrefers answers in British English.",
        "file": "notes.txt",
        "before": "groceries: eggs, rice\n",
        "after": "groceries: eggs, rice, lemons\n",
        "question": "Which English do I prefer for answers?",
        "new": "british",
        "old": "",
    },
}
DEADLINE_S = 1800.0


def _model_calls(messages: list[Any]) -> int:
    return sum(
        1 for m in messages if isinstance(m, AIMessage) and not m.additional_kwargs.get(REPLY_FLAG)
    )


def run_once(model: Any, event: bool, scenario: dict[str, str] | None = None) -> dict[str, Any]:
    """One repetition in a fresh data dir; returns what it measured."""
    scenario = scenario or SCENARIOS["parquet"]
    human_seed = scenario["human"]
    graph = build_graph(model=model).compile(checkpointer=InMemorySaver())
    with tempfile.TemporaryDirectory(prefix="events-parquet-") as root:
        data = Path(root) / "data"
        ctx = Context(agent_id="ada", data_dir=str(data), human=human_seed, max_steps=6)
        open_memory(data, "ada").core.ensure_defaults(persona=ctx.persona, human=human_seed)
        result: dict[str, Any] = {"event": event}
        if event:
            folder = Path(root) / "project"
            folder.mkdir()
            config_file = folder / scenario["file"]
            config_file.write_text(scenario["before"])
            thread: Any = {"configurable": {"thread_id": watch_thread("ada")}}
            outputs: queue.Queue[tuple[float, dict[str, Any], list[dict[str, str]]]] = queue.Queue()

            def run(events: list[dict[str, str]]) -> None:
                started = time.perf_counter()
                out = graph.invoke({"events": events}, thread, context=ctx)
                outputs.put((time.perf_counter() - started, out, events))

            ready = threading.Event()
            stop = threading.Event()
            watcher = Watcher([folder], run, ignore=[data], debounce_ms=400, on_ready=ready.set)
            worker = threading.Thread(target=watcher.run, args=(stop,), daemon=True)
            worker.start()
            ready.wait(60)
            config_file.write_text(scenario["after"])
            seconds, out, events = outputs.get(timeout=DEADLINE_S)
            stop.set()
            worker.join(60)
            messages = graph.get_state(thread).values["messages"]
            human = open_memory(data, "ada").core.get("human").value
            result.update(
                event_text=[e["text"] for e in events],
                event_seconds=round(seconds, 1),
                event_model_calls=_model_calls(messages),
                event_calls=[
                    {"name": c["name"], "args": c["args"]}
                    for m in messages
                    if isinstance(m, AIMessage) and not m.additional_kwargs.get(REPLY_FLAG)
                    for c in m.tool_calls
                ],
                event_outcome=out.get("event_outcome"),
                event_sent_reply=any(m.additional_kwargs.get(REPLY_FLAG) for m in messages),
                human_after=human,
                core_unchanged=human == human_seed,
                core_says_parquet=scenario["new"] in human.lower()
                and (not scenario["old"] or scenario["old"] not in human.lower()),
            )
        asked: Any = {"configurable": {"thread_id": "question"}}
        started = time.perf_counter()
        question = scenario["question"]
        out = graph.invoke({"messages": [HumanMessage(question)]}, asked, context=ctx)
        answer = str(out["messages"][-1].content)
        result.update(
            answer=answer,
            answer_seconds=round(time.perf_counter() - started, 1),
            answer_says_parquet=scenario["new"] in answer.lower(),
            answer_says_json=bool(scenario["old"]) and scenario["old"] in answer.lower(),
        )
        close_all()
    return result


def main(argv: list[str] | None = None) -> int:
    """Run the scenario ``--repeat`` times; print each repetition and the totals."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default="local", help="model spec, as for chat")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--no-event", action="store_true", help="baseline: no file change")
    parser.add_argument("--json", type=Path, help="write every repetition here")
    parser.add_argument(
        "--scenario",
        choices=sorted(SCENARIOS),
        default="parquet",
        help="parquet: the issue's (tuned on); timezone, unrelated: held out, then seen; "
        "rotated, editor, shell, city: held out, then seen; browser, team: held out",
    )
    args = parser.parse_args(argv)
    from langgraph_memgpt.models import resolve_model

    print_header("system event JSON -> Parquet (benchmarks/events_parquet.py)")
    model = resolve_model(args.model)
    runs = []
    for number in range(args.repeat):
        result = run_once(model, event=not args.no_event, scenario=SCENARIOS[args.scenario])
        runs.append(result)
        print(f"--- repetition {number + 1}")
        print(json.dumps(result, indent=2))
    totals = {
        "repetitions": len(runs),
        "core_says_parquet": sum(bool(r.get("core_says_parquet")) for r in runs),
        "answer_says_parquet": sum(r["answer_says_parquet"] for r in runs),
        "event_sent_reply": sum(bool(r.get("event_sent_reply")) for r in runs),
        "core_unchanged": sum(bool(r.get("core_unchanged")) for r in runs),
        "scenario": args.scenario,
    }
    print("=== totals", json.dumps(totals))
    if args.json:
        args.json.write_text(json.dumps({"runs": runs, "totals": totals}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
