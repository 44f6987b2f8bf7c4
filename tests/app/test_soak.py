"""Bounded memory: a short soak of headless frames and runtime create/destroy cycles (validation off: the layer's
own per-object records are not ours). ``make soak`` runs the long version."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.helpers import ROOT

pytestmark = pytest.mark.gpu


def test_short_soak_stays_within_bounds():
    r = subprocess.run([sys.executable, "-m", "vkmorph.app.soak", "--frames", "400", "--cycles", "40",
                        "--max-kib-per-1000-frames", "4096", "--max-kib-per-cycle", "64"],
                       capture_output=True, text=True, cwd=ROOT, timeout=300,
                       env={**os.environ, "VKMORPH_VALIDATION": "0"})   # the loader/driver paths stay as given
    assert r.returncode == 0, r.stdout + r.stderr
    assert "live objects after: none" in r.stdout
