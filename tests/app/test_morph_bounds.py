"""``vkmorph morph --out`` stores ``p{i}/bounds`` for the pose it wrote: the box contains every written position
(read back from the GPU) and is tight (within 1.25x of the positions' own extent per axis), in each space."""

from __future__ import annotations

import numpy as np
import pytest

from tests.helpers import asset, vkmorph

ROBOT = ("RobotExpressive", "RobotExpressive.glb")
CASES = [
    (ROBOT, ["--clip", "Dance", "--time", "0.7", "--weight", "Surprised=1", "--skinned"]),   # node space
    (ROBOT, ["--clip", "Dance", "--time", "0.7", "--weight", "Surprised=1", "--skinned", "--world"]),
    (ROBOT, ["--clip", "Wave", "--time", "0.3", "--world", "--names"]),     # skinned ones left unskinned
    (("MorphStressTest", "MorphStressTest.gltf"), ["--clip", "0", "--time", "1.1"]),
    (("MorphStressTest", "MorphStressTest.gltf"), ["--weights", "1,0,1,0,1,0,1,0", "--world"]),
    (("SimpleSkin", "SimpleSkin.gltf"), ["--clip", "0", "--time", "2.25", "--skinned"]),
]


@pytest.mark.gpu
@pytest.mark.parametrize("model,args", CASES, ids=lambda x: x[0] if isinstance(x, tuple) else " ".join(x))
def test_morph_out_bounds_contain_positions_and_are_tight(tmp_path, model, args):
    out = tmp_path / "o.npz"
    r = vkmorph("morph", asset(*model), *args, "--out", out)
    assert r.returncode == 0, r.stderr
    with np.load(out) as z:
        keys = [k[:-len("/position")] for k in z.files if k.endswith("/position")]
        assert keys and all(f"{k}/bounds" in z.files for k in keys), z.files
        for k in keys:
            p, b = z[f"{k}/position"].astype(np.float64), z[f"{k}/bounds"]
            assert b.shape == (2, 3) and b.dtype == np.float32, (k, b.shape, b.dtype)
            lo, hi = p.min(axis=0), p.max(axis=0)
            assert (b[0] <= lo).all() and (hi <= b[1]).all(), (k, b, lo, hi)
            slack = 1e-5 * max(float(np.abs(p).max()), 1e-6)   # flat primitives: zero extent on an axis
            assert ((b[1] - b[0]) <= 1.25 * (hi - lo) + slack).all(), (k, b, lo, hi)
