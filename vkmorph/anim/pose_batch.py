"""Poses of many frames at once: clip sampling, node world matrices and skinning palettes, vectorized numpy.

The per-frame path (``AnimationPlayer.apply`` into a ``Skeleton``, then ``Skeleton.world_matrices`` /
``skin_matrices``) loops over channels and nodes in Python for every frame; a bake of hundreds of frames spends
most of its time there. ``PoseBatch`` computes the same numbers for a whole batch of frames: every channel is
sampled at all the batch's times in one vectorized call, local matrices of all nodes and frames in one go, and
world matrices one tree depth level at a time (a level's nodes only depend on the level above). Same formulas,
same float64, same order of products as ``anim/sampler.py`` and ``anim/skeleton.py``: a test compares them
frame by frame (``tests/anim/test_pose_batch.py``).
"""

from __future__ import annotations

import numpy as np

from ..asset.model import AnimationClip, SceneAsset


def _locate_many(times: np.ndarray, t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``sampler._locate`` for every entry of ``t``: segment index i and fraction a (0 at and beyond the ends)."""
    k = len(times)
    if k == 1:
        return np.zeros(len(t), np.int64), np.zeros(len(t))
    i = np.clip(np.searchsorted(times, t, side="right") - 1, 0, k - 1)
    inner = (t > times[0]) & (t < times[-1])
    i = np.where(t <= times[0], 0, np.where(t >= times[-1], k - 1, i))
    j = np.minimum(i + 1, k - 1)
    span = times[j] - times[i]
    with np.errstate(divide="ignore", invalid="ignore"):
        a = np.where(inner & (span > 0), (t - times[i]) / np.where(span > 0, span, 1.0), 0.0)
    return i, a


def _slerp_many(q0: np.ndarray, q1: np.ndarray, a: np.ndarray) -> np.ndarray:
    """``sampler.slerp`` row by row: shortest path, lerp when nearly identical, unit result."""
    d = np.einsum("fi,fi->f", q0, q1)
    flip = d < 0.0
    q1 = np.where(flip[:, None], -q1, q1)
    d = np.where(flip, -d, d)
    near = d > 1.0 - 1e-9
    th = np.arccos(np.clip(d, -1.0, 1.0))
    s = np.sin(th)
    safe = np.where(near, 1.0, s)
    w0 = np.where(near, 1.0 - a, np.sin((1 - a) * th) / safe)
    w1 = np.where(near, a, np.sin(a * th) / safe)
    q = w0[:, None] * q0 + w1[:, None] * q1
    return q / np.linalg.norm(q, axis=1, keepdims=True)


def sample_many(times, values, t, interpolation: str = "LINEAR", quaternion: bool = False) -> np.ndarray:
    """``sampler.sample`` at every time of ``t`` (F,): (F, components) float64."""
    times = np.asarray(times, np.float64)
    values = np.asarray(values, np.float64).reshape(len(values), -1)
    t = np.asarray(t, np.float64).reshape(-1)
    i, a = _locate_many(times, t)
    cubic = interpolation == "CUBICSPLINE"
    last = len(times) - 1
    j = np.minimum(i + 1, last)
    val_i = values[3 * i + 1] if cubic else values[i]
    hold = (interpolation == "STEP") | (a == 0.0) | (i >= last)
    if interpolation == "STEP":
        out = val_i.copy()
    elif cubic:
        dt = (times[j] - times[i])[:, None]
        p0, m0 = values[3 * i + 1], values[3 * i + 2] * dt
        p1, m1 = values[3 * j + 1], values[3 * j] * dt
        aa = a[:, None]
        a2, a3 = aa * aa, aa * aa * aa
        out = (2 * a3 - 3 * a2 + 1) * p0 + (a3 - 2 * a2 + aa) * m0 + (-2 * a3 + 3 * a2) * p1 + (a3 - a2) * m1
    elif quaternion:
        out = _slerp_many(val_i, values[j], a)
    else:
        out = (1 - a)[:, None] * val_i + a[:, None] * values[j]
    out = np.where(hold[:, None], val_i, out)
    if quaternion:
        n = np.linalg.norm(out, axis=1, keepdims=True)
        out = np.where(n > 0, out / np.where(n > 0, n, 1.0), np.array([0.0, 0.0, 0.0, 1.0]))
    return out


def trs_matrices(t: np.ndarray, q: np.ndarray, s: np.ndarray) -> np.ndarray:
    """``skeleton.trs_matrix`` for (..., 3) / (..., 4) / (..., 3) arrays: (..., 4, 4) float64."""
    x, y, z, w = (q[..., k] for k in range(4))
    m = np.zeros(t.shape[:-1] + (4, 4))
    # written element by element into m (no stacked temporaries: the crowd path evaluates 10^5-10^6 of these)
    m[..., 0, 0] = 1 - 2 * (y * y + z * z)
    m[..., 0, 1] = 2 * (x * y - z * w)
    m[..., 0, 2] = 2 * (x * z + y * w)
    m[..., 1, 0] = 2 * (x * y + z * w)
    m[..., 1, 1] = 1 - 2 * (x * x + z * z)
    m[..., 1, 2] = 2 * (y * z - x * w)
    m[..., 2, 0] = 2 * (x * z - y * w)
    m[..., 2, 1] = 2 * (y * z + x * w)
    m[..., 2, 2] = 1 - 2 * (x * x + y * y)
    m[..., :3, :3] *= s[..., None, :]
    m[..., :3, 3] = t
    m[..., 3, 3] = 1.0
    return m


def affine_inverses(m: np.ndarray) -> np.ndarray:
    """``skeleton.affine_inverse`` of (F, 4, 4): inverse, or the pseudo-inverse of the 3x3 where singular."""
    a, t = m[:, :3, :3], m[:, :3, 3]
    scale = np.maximum(np.abs(a).max(axis=(1, 2)), 1e-300)
    regular = np.abs(np.linalg.det(a / scale[:, None, None])) > 1e-12
    inv_a = np.empty_like(a)
    if regular.any():
        inv_a[regular] = np.linalg.inv(a[regular])
    if (~regular).any():
        inv_a[~regular] = np.linalg.pinv(a[~regular])
    out = np.zeros_like(m)
    out[:, :3, :3] = inv_a
    out[:, :3, 3] = -np.einsum("fij,fj->fi", inv_a, t)
    out[:, 3, 3] = 1.0
    return out


class PoseBatch:
    """Node transforms of a scene for many frames: ``sample`` a clip, then ``world_matrices`` and
    ``skin_matrices`` for all frames at once. The rest pose is each node's own TRS (as ``Skeleton`` starts)."""

    def __init__(self, scene: SceneAsset):
        self.scene = scene
        nodes = scene.nodes
        self.rest_t = np.array([n.translation for n in nodes], np.float64).reshape(-1, 3)
        self.rest_r = np.array([n.rotation for n in nodes], np.float64).reshape(-1, 4)
        self.rest_s = np.array([n.scale for n in nodes], np.float64).reshape(-1, 3)
        self.parent = np.array([-1 if n.parent is None else n.parent for n in nodes], np.int64)
        depth = np.zeros(len(nodes), np.int64)
        for i in parents_first(scene):            # parents first: a node's depth is its parent's + 1
            if self.parent[i] >= 0:
                depth[i] = depth[self.parent[i]] + 1
        self.levels = [np.flatnonzero(depth == d) for d in range(int(depth.max(initial=0)) + 1)]

    def sample(self, clip: AnimationClip | None, times) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(F, N, 3) translations, (F, N, 4) rotations, (F, N, 3) scales: the rest pose with every node channel
        of ``clip`` sampled at ``times`` (seconds, used as given: clamp them first as the caller wants)."""
        t = np.asarray(times, np.float64).reshape(-1)
        F = len(t)
        T = np.repeat(self.rest_t[None], F, 0)
        R = np.repeat(self.rest_r[None], F, 0)
        S = np.repeat(self.rest_s[None], F, 0)
        if clip is not None:
            arrays = {"translation": T, "rotation": R, "scale": S}
            for ch in clip.node_channels:      # in channel order: a later channel of the same path wins
                arrays[ch.path][:, ch.node] = sample_many(ch.times, ch.values, t, ch.interpolation,
                                                          quaternion=ch.path == "rotation")
        return T, R, S

    def world_matrices(self, T: np.ndarray, R: np.ndarray, S: np.ndarray) -> np.ndarray:
        """(F, N, 4, 4) world matrices: world[node] = world[parent] @ local[node], one depth level at a time."""
        world = trs_matrices(T, R, S)
        for level in self.levels[1:]:
            world[:, level] = world[:, self.parent[level]] @ world[:, level]
        return world

    def skin_matrices(self, world: np.ndarray, skin: int, mesh_node: int | None = None) -> np.ndarray:
        """(F, J, 4, 4) float32 palettes, as ``Skeleton.skin_matrices`` gives frame by frame."""
        s = self.scene.skins[skin]
        palette = world[:, s.joints] @ s.inverse_bind_matrices
        if mesh_node is not None:
            palette = affine_inverses(world[:, mesh_node])[:, None] @ palette
        return palette.astype(np.float32)


def parents_first(scene: SceneAsset) -> list[int]:
    """Pre-order over the node tree from its roots (parents before children), as ``Skeleton`` walks it."""
    order, stack = [], [i for i, n in enumerate(scene.nodes) if n.parent is None]
    while stack:
        i = stack.pop()
        order.append(i)
        stack.extend(reversed(scene.nodes[i].children))
    return order
