"""Node world matrices from the hierarchy and skinning palettes (column-vector convention, M @ v).

``Skeleton`` is the skeleton half of the scene's per-frame state (``anim/scene_state.py``; the morph half is
``morph/state.SceneMorphPose``). Its invariants:

- The local translation / rotation / scale arrays are read-only views; ``set_trs``, ``set_local`` and ``reset``
  are the only ways to change them, so every change moves a version.
- ``version`` moves on every real change; ``local_versions[node]`` is the value it had when the node's own TRS
  last changed, ``world_versions()[node]`` the latest of those over the node and its ancestors (its world matrix
  changed then). Consumers (the renderer, ``MorphRuntime``'s draw list, bounds) keep the versions they applied and
  compare; reading has no side effect.
- World matrices are computed for all nodes at once: the TRS matrices in one vectorized step, then one batched
  matrix product per depth of the hierarchy (parents always precede their children in that order).
"""

from __future__ import annotations

import numpy as np

from ..asset.model import SceneAsset
from ..errors import UsageError

PATHS = ("translation", "rotation", "scale")


def trs_matrix(t: np.ndarray, q: np.ndarray, s: np.ndarray) -> np.ndarray:
    """One 4x4 from translation, unit quaternion (x, y, z, w) and scale."""
    return trs_matrices(np.asarray(t, np.float64)[None], np.asarray(q, np.float64)[None],
                        np.asarray(s, np.float64)[None])[0]


def trs_matrices(t: np.ndarray, q: np.ndarray, s: np.ndarray) -> np.ndarray:
    """(N, 4, 4) from (N, 3) translations, (N, 4) quaternions (x, y, z, w) and (N, 3) scales."""
    x, y, z, w = (q[:, k] for k in range(4))
    n = len(t)
    m = np.zeros((n, 4, 4))
    m[:, 0, 0] = 1 - 2 * (y * y + z * z)
    m[:, 0, 1] = 2 * (x * y - z * w)
    m[:, 0, 2] = 2 * (x * z + y * w)
    m[:, 1, 0] = 2 * (x * y + z * w)
    m[:, 1, 1] = 1 - 2 * (x * x + z * z)
    m[:, 1, 2] = 2 * (y * z - x * w)
    m[:, 2, 0] = 2 * (x * z - y * w)
    m[:, 2, 1] = 2 * (y * z + x * w)
    m[:, 2, 2] = 1 - 2 * (x * x + y * y)
    m[:, :3, :3] *= s[:, None, :]
    m[:, :3, 3] = t
    m[:, 3, 3] = 1.0
    return m


def _read_only(a: np.ndarray) -> np.ndarray:
    v = a.view()
    v.flags.writeable = False
    return v


