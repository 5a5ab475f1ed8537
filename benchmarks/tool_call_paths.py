"""Two ways to get tool calls out of the embedded model, on the same prompts.

* ``constrained`` (what the package uses): ``LocalToolCallingChatModel``, the tools written
  into the system prompt after the instructions, decoding constrained by a JSON schema of
  the agent's step shapes (one search, or memory edits followed by ``send_message``), and
  the JSON parsed into real tool calls.
* ``native`` (the baseline): a plain ``ChatOpenAI`` bound to the same tools, pointed at the
  same llama.cpp server, which renders them with Qwen's chat template (jinja) and parses
  the model's ``<tool_call>`` blocks into OpenAI tool calls itself.

Each case is one agent step: the system prompt the agent would send (instructions and
core memory) and one user message, with what a good step does: which tools it calls,
and for answers a string the reply must hold. Both paths get the same messages, the
agent's compact tool schemas, and the same sampling settings; they take turns case by
case, so a slow spell of the shared machine lands on both.

Run: ``.venv/bin/python benchmarks/tool_call_paths.py [--repeat 2] [--json out.json]``
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
from pydantic import ValidationError

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import percentile, print_header  # noqa: E402

from langgraph_memgpt import prompts  # noqa: E402
from langgraph_memgpt.models import step_shape  # noqa: E402
from langgraph_memgpt.small_model.repairs import StepRepairs  # noqa: E402
from langgraph_memgpt.tools.run import MEMORY_TOOLS, tool_schemas  # noqa: E402

CORE = (
    '<core_memory>\n<persona chars_current="26" chars_limit="2000">\n'
    "I am a helpful assistant.\n</persona>\n"
    '<human chars_current="{n}" chars_limit="2000">\n{human}\n</human>\n</core_memory>'
)

# (user message, core memory 'human' block, tools a good step calls, a string the reply holds)
CASES: list[tuple[str, str, set[str], str]] = [
    ("Hi, I'm Noor. Nice to meet you!", "", {"core_memory_append", "send_message"}, "noor"),
    ("Thanks, that's all for today.", "Name: Noor.", {"send_message"}, ""),
    ("What is my name?", "Name: Noor.", {"send_message"}, "noor"),
    ("What did I tell you about my garden last week?", "Name: Noor.", {"conversation_search"}, ""),
    (
        "My daughter starts school in September.",
        "Name: Noor.",
        {"core_memory_append", "send_message"},
        "",
    ),
    ("How are you today?", "Name: Noor.", {"send_message"}, ""),
    ("Which city do I live in?", "Name: Noor.\nLives in Porto.", {"send_message"}, "porto"),
    ("Which book did I say I was reading?", "Name: Noor.", {"conversation_search"}, ""),
    (
        "I switched jobs: I'm a pharmacist now.",
        "Name: Noor.\nWorks as a teacher.",
        {"core_memory_replace", "send_message"},
        "",
    ),
    ("Do I have any pets?", "Name: Noor.\nHas a dog called Miso.", {"send_message"}, "miso"),
]


@dataclass
class Result:
    """One step of one path."""

    path: str
    case: int
    seconds: float
    valid: bool
    right_tools: bool
    answer_ok: bool
    calls: list[str]
    reply: str


def system_for(human: str) -> SystemMessage:
    """The agent's system message (cached layout: instructions block, memory block)."""
    core = CORE.format(n=len(human), human=human)
    return SystemMessage(
        content=[
            {"type": "text", "text": prompts.SYSTEM_INSTRUCTIONS},
            {"type": "text", "text": core},
        ]
    )


def flat(message: SystemMessage) -> SystemMessage:
    """The same system text as one string (the native path's template appends the tools)."""
    return SystemMessage(message.text)


