"""Runtime morph state with the two-level version cache (seed 000 MorphState / SceneMorphPose).

Versions move only on real change, so the GPU pass can skip weight uploads, dispatches and barriers for
anything that did not change, and per-frame Python work follows what changed rather than scene size.
"""

from __future__ import annotations

import numpy as np

from ..asset.model import SceneAsset
from ..errors import UsageError


def _check_finite(values: np.ndarray, what: str) -> None:
    if not np.isfinite(values).all():
        i = int(np.flatnonzero(~np.isfinite(values))[0])
        raise UsageError(f"{what}: weight {i} is not finite ({values[i]})")


class MorphState:
    """Weights of one primitive instance, clamped to ``weight_range`` (default [0, 1])."""

    __slots__ = ("_weights", "weight_range", "version", "_active")

    def __init__(self, target_count: int, weight_range: tuple[float, float] = (0.0, 1.0),
                 initial: np.ndarray | None = None):
        lo, hi = weight_range
        if not lo <= hi:
            raise UsageError(f"weight range {weight_range} is empty")
        self.weight_range = (float(lo), float(hi))
        self._weights = np.zeros(target_count, np.float32)
        self.version = 0
        self._active = 0
        if initial is not None:
            self.set_weights(initial)

    @property
    def target_count(self) -> int:
        return len(self._weights)

    @property
    def weights(self) -> np.ndarray:
        """A read-only view; use set_weight(s) to change (that is what moves the version)."""
        v = self._weights.view()
        v.flags.writeable = False
        return v

    @property
    def active_count(self) -> int:
        """Number of non-zero weights (targets that contribute)."""
        return self._active

    def set_weight(self, index: int, value: float) -> bool:
        if not 0 <= index < len(self._weights):
            raise UsageError(f"target index {index} out of range (0..{len(self._weights) - 1})")
        if not np.isfinite(value):
            raise UsageError(f"weight for target {index} is not finite ({value})")
        lo, hi = self.weight_range
        w = np.float32(min(max(float(value), lo), hi))
        if self._weights[index] == w:
            return False
        old_active = self._weights[index] != 0
        self._weights[index] = w
        self._active += int(w != 0) - int(old_active)
        self.version += 1
        return True

    def set_weights(self, values) -> bool:
        """Bulk set (numpy): one comparison, one version bump at most."""
        arr = np.asarray(values, dtype=np.float64).reshape(-1)
        if arr.shape[0] != len(self._weights):
            raise UsageError(f"expected {len(self._weights)} weights, got {arr.shape[0]}")
        _check_finite(arr, "set_weights")
        lo, hi = self.weight_range
        new = np.clip(arr, lo, hi).astype(np.float32)
        if np.array_equal(new, self._weights):
            return False
        self._weights[:] = new
        self._active = int(np.count_nonzero(new))
        self.version += 1
        return True


class SceneMorphPose:
    """Morph weights per node of a scene, with one version for the whole pose.

    All nodes' weights live in one flat float32 array (``flat``; node slices via ``slice_of``), which is exactly
    what the batched GPU pass uploads, and changed nodes are remembered until ``take_dirty()`` so per-frame work
    follows what changed. Weights are clamped to ``weight_range`` (default [0, 1]).
    """

    def __init__(self, scene: SceneAsset, weight_range: tuple[float, float] = (0.0, 1.0)):
        lo, hi = weight_range
        if not lo <= hi:
            raise UsageError(f"weight range {weight_range} is empty")
        self.scene = scene
        self.weight_range = (float(lo), float(hi))
        self._slices: dict[int, slice] = {}
        total = 0
        for i, node in enumerate(scene.nodes):
            if node.mesh is not None and scene.meshes[node.mesh].target_count:
                T = scene.meshes[node.mesh].target_count
                self._slices[i] = slice(total, total + T)
                total += T
        self.flat = np.zeros(total, np.float32)
        self._weights: dict[int, np.ndarray] = {i: self.flat[sl] for i, sl in self._slices.items()}
        for i, w in self._weights.items():
            dw = scene.nodes[i].default_weights
            if dw is not None and len(dw) == len(w) and np.isfinite(dw).all():
                w[:] = np.clip(dw, lo, hi)
        self.version = 0
        self._dirty: set[int] = set(self._weights)
        self._slot_node = np.zeros(total, np.int64)
        for i, sl in self._slices.items():
            self._slot_node[sl] = i

    @property
    def morph_nodes(self) -> list[int]:
        return list(self._weights)

    def slice_of(self, node: int) -> slice:
        return self._slices[self._node(node)]

    def _node(self, node: int | str) -> int:
        if isinstance(node, str):
            try:
                node = self.scene.node_index(node)
            except KeyError:
                raise UsageError(f"no node named {node!r}") from None
        if node not in self._weights:
            raise UsageError(f"node {node} has no morph targets")
        return node

    def set_weights(self, node: int | str, weights) -> bool:
        n = self._node(node)
        arr = np.asarray(weights, np.float64).reshape(-1)
        cur = self._weights[n]
        if arr.shape != cur.shape:
            raise UsageError(f"node {n}: expected {len(cur)} weights, got {arr.shape[0]}")
        _check_finite(arr, f"node {n}")
        new = np.clip(arr, *self.weight_range).astype(np.float32)
        if np.array_equal(new, cur):
            return False
        cur[:] = new
        self._dirty.add(n)
        self.version += 1
        return True

    def set_flat(self, values) -> int:
        """Set every node's weights at once from a flat array laid out like ``flat`` (vectorized: one
        comparison, no per-node Python work beyond the changed nodes). Returns how many nodes changed."""
        arr = np.asarray(values, np.float64).reshape(-1)
        if arr.shape != self.flat.shape:
            raise UsageError(f"expected {len(self.flat)} weights, got {arr.shape[0]}")
        _check_finite(arr, "set_flat")
        new = np.clip(arr, *self.weight_range).astype(np.float32)
        changed = new != self.flat
        if not changed.any():
            return 0
        self.flat[:] = new
        nodes = np.unique(self._slot_node[changed])
        self._dirty.update(nodes.tolist())
        self.version += 1
        return len(nodes)

    def weights(self, node: int | str) -> np.ndarray:
        v = self._weights[self._node(node)].view()
        v.flags.writeable = False
        return v

    def take_dirty(self) -> set[int]:
        """Nodes whose weights changed since the last call (all nodes before the first call)."""
        d, self._dirty = self._dirty, set()
        return d


class PoseBinding:
    """Pushes a SceneMorphPose into per-(node, primitive) MorphStates; level 1 of the version cache.

    ``states`` maps node index -> list of MorphState (one per morphing primitive of the node's mesh).
    """

    def __init__(self, pose: SceneMorphPose, states: dict[int, list[MorphState]]):
        self.pose, self.states = pose, states
        self.applied_version = -1

    def sync(self) -> bool:
        """Copy the pose into the states unless the pose version is unchanged (then O(1))."""
        if self.pose.version == self.applied_version:
            return False
        for node, sts in self.states.items():
            w = self.pose._weights[node]
            for st in sts:
                st.set_weights(w[: st.target_count])
        self.applied_version = self.pose.version
        return True
