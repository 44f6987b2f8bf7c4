"""glTF sampler interpolation as the file says: STEP, LINEAR (slerp for rotations) and CUBICSPLINE (Hermite, also
for weights channels), played by AnimationPlayer and checked against an independent evaluation of the glTF
specification's formulas (quaternion power for slerp, the spec appendix's Hermite form)."""

from __future__ import annotations

import numpy as np
import pytest

from tests.gltf_write import GltfWriter, grid
from vkmorph import load_scene
from vkmorph.anim.player import AnimationPlayer
from vkmorph.anim.skeleton import Skeleton
from vkmorph.morph.state import SceneMorphPose

TIMES = np.array([0.0, 0.5, 1.5, 2.0])
MODES = ("STEP", "LINEAR", "CUBICSPLINE")
PATHS = {"weights": 2, "translation": 3, "rotation": 4, "scale": 3}


def _qmul(a, b):
    ax, ay, az, aw = a
    bx, by, bz, bw = b
    return np.array([aw * bx + ax * bw + ay * bz - az * by, aw * by - ax * bz + ay * bw + az * bx,
                     aw * bz + ax * by - ay * bx + az * bw, aw * bw - ax * bx - ay * by - az * bz])


def _qpow(q, s):
    """q^s for a unit quaternion through its axis-angle form."""
    angle = 2 * np.arccos(np.clip(q[3], -1, 1))
    axis = q[:3] / (np.linalg.norm(q[:3]) or 1.0)
    return np.concatenate([axis * np.sin(angle * s / 2), [np.cos(angle * s / 2)]])


def spec_value(path: str, mode: str, values: np.ndarray, t: float) -> np.ndarray:
    """Independent evaluation of a glTF sampler at time t (values as stored: 3 per key for CUBICSPLINE)."""
    K = len(TIMES)
    key = values[1::3] if mode == "CUBICSPLINE" else values
    if t <= TIMES[0]:
        out = key[0]
    elif t >= TIMES[-1]:
        out = key[-1]
    else:
        k = max(i for i in range(K) if TIMES[i] <= t)
        td = TIMES[k + 1] - TIMES[k]
        s = (t - TIMES[k]) / td
        if mode == "STEP":
            out = key[k]
        elif mode == "LINEAR" and path == "rotation":
            q0, q1 = key[k], key[k + 1]
            if np.dot(q0, q1) < 0:
                q1 = -q1
            rel = _qmul(q1, q0 * [-1, -1, -1, 1])          # q1 q0^-1
            out = _qmul(_qpow(rel, s), q0)
        elif mode == "LINEAR":
            out = key[k] * (1 - s) + key[k + 1] * s
        else:
            a_next, v0, b0, v1 = values[3 * (k + 1)], values[3 * k + 1], values[3 * k + 2], values[3 * (k + 1) + 1]
            out = ((2 * s**3 - 3 * s**2 + 1) * v0 + td * (s**3 - 2 * s**2 + s) * b0
                   + (-2 * s**3 + 3 * s**2) * v1 + td * (s**3 - s**2) * a_next)
    out = np.asarray(out, np.float64)
    return out / np.linalg.norm(out) if path == "rotation" else out


def channel_values(path: str, mode: str, rng) -> np.ndarray:
    n = PATHS[path]
    keys = rng.uniform(0.0, 1.0, (len(TIMES), n)) if path == "weights" else rng.normal(0, 1, (len(TIMES), n))
    if path == "rotation":
        keys /= np.linalg.norm(keys, axis=1, keepdims=True)
    if path == "scale":
        keys = 1.0 + 0.3 * keys
    if mode != "CUBICSPLINE":
        return keys
    tangents = rng.normal(0, 0.8, (len(TIMES), 2, n))
    return np.stack([tangents[:, 0], keys, tangents[:, 1]], axis=1).reshape(-1, n)


def write_file(tmp_path, rng):
    pos, idx = grid(3)
    w = GltfWriter()
    w.mesh(pos, idx, targets=[np.tile([0, 0, 0.5], (len(pos), 1)), np.tile([0.5, 0, 0], (len(pos), 1))],
           target_names=["Up", "Right"])
    w.node("Face", mesh=0)
    w.node("Bone")
    expected = {}
    for mode in MODES:
        chans = []
        for path in PATHS:
            vals = channel_values(path, mode, rng)
            expected[(mode, path)] = vals
            chans.append((0 if path == "weights" else 1, path, TIMES, vals, mode))
        w.animation(mode.lower(), chans)
    return w.save(tmp_path / "modes.gltf"), expected


def test_each_interpolation_mode_matches_the_spec(tmp_path):
    path, expected = write_file(tmp_path, np.random.default_rng(11))
    scene = load_scene(path)                     # a CUBICSPLINE weights channel used to fail the import
    face, bone = scene.node_index("Face"), scene.node_index("Bone")
    assert [a.name for a in scene.animations] == ["step", "linear", "cubicspline"]
    skel = Skeleton(scene)
    pose = SceneMorphPose(scene)
    player = AnimationPlayer(scene, pose, skel)
    samples = np.concatenate([np.linspace(-0.2, 2.2, 37), TIMES, TIMES + 1e-4, TIMES - 1e-4])
    for mode in MODES:
        clip = scene.clip(mode.lower())
        assert {c.interpolation for c in clip.morph_channels + clip.node_channels} == {mode}
        assert clip.duration == pytest.approx(2.0)
        player.play(mode.lower(), loop=False)
        for t in samples:
            player.apply(float(t))
            got = {"weights": pose.weights(face), "translation": skel.translation[bone],
                   "rotation": skel.rotation[bone], "scale": skel.scale[bone]}
            for p in PATHS:
                want = spec_value(p, mode, expected[(mode, p)], float(t))
                if p == "rotation" and np.dot(want, got[p]) < 0:
                    want = -want                 # q and -q are one rotation
                np.testing.assert_allclose(got[p], want, atol=2e-6, err_msg=f"{mode} {p} t={t}")

