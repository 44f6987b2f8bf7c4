"""vkmorph bench without a GPU: outputs refused up front, and the committed reports render from their JSON."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

import pytest

from tests.helpers import ROOT
from vkmorph.app.bench import BYTE_MODEL, goals, markdown


def bench(*args):
    return subprocess.run([sys.executable, "-m", "vkmorph.app.cli", "bench", *map(str, args)], capture_output=True,
                          text=True, cwd=ROOT, timeout=900)


@pytest.mark.parametrize("flag,path,words", [("--json", "missing-folder/x.json", "does not exist"),
                                             ("--markdown", "bench.txt", "must end with"),
                                             ("--json", ".", "name a file")])
def test_bad_output_paths_fail_before_any_work(flag, path, words, tmp_path):
    r = bench(flag, tmp_path / path if path != "." else tmp_path)
    assert r.returncode == 2 and words in r.stderr and len(r.stderr.strip().splitlines()) == 1
    assert "device:" not in r.stdout            # nothing ran


@pytest.mark.parametrize("name", sorted(p.name for p in (ROOT / "bench").glob("2026-11-30-h200*.json")
                                         if json.loads(p.read_text()).get("rows")))
def test_committed_h200_report_renders_with_its_goals(name):
    report = json.loads((ROOT / "bench" / name).read_text())
    assert report["byte_model"] == BYTE_MODEL and "H200" in report["device"]
    text = markdown(report)
    assert text.count("\n| ") >= len(report["rows"]) + len(report["cpu_per_frame"])
    for row in report["rows"]:      # each case's floor and fraction agree with its own numbers
        assert row["fraction_min"] <= row["roofline_fraction"] <= row["fraction_max"]
        assert row["floor_mb"] * 1e6 == pytest.approx(row["vertices"] * 84 + row["active_deltas"] * 40, rel=1e-6)
    names = [g[0] for g in goals(report)]
    assert any("15,000" in n for n in names) and any("0.5" in n for n in names)


def test_reports_are_written_all_or_nothing(tmp_path, monkeypatch):
    """write_reports goes through vkmorph.outputs.atomic_write: JSON and markdown land whole, and a failure
    while producing the markdown leaves the previous file untouched (no truncated half report)."""
    from argparse import Namespace

    import vkmorph.app.bench as bench_mod

    report = json.loads((ROOT / "bench" / "2026-11-30-h200.json").read_text())
    args = Namespace(json=tmp_path / "b.json", markdown=tmp_path / "b.md", plot=None)
    bench_mod.write_reports(report, args)
    assert json.loads(args.json.read_text()) == report
    assert args.markdown.read_text() == markdown(report)

    def broken(_report):
        raise RuntimeError("markdown failed")

    monkeypatch.setattr(bench_mod, "markdown", broken)
    with pytest.raises(RuntimeError):
        bench_mod.write_reports(report, args)
    assert args.markdown.read_text() == markdown(report)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["b.json", "b.md"]     # no temporary left
def test_slots_section_times_both_and_renders_the_ratio(ctx):
    """Morph + draw per frame with 1 and 3 output slots, 3 frames in flight as events: sync-validation clean
    (the fixture fails on any message; without the events frame N+3's morph would race frame N's draw), each
    slot's output matches numpy, and the report shows both timings and the ratio."""
    from vkmorph.app.bench import Case, WindowTimer, slots_overlap

    timer = WindowTimer(ctx)
    try:
        s = slots_overlap(ctx, timer, Case(3000, 8, 0.25, 5, "clustered"), 2, 0.0, 0.5)
    finally:
        timer.destroy()
    assert s["one_slot_us"] > 0 and s["slots_us"] > 0 and s["frames_per_try"] >= 2 * s["frames_in_flight"] + 1
    assert s["ratio_min"] <= s["ratio"] <= s["ratio_max"]
    assert s["max_error_one_slot"] < 1e-5 and s["max_error_slots"] < 1e-5
    report = {"date": "d", "device": "dev", "driver": "1", "rows": [], "cpu_per_frame": [], "characters": [],
              "slots": s}
    text = markdown(report)
    assert f"| 1 | {s['one_slot_us']:.1f} |" in text and f"| 3 | {s['slots_us']:.1f} |" in text
    assert f"3 slots / 1 slot: {s['ratio']:.3f}" in text and "frame N+1's morph may run" in text
    assert "| case |" not in text          # --only slots: no roofline tables


def test_only_slots_refuses_a_plot(tmp_path):
    from vkmorph.app.bench import check_outputs
    from vkmorph.errors import UsageError

    args = argparse.Namespace(only="slots", plot=str(tmp_path / "x.png"), json=None, markdown=None)
    with pytest.raises(UsageError, match="--only slots"):
        check_outputs(args)


@pytest.mark.gpu
def test_bake_section_measures_gpu_against_numpy_and_renders():
    """The bench's bake line (issue 17): RobotExpressive's first clip baked on the GPU and in numpy, both
    timed, the GPU result within 1e-4 of numpy, rendered into the markdown report."""
    from vkmorph.app.bench import bake_line, bake_throughput

    b = bake_throughput(4)
    assert b is not None and b["frames"] == 4 and b["vertices"] > 1000 and b["clip"]
    assert b["gpu_vps"] > 0 and b["numpy_vps"] > 0 and b["speedup"] == pytest.approx(b["gpu_vps"] / b["numpy_vps"])
    assert b["max_error"] < 1e-4
    report = {"date": "d", "device": "dev", "driver": "1", "rows": [], "cpu_per_frame": [], "characters": [],
              "bake": b}
    assert bake_line(b) in markdown(report)
