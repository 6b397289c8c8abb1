"""The language server's idle collector (server/collector.py) freezes the young generation
an analysis of a long document leaves instead of walking it (2-3 s for the youngest
generation of a 100,000-line @main, 11 s for a full collection, which a hover that came
meanwhile waited for), and collects as CPython would otherwise.  Counted calls, no clock."""

from __future__ import annotations

from types import SimpleNamespace

from relaylens.server import collector


def idle_with(monkeypatch, count: tuple[int, int, int]) -> list[str]:
    calls: list[str] = []
    fake = SimpleNamespace(get_count=lambda: count, freeze=lambda: calls.append("freeze"),
                           collect=lambda generation=2: calls.append(f"collect {generation}"))
    monkeypatch.setattr(collector, "gc", fake)
    idle = collector.IdleCollector(busy=lambda: False)
    idle._idle()
    return calls


def test_an_analysis_sized_young_generation_is_frozen_not_walked(monkeypatch) -> None:
    assert idle_with(monkeypatch, (collector.FREEZE_OBJECTS, 0, 0)) == ["freeze"]
    assert idle_with(monkeypatch, (3_000_000, 9, 9)) == ["freeze"]


def test_a_few_young_objects_are_collected_as_cpython_would(monkeypatch) -> None:
    assert idle_with(monkeypatch, (5_000, 0, 0)) == ["collect 0"]
    assert idle_with(monkeypatch, (5_000, 10, 0)) == ["collect 1"]
    assert idle_with(monkeypatch, (5_000, 10, 10)) == ["collect 2"]
    assert idle_with(monkeypatch, (100, 0, 0)) == []
