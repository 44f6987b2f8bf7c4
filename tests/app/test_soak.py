"""Bounded memory: a short soak of headless frames and runtime create/destroy cycles (validation off: the layer's
own per-object records are not ours). ``make soak`` runs the long version."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.helpers import ROOT

pytestmark = pytest.mark.gpu


def _env() -> dict:
    """The loader/driver paths as given, validation off, and no layer forced on from outside (the bounds exclude
    the layer's own per-object records)."""
    env = {k: v for k, v in os.environ.items() if k not in ("VK_INSTANCE_LAYERS", "VK_LOADER_LAYERS_ENABLE")}
    return {**env, "VKMORPH_VALIDATION": "0"}


def test_short_soak_stays_within_bounds():
    """The limit is a safety net for a hung child, not a speed claim (a loaded 2-core host: ~40 s)."""
    r = subprocess.run([sys.executable, "-X", "faulthandler", "-m", "vkmorph.app.soak", "--frames", "400",
                        "--cycles", "40", "--max-kib-per-1000-frames", "4096", "--max-kib-per-cycle", "64"],
                       capture_output=True, text=True, cwd=ROOT, timeout=1800,
                       env=_env())
    assert r.returncode == 0, f"exit {r.returncode}\n{r.stdout}{r.stderr}"
    assert "live objects after: none" in r.stdout