class Skeleton:
    """Local TRS per node (animated by the player) and world matrices recomputed on demand."""

    def __init__(self, scene: SceneAsset):
        self.scene = scene
        nodes = scene.nodes
        self._rest = tuple(np.array([getattr(n, p) for n in nodes], np.float64).reshape(-1, k)
                           for p, k in zip(PATHS, (3, 4, 3)))
        self._local = {p: a.copy() for p, a in zip(PATHS, self._rest)}
        self._views = {p: _read_only(a) for p, a in self._local.items()}
        self._version = 0
        self._local_versions = np.zeros(len(nodes), np.int64)
        self._world = self._world_versions = None
        self._world_version = -1
        self._palettes: dict[int, tuple[int, np.ndarray]] = {}
        self.parents = np.array([-1 if n.parent is None else n.parent for n in nodes], np.int64)
        self._levels = self._depth_levels()

    def _depth_levels(self) -> list[np.ndarray]:
        """Node indices per depth (roots first); a node's parent is always in the level before its own."""
        depth = np.full(len(self.parents), -1, np.int64)
        order, stack = [], [i for i, p in enumerate(self.parents) if p < 0]
        while stack:                      # pre-order walk: a parent's depth is known before its children's
            i = stack.pop()
            order.append(i)
            p = self.parents[i]
            depth[i] = 0 if p < 0 else depth[p] + 1
            stack.extend(reversed(self.scene.nodes[i].children))
        if len(order) != len(self.parents):
            raise UsageError("the node hierarchy is not a forest (a node is unreachable from every root)")
        return [np.flatnonzero(depth == d) for d in range(int(depth.max(initial=-1)) + 1)]

    # ------------------------------------------------------------------ reading (no side effects)
    @property
    def translation(self) -> np.ndarray:
        return self._views["translation"]

    @property
    def rotation(self) -> np.ndarray:
        return self._views["rotation"]

    @property
    def scale(self) -> np.ndarray:
        return self._views["scale"]

    @property
    def version(self) -> int:
        return self._version

    @property
    def local_versions(self) -> np.ndarray:
        return _read_only(self._local_versions)

    # ------------------------------------------------------------------ setters
    def _moved(self, nodes) -> None:
        self._version += 1
        self._local_versions[nodes] = self._version

    def set_trs(self, node: int, path: str, value: np.ndarray) -> bool:
        """One node's translation, rotation (x, y, z, w) or scale; True when it changed."""
        try:
            arr = self._local[path]
        except KeyError:
            raise UsageError(f"path must be one of {PATHS}, got {path!r}") from None
        if isinstance(node, bool) or not isinstance(node, (int, np.integer)) or not 0 <= node < len(arr):
            raise UsageError(f"node {node!r} out of range: the scene has {len(arr)} nodes")
        v = self._checked(value, path, arr.shape[1:], f"node {node}")
        if np.array_equal(arr[node], v):
            return False
        arr[node] = v
        self._moved(int(node))
        return True

    @staticmethod
    def _checked(value, path: str, shape: tuple, where: str) -> np.ndarray:
        """``value`` as float64 of ``shape`` with finite entries, else one UsageError naming what and where."""
        try:
            v = np.asarray(value, np.float64)
        except (TypeError, ValueError):
            raise UsageError(f"{where}: {path} must be numbers, got {value!r:.80}") from None
        if v.shape != shape:
            raise UsageError(f"{where}: {path} must have shape {shape}, got {v.shape}")
        if not np.isfinite(v).all():
            raise UsageError(f"{where}: {path} has a non-finite value")
        return v

    def set_local(self, translation=None, rotation=None, scale=None) -> int:
        """Every node's TRS at once ((N, 3), (N, 4), (N, 3); None keeps one); returns how many nodes changed."""
        changed = np.zeros(len(self.parents), bool)
        for path, value in zip(PATHS, (translation, rotation, scale)):
            if value is None:
                continue
            arr = self._local[path]
            v = self._checked(value, path, arr.shape, "set_local")
            diff = (v != arr).any(axis=1)
            arr[diff] = v[diff]
            changed |= diff
        if changed.any():
            self._moved(np.flatnonzero(changed))
        return int(changed.sum())

    def reset(self) -> int:
        """Back to the file's rest pose (only nodes that moved get a new version); returns how many changed."""
        return self.set_local(*self._rest)

    # ------------------------------------------------------------------ derived, cached per version
    def _update_world(self) -> None:
        if self._world_version == self._version:
            return
        local = trs_matrices(self._local["translation"], self._local["rotation"], self._local["scale"])
        world = local                                 # roots: world = local; deeper levels in place below
        wv = self._local_versions.copy()
        for level in self._levels[1:]:
            parents = self.parents[level]
            world[level] = world[parents] @ local[level]
            wv[level] = np.maximum(wv[level], wv[parents])
        self._world, self._world_versions, self._world_version = world, wv, self._version
        self._world_ro, self._world_versions_ro = _read_only(world), _read_only(wv)

    def world_matrices(self) -> np.ndarray:
        """(N, 4, 4) float64 world matrices (read-only), cached until a local transform changes."""
        self._update_world()
        return self._world_ro

    def world_versions(self) -> np.ndarray:
        """(N,) int64 (read-only): the version at which each node's world matrix last changed."""
        self._update_world()
        return self._world_versions_ro

    def skin_version(self, skin: int) -> int:
        """The version at which the skin's palette (``skin_matrices(skin)``) last changed."""
        joints = self.scene.skins[skin].joints
        return int(self.world_versions()[joints].max(initial=0))

    def skin_matrices(self, skin: int, mesh_node: int | None = None) -> np.ndarray:
        """(J, 4, 4) float32 skinning palette.

        ``mesh_node=None``: joint world x inverse bind, i.e. skinned positions in world space (glTF: the skinned
        mesh node's own transform is ignored), so draw with an identity model matrix; nothing is inverted. Cached
        per skin until one of its joints moves (a copy is returned).
        With ``mesh_node``: inverse(mesh node world) x joint world x inverse bind, positions in that node's
        space. A singular mesh node (scaled to 0, e.g. to hide it in a clip) has no inverse there; its
        pseudo-inverse is used, so the result is the projection onto the node's collapsed space (exact again
        as soon as the scale comes back), never a ``LinAlgError``.
        """
        world = self.world_matrices()
        s = self.scene.skins[skin]
        if mesh_node is not None:
            palette = affine_inverse(world[mesh_node])[None] @ (world[s.joints] @ s.inverse_bind_matrices)
            return palette.astype(np.float32)
        v = self.skin_version(skin)
        hit = self._palettes.get(skin)
        if hit is None or hit[0] != v:
            hit = self._palettes[skin] = (v, (world[s.joints] @ s.inverse_bind_matrices).astype(np.float32))
        return hit[1].copy()


def affine_inverse(m: np.ndarray) -> np.ndarray:
    """Inverse of an affine 4x4 (column vectors); the pseudo-inverse of its 3x3 part where that is singular."""
    a, t = m[:3, :3], m[:3, 3]
    scale = max(float(np.abs(a).max()), 1e-300)
    if abs(np.linalg.det(a / scale)) > 1e-12:
        inv_a = np.linalg.inv(a)
    else:
        inv_a = np.linalg.pinv(a)
    out = np.eye(4)
    out[:3, :3] = inv_a
    out[:3, 3] = -inv_a @ t
    return out
