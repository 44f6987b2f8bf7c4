"""Hostile files (issue 27) cost bounded time and memory: each generated case runs in a child process with a
time limit that fails the test (generous, 120 s: a loaded CI machine never trips it on a healthy build;
``HOSTILE_TIMEOUT`` changes it) and a peak-RSS bound read from ``resource`` usage of the child
(tests/asset/hostile_run.py), and ends with exit 0 or 2 and one line (warnings aside). Only the harness is
imported here, so this file runs against any version of vkmorph."""

from __future__ import annotations

import os

import pytest

from tests.asset.hostile_files import CASES
from tests.asset.hostile_run import command, run_child

TIME_LIMIT_S = float(os.environ.get("HOSTILE_TIMEOUT", "120"))


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.gpu) if c.command == "render" else n
                                  for n, c in CASES.items()])
def test_hostile_case_ends_in_one_line_within_time_and_memory(tmp_path, name):
    case = CASES[name]
    path = case.build(tmp_path)
    o = run_child(command(case, path), TIME_LIMIT_S, case.env)
    assert o.status is not None, f"{name}: no answer in {TIME_LIMIT_S} s"
    lines = o.stderr.strip().splitlines()
    errors = [ln for ln in lines if not ln.startswith(("warning:", "vkmorph: warning:"))]
    assert o.status in case.expect, f"{name}: exit {o.status}\n{o.stderr[-1500:]}"
    assert "Traceback" not in o.stderr and "internal error" not in o.stderr, o.stderr[-1500:]
    if o.status == 2:
        assert len(errors) == 1, lines
    else:
        assert not errors, lines
    if case.says:
        assert any(case.says in ln for ln in lines), lines
    if case.command in ("textures", "render"):  # every image problem is a warning, the render goes on
        assert any("rendered without it" in ln for ln in lines), lines
    assert o.peak_mb < case.rss_mb, f"{name}: peak RSS {o.peak_mb:.0f} MB >= {case.rss_mb} MB"
