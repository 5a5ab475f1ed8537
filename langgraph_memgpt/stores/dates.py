"""Timestamps and date-range filters shared by the searchable memory tiers.

Every stored timestamp is ISO-8601 UTC with microseconds (``2026-11-29T09:47:15.000000+00:00``),
so text comparison in SQL is chronological comparison. Search bounds come from a model or
a user, so both a date (``2026-11-29``) and a full ISO timestamp are accepted; a date-only
end bound covers that whole day.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, time, timedelta

from langgraph_memgpt.osutil import utc_now

_FIRST = datetime.min.replace(tzinfo=UTC)
_LAST = datetime.max.replace(tzinfo=UTC)
AFTER_ALL = "9999-12-31T99"
"""Sorts after every stored timestamp: the exclusive end of a range that runs to 9999-12-31."""


def shift_day(day: date, days: int) -> date:
    """``day`` moved by ``days``, stopping at year 1 and year 9999 instead of overflowing.

    Calendar edges ("0001-01-01", "9999-12-31") come from models and users; a range that
    reaches past them simply runs to the edge.
    """
    try:
        return day + timedelta(days=days)
    except OverflowError:
        return date.min if days < 0 else date.max


def day_after_iso(day: date) -> str:
    """The ISO text of the start of the day after ``day`` (an exclusive range end)."""
    if day == date.max:
        return AFTER_ALL
    return (day + timedelta(days=1)).isoformat()


def _to_utc(moment: datetime) -> datetime:
    """``moment`` in UTC; one that UTC cannot hold (year 1 at +05:00) stops at the edge."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    try:
        return moment.astimezone(UTC)
    except OverflowError:
        return _FIRST if moment.year == 1 else _LAST


def to_utc_iso(value: str | datetime | None = None) -> str:
    """Normalise a timestamp to ISO-8601 UTC with microseconds; None means now.

    Naive timestamps are taken as UTC.

    Raises:
        ValueError: ``value`` is not a date or ISO-8601 timestamp.
    """
    if value is None:
        return utc_now()
    if isinstance(value, datetime):
        moment = value
    else:
        moment = _parse(value, "created_at")[0]
    return _to_utc(moment).isoformat(timespec="microseconds")


def _parse(value: str, name: str) -> tuple[datetime, bool]:
    """Return (moment, was a bare date)."""
    text = value.strip()
    try:
        if len(text) == 10:
            return datetime.combine(date.fromisoformat(text), time(), tzinfo=UTC), True
        return datetime.fromisoformat(text), False
    except ValueError:
        raise ValueError(
            f"{name} must be YYYY-MM-DD or ISO-8601 (e.g. 2026-11-29T09:47:15Z), got {value!r}"
        ) from None


def date_range_sql(
    column: str, start_date: str | None, end_date: str | None
) -> tuple[list[str], list[object]]:
    """Build inclusive SQL conditions over an ISO-UTC text ``column`` for a date range.

    Args:
        column: a trusted column reference, e.g. ``"b.created_at"``.
        start_date: ``YYYY-MM-DD`` or ISO-8601, inclusive; None or blank for no bound.
        end_date: ``YYYY-MM-DD`` (the whole day is included) or ISO-8601 (inclusive);
            None or blank for no bound.

    Returns:
        ``(conditions, params)`` to AND into a WHERE clause.

    Raises:
        ValueError: a bound is malformed, or the start is after the end; the message is
            written for the model that passed them.
    """
    conditions: list[str] = []
    params: list[object] = []
    start = end = None
    if start_date is not None and start_date.strip():
        start = _parse(start_date, "start_date")[0]
        conditions.append(f"{column} >= ?")
        params.append(to_utc_iso(start))
    if end_date is not None and end_date.strip():
        end, bare = _parse(end_date, "end_date")
        if bare and end.date() == date.max:
            conditions.append(f"{column} < ?")
            params.append(AFTER_ALL)
        elif bare:
            conditions.append(f"{column} < ?")
            params.append(to_utc_iso(end + timedelta(days=1)))
        else:
            conditions.append(f"{column} <= ?")
            params.append(to_utc_iso(end))
    if start is not None and end is not None:
        start_utc = to_utc_iso(start)
        end_utc = to_utc_iso(end)
        if start_utc > end_utc:
            raise ValueError(
                f"start_date {start_date!r} is after end_date {end_date!r}; swap them or "
                "leave one out"
            )
    return conditions, params