def judge(path: str, index: int, message: AIMessage, seconds: float) -> Result:
    """Score one step: calls well formed, the right tools, the answer in the reply."""
    _, _, tools, expect = CASES[index]
    calls = [c["name"] for c in message.tool_calls]
    valid = bool(calls) and not message.invalid_tool_calls
    for call in message.tool_calls:
        tool = MEMORY_TOOLS.get(call["name"])
        try:
            if tool is None:
                raise ValueError(call["name"])
            tool.args.model_validate(call["args"])
        except (ValidationError, ValueError):
            valid = False
    reply = " ".join(
        str(c["args"].get("message", "")) for c in message.tool_calls if c["name"] == "send_message"
    )
    right = set(calls) == tools
    answer_ok = not expect or expect in reply.casefold()
    return Result(path, index, seconds, valid, right, answer_ok and right, calls, reply)


def run(paths: dict[str, BaseChatModel], repeat: int) -> list[Result]:
    """Every case on every path, the paths taking turns.

    The constrained path's steps are repaired as the agent's are (``repair=``, the
    small-model policy's `StepRepairs`); its steps are not narrowed (the cases are steps
    of any kind).
    """
    schemas = tool_schemas(compact=True)
    shape = step_shape()
    assert shape.reply_tool is not None
    repairs = {"constrained": {"repair": StepRepairs(shape.reply_tool, shape.companions)}}
    results: list[Result] = []
    for _ in range(repeat):
        for index, (text, human, _, _) in enumerate(CASES):
            system = system_for(human)
            for name, model in paths.items():
                bound = model.bind_tools(schemas)
                prompt = [system if name == "constrained" else flat(system), HumanMessage(text)]
                started = time.perf_counter()
                try:
                    message = bound.invoke(prompt, **repairs.get(name, {}))
                except Exception as exc:  # noqa: BLE001 - a failed request is an invalid step
                    message = AIMessage(f"error: {exc}")
                seconds = time.perf_counter() - started
                result = judge(name, index, message, seconds)
                results.append(result)
                print(
                    f"  {name:11} {seconds:5.1f}s valid={result.valid!s:5} "
                    f"right={result.right_tools!s:5} {text[:40]!r} -> {result.calls} "
                    f"{result.reply[:60]!r}",
                    flush=True,
                )
    return results


def summarize(results: list[Result]) -> dict[str, Any]:
    """Per path: share of valid steps, of right tools, of right answers; latency."""
    out: dict[str, Any] = {}
    for path in dict.fromkeys(r.path for r in results):
        mine = [r for r in results if r.path == path]
        n = len(mine)
        out[path] = {
            "steps": n,
            "valid": round(sum(r.valid for r in mine) / n, 3),
            "right_tools": round(sum(r.right_tools for r in mine) / n, 3),
            "right_step": round(sum(r.answer_ok for r in mine) / n, 3),
            "p50_s": round(percentile([r.seconds for r in mine], 50), 1),
            "p95_s": round(percentile([r.seconds for r in mine], 95), 1),
        }
    return out


def main(argv: list[str] | None = None) -> int:
    """Run both paths and print the comparison."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    from langchain_openai import ChatOpenAI

    from langgraph_memgpt.llm.factory import LOCAL_MAX_TOKENS, LOCAL_TEMPERATURE
    from langgraph_memgpt.llm.local_server import MODEL_ALIAS, get_local_server
    from langgraph_memgpt.models import local_model

    print_header("tool-call paths on the embedded model (benchmarks/tool_call_paths.py)")
    constrained = local_model(show_progress=False)
    native = ChatOpenAI(
        model=MODEL_ALIAS,
        base_url=get_local_server(show_progress=False).base_url,
        api_key="local",  # type: ignore[arg-type]
        temperature=LOCAL_TEMPERATURE,
        max_tokens=LOCAL_MAX_TOKENS,  # type: ignore[call-arg]
    )
    results = run({"constrained": constrained, "native": native}, args.repeat)
    summary = summarize(results)
    print()
    for path, s in summary.items():
        print(
            f"{path:11} steps={s['steps']} valid={s['valid']:.0%} right tools="
            f"{s['right_tools']:.0%} right step={s['right_step']:.0%} p50={s['p50_s']}s "
            f"p95={s['p95_s']}s"
        )
    if args.json:
        args.json.write_text(
            json.dumps({"summary": summary, "results": [asdict(r) for r in results]}, indent=1)
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
