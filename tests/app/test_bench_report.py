"""vkmorph bench without a GPU: outputs refused up front, and the committed reports render from their JSON."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.helpers import ROOT
from vkmorph.app.bench import BYTE_MODEL, goals, markdown


def bench(*args):
    return subprocess.run([sys.executable, "-m", "vkmorph.app.cli", "bench", *map(str, args)], capture_output=True,
                          text=True, cwd=ROOT, timeout=60)


@pytest.mark.parametrize("flag,path,words", [("--json", "missing-folder/x.json", "does not exist"),
                                             ("--markdown", "bench.txt", "must end with"),
                                             ("--json", ".", "name a file")])
def test_bad_output_paths_fail_before_any_work(flag, path, words, tmp_path):
    r = bench(flag, tmp_path / path if path != "." else tmp_path)
    assert r.returncode == 2 and words in r.stderr and len(r.stderr.strip().splitlines()) == 1
    assert "device:" not in r.stdout            # nothing ran


def test_committed_h200_report_renders_with_its_goals():
    report = json.loads((ROOT / "bench" / "2026-11-30-h200.json").read_text())
    assert report["byte_model"] == BYTE_MODEL and "H200" in report["device"]
    text = markdown(report)
    assert text.count("\n| ") >= len(report["rows"]) + len(report["cpu_per_frame"])
    for row in report["rows"]:      # each case's floor and fraction agree with its own numbers
        assert row["fraction_min"] <= row["roofline_fraction"] <= row["fraction_max"]
        assert row["floor_mb"] * 1e6 == pytest.approx(row["vertices"] * 84 + row["active_deltas"] * 40, rel=1e-6)
    names = [g[0] for g in goals(report)]
    assert any("15,000" in n for n in names) and any("0.5" in n for n in names)
