"""Retention rules for archival memory: past its rule's age a passage is gone everywhere.

Store tests run on both backends (``make_backend``: SQLite and Postgres).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from conftest import BackendFactory

from langgraph_memgpt.cli.commands import main
from langgraph_memgpt.ops.export_file import ExportFormatError, read_export
from langgraph_memgpt.ops.retention import RetentionRuleError, apply_retention, parse_age, rule
from langgraph_memgpt.ops.transfer import export_agent, import_agent
from langgraph_memgpt.stores.passages import NewPassage
from langgraph_memgpt.stores.sqlite import SqliteBackend

NOW = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)
RULE = "retention tag=raw_html max_age=2d"


def _seed(memory: Any) -> dict[str, int]:
    """Three passages: raw HTML 3 days old, raw HTML 1 hour old, extracted JSON 3 days old."""
    old, fresh = NOW - timedelta(days=3), NOW - timedelta(hours=1)
    made = memory.archival.insert_many(
        [
            NewPassage("<html>zebra crossing timetable</html>", ["raw_html"], created_at=old),
            NewPassage("<html>giraffe opening hours</html>", ["raw_html"], created_at=fresh),
            NewPassage('{"animal": "zebra", "legs": 4}', ["extracted_json"], created_at=old),
        ]
    )
    return {"old_html": made[0].id, "new_html": made[1].id, "json": made[2].id}


def _fts_ids(memory: Any, backend_kind: str, word: str) -> set[int]:
    """Ids the engine's own word index still holds for ``word`` (not through search)."""
    if backend_kind == "sqlite":
        rows = memory.archival.db.conn.execute(
            "SELECT rowid FROM archival_fts WHERE archival_fts MATCH ?", (word,)
        )
        return {int(r[0]) for r in rows}
    with memory.archival.pool.connection() as conn:
        rows = conn.execute(
            "SELECT id FROM memgpt_archival WHERE agent_id = %s "
            "AND tsvector_to_array(tsv) && tsvector_to_array(memgpt_words(%s))",
            (memory.agent_id, word),
        ).fetchall()
    return {int(r[0]) for r in rows}


def test_a_passage_past_its_rule_is_gone_everywhere_and_others_stay(
    make_backend: BackendFactory, backend_kind: str, embeddings: Any, tmp_path: Path
) -> None:
    memory = make_backend(embeddings=embeddings).open("crawler")
    ids = _seed(memory)
    assert ids["old_html"] in _fts_ids(memory, backend_kind, "zebra")
    memory.archival.set_retention_rule(rule("raw_html", "48h"))

    report = apply_retention(memory, now=NOW, checkpointer=None)

    assert report.forgotten == {RULE: [ids["old_html"]]}
    listed = {p.id for p, _ in memory.archival.list_passages()}
    assert listed == {ids["new_html"], ids["json"]}
    for mode in ("fts", "vector", "hybrid"):
        hits = memory.archival.search("zebra crossing timetable", mode=mode).hits
        assert ids["old_html"] not in {h.item.id for h in hits}, mode
    assert ids["json"] in {h.item.id for h in memory.archival.search("zebra", mode="fts").hits}
    assert _fts_ids(memory, backend_kind, "zebra") == {ids["json"]}
    out = tmp_path / "crawler.jsonl"
    export_agent(memory, out)
    assert "zebra crossing" not in out.read_text()
    assert "giraffe" in out.read_text()
    # The log names the rule, never the text.
    entry = next(e for e in memory.deletions.entries() if e.item_id == str(ids["old_html"]))
    assert entry.actor == "retention"
    assert entry.detail == RULE
    assert "zebra" not in json.dumps([vars(e) for e in memory.deletions.entries()])
    # Applying again forgets nothing more.
    assert apply_retention(memory, now=NOW, checkpointer=None).count == 0


def test_a_rule_with_a_source_reaches_only_that_files_passages(
    make_backend: BackendFactory,
) -> None:
    memory = make_backend().open("docs")
    old = NOW - timedelta(days=10)
    made = memory.archival.insert_many(
        [
            NewPassage("draft one", ["document", "source:Draft.md"], created_at=old),
            NewPassage("final text", ["document", "source:final.md"], created_at=old),
        ]
    )
    memory.archival.set_retention_rule(rule("document", "1w", source="Draft.md"))
    assert apply_retention(memory, now=NOW, checkpointer=None).count == 1
    assert [p.id for p, _ in memory.archival.list_passages()] == [made[1].id]


def test_rules_are_stored_with_the_agent_replaced_by_tag_and_removable(
    make_backend: BackendFactory,
) -> None:
    archival = make_backend().open("a").archival
    archival.set_retention_rule(rule("Raw_HTML", "48h"))
    archival.set_retention_rule(rule("raw_html", "3d"))
    archival.set_retention_rule(rule("document", "30d", source="notes.md"))
    backend = make_backend()
    reopened = backend.open("a").archival
    assert [(r.tag, r.max_age_seconds, r.source) for r in reopened.retention_rules()] == [
        ("document", 30 * 86400, "notes.md"),
        ("raw_html", 3 * 86400, None),
    ]
    assert backend.open("b").archival.retention_rules() == []
    assert reopened.remove_retention_rule("raw_html")
    assert not reopened.remove_retention_rule("raw_html")


def test_bad_rules_are_refused_naming_the_field() -> None:
    with pytest.raises(RetentionRuleError, match="max_age '48 hours' is not an age"):
        rule("raw_html", "48 hours")
    with pytest.raises(RetentionRuleError, match="max_age must be at least 1 second"):
        rule("raw_html", "0h")
    with pytest.raises(RetentionRuleError, match="tag must be"):
        rule("  ", "1d")
    assert parse_age("2w") == 1_209_600 and parse_age("90") == 90


