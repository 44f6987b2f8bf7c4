"""`vkmorph morph --weights` takes any finite weight (glTF weights are not limited to [0, 1]): no silent clamp."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

from tests.helpers import ROOT
from vkmorph import load_scene
from vkmorph.asset.importer import default_scene_path
from vkmorph.morph.reference import morph_reference


@pytest.mark.gpu
def test_morph_cli_negative_and_overdriven_weights(tmp_path):
    out = tmp_path / "o.npz"
    cmd = ["morph", str(default_scene_path()), "--weights", "2,-1", "--out", str(out)]
    r = subprocess.run([sys.executable, "-m", "vkmorph.app.cli", *cmd], capture_output=True, text=True, cwd=ROOT,
                       env={**os.environ, "VKMORPH_VALIDATION": "1"}, timeout=300)
    assert r.returncode == 0, r.stderr
    scene = load_scene()
    with np.load(out) as z:
        for i, prim in enumerate(scene.primitives):
            if prim.morph_targets:
                p, n, _ = morph_reference(prim, [2.0, -1.0])
                np.testing.assert_allclose(z[f"p{i}/position"], p, atol=1e-5)
                np.testing.assert_allclose(z[f"p{i}/normal"], n, atol=1e-5)