def test_rules_travel_through_export_and_import(tmp_path: Path) -> None:
    source = SqliteBackend(tmp_path / "a", embedding_model="none").open("x")
    source.archival.set_retention_rule(rule("raw_html", "48h"))
    out = tmp_path / "x.jsonl"
    export_agent(source, out)
    target = SqliteBackend(tmp_path / "b", embedding_model="none").open("y")
    import_agent(target, out)
    assert [r.describe() for r in target.archival.retention_rules()] == [RULE]
    # Dropping the rule's line is caught: the end record counts it.
    lines = out.read_text().splitlines()
    kept = [line for line in lines if '"type": "retention_rule"' not in line]
    assert len(kept) == len(lines) - 1
    broken = tmp_path / "broken.jsonl"
    broken.write_text("\n".join(kept) + "\n")
    with pytest.raises(ExportFormatError, match="truncated or altered"):
        read_export(broken)


def test_the_command_sets_lists_and_applies_rules(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "data"
    memory = SqliteBackend(data, embedding_model="none").open("crawler")
    stale = memory.archival.insert_many(
        [NewPassage("<p>stale page</p>", ["raw_html"], created_at="2020-01-01T00:00:00+00:00")]
    )[0]
    kept = memory.archival.insert("a fact", tags=["extracted_json"])
    base = ["--data-dir", str(data), "--agent", "crawler"]
    assert main(["retention", "set", "--tag", "raw_html", "--max-age", "48h", *base]) == 0
    assert main(["retention", "set", "--tag", "x", "--max-age", "soon", *base]) == 2
    assert "max_age 'soon' is not an age" in capsys.readouterr().err
    assert main(["retention", "list", "--json", *base]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert [(r["tag"], r["max_age"]) for r in listed] == [("raw_html", "2d")]
    assert main(["retention", "apply", "--json", "--data-dir", str(data)]) == 0
    applied = json.loads(capsys.readouterr().out)
    assert applied == [
        {
            "agent_id": "crawler",
            "count": 1,
            "forgotten": {RULE: [stale.id]},
            "copies": 0,
            "threads": [],
        }
    ]
    reopened = SqliteBackend(data, embedding_model="none").open("crawler")
    assert [p.id for p, _ in reopened.archival.list_passages()] == [kept.id]


def test_the_memory_page_shows_the_rules(make_backend: BackendFactory) -> None:
    from langgraph_memgpt.serve.web.views import archival_view

    memory = make_backend().open("crawler")
    memory.archival.set_retention_rule(rule("raw_html", "48h"))
    view = archival_view(memory)
    assert [(r["tag"], r["max_age"]) for r in view["retention"]] == [("raw_html", "2d")]


def test_the_sleep_time_run_applies_the_rules(make_backend: BackendFactory) -> None:
    from langgraph_memgpt import Context
    from langgraph_memgpt.llm.scripted import ScriptedChatModel
    from langgraph_memgpt.sleeptime import build_sleeptime_graph

    backend = make_backend()
    memory = backend.open("crawler")
    stale = memory.archival.insert_many(
        [NewPassage("<p>stale</p>", ["raw_html"], created_at="2020-01-01T00:00:00+00:00")]
    )[0]
    memory.archival.set_retention_rule(rule("raw_html", "48h"))
    graph = build_sleeptime_graph(model=ScriptedChatModel.from_steps([]), memory=backend)
    out = graph.compile().invoke({}, context=Context(agent_id="crawler"))
    assert out["retention"]["forgotten"] == {RULE: [stale.id]}
    assert memory.archival.get(stale.id) is None


@pytest.mark.parametrize("age", ["3000000d", "10000000000001", "9" * 5000 + "s", 10**30])
def test_an_age_beyond_what_a_rule_may_hold_is_refused_naming_the_longest(age: Any) -> None:
    with pytest.raises(RetentionRuleError, match=r"more than the longest age .* 115740d"):
        rule("raw_html", age)
    assert parse_age("115740d") <= 10**10


def test_apply_goes_on_agent_by_agent_and_a_refused_age_leaves_an_importable_export(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from langgraph_memgpt.stores.types import RetentionRule

    data = tmp_path / "data"
    backend = SqliteBackend(data, embedding_model="none")
    stale = "2020-01-01T00:00:00+00:00"
    for agent in ("a", "b", "c"):
        backend.open(agent).archival.insert_many(
            [NewPassage(f"page {agent}", ["raw_html"], created_at=stale)]
        )
        backend.open(agent).archival.set_retention_rule(rule("raw_html", "48h"))
    base = ["--data-dir", str(data)]

    code = main(["retention", "set", "--agent", "a", "--tag", "x", "--max-age", "3000000d", *base])

    assert code == 2 and "more than the longest age" in capsys.readouterr().err
    assert [r.tag for r in backend.open("a").archival.retention_rules()] == ["raw_html"]
    export_agent(backend.open("a"), tmp_path / "a.jsonl")
    read_export(tmp_path / "a.jsonl")  # re-importable
    # A rule stored unchecked (an older version, the store's API): its cut-off lies before
    # year 1, so nothing is older; the other rules and agents are applied all the same.
    backend.open("a").archival.set_retention_rule(
        RetentionRule("raw_html", 3_000_000 * 86400, "x.md")
    )
    assert main(["retention", "apply", "--json", *base]) == 0
    applied = json.loads(capsys.readouterr().out)
    assert [(r["agent_id"], r["count"]) for r in applied] == [("a", 1), ("b", 1), ("c", 1)]
