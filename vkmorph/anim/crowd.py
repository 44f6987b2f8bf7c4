"""``CrowdState``: the per-frame state of N instances of one scene, vectorized over instances (no Vulkan).

Each instance has its own morph weights (a row of ``weights``, laid out like ``SceneMorphPose.flat``), its own
skeleton pose (local translation / rotation / scale of every node) and its own world transform (applied above
the scene's roots). Nothing is stored per instance but those arrays and two version stamps, so a crowd of
10,000 costs numpy work over (instances x nodes), never a Python loop per instance.

Invariants (as ``SceneState``'s, per instance instead of per node):

- The arrays are read-only views; the setters are the only writers, so every change moves a version.
- ``version`` moves on every real change; ``weight_versions[i]`` is the value it had when instance i's weights
  last changed, ``skeleton_versions[i]`` when its pose or transform did (0: never since creation). A consumer
  (the morph pass per output slot, the crowd draw list) keeps the versions it applied and compares: reading
  has no side effect, and an instance whose stamp did not move costs that consumer nothing.
- World matrices and palettes are cached per instance by its skeleton version: only instances that moved are
  recomputed (one vectorized ``PoseBatch`` evaluation over them).
- ``gpu_posed[i]``: instance i's skeleton pose is sampled on the GPU (``render/crowd_anim.CrowdAnimation``),
  not held here: ``local`` and the CPU palettes of such an instance are stale by design. Any setter of its local
  pose (``set_local``, ``play``, ``Instance.set_trs``, ``reset``) hands it back to the CPU (flag cleared, skeleton
  version stamped), so a host that poses an instance by hand gets exactly its values from that frame on; its
  world transform (``set_transforms``, stamped in ``transform_versions`` too) is an input of either path.

Weights are checked against the template pose's range (``SceneMorphPose``: ``UsageError``, or clamped with a
warning when the pose clamps); correctives and in-betweens added to the template pose apply to every instance.
"""

from __future__ import annotations

import numpy as np

from ..asset.model import AnimationClip, SceneAsset
from ..errors import UsageError
from ..morph.state import SceneMorphPose
from .pose_batch import PoseBatch, sample_many, trs_matrices


def _read_only(a: np.ndarray) -> np.ndarray:
    v = a.view()
    v.flags.writeable = False
    return v


class CrowdState:
    """Weights, skeleton poses and world transforms of ``count`` instances of ``scene``; ``pose`` is the
    template (layout, target names, weight range, rules) and the instances start at its current weights."""

    def __init__(self, scene: SceneAsset, count: int, pose: SceneMorphPose):
        if isinstance(count, bool) or not isinstance(count, (int, np.integer)) or count < 1:
            raise UsageError(f"instances must be an int >= 1, got {count!r}")
        self.scene, self.pose, self.count = scene, pose, int(count)
        N = self.count
        self._batch = PoseBatch(scene)
        self._start_weights = np.array(pose.flat, np.float32)
        self._weights = np.repeat(self._start_weights[None], N, 0)
        b = self._batch
        self._local = [np.repeat(a[None], N, 0) for a in (b.rest_t, b.rest_r, b.rest_s)]
        self._rest = [a.copy() for a in self._local]
        self._transform = np.repeat(np.eye(4)[None], N, 0)
        self.version = 0
        self._weight_versions = np.zeros(N, np.int64)
        self._skeleton_versions = np.zeros(N, np.int64)
        self._transform_versions = np.zeros(N, np.int64)
        self._gpu_posed = np.zeros(N, bool)
        # node-major (nodes, instances, 4, 4): a hierarchy level gathers its parents as whole contiguous rows
        self._world = np.zeros((len(scene.nodes), N, 4, 4))
        self._world_applied = np.full(N, -1, np.int64)
        # local matrices (nodes, instances, 4, 4), made on the first world evaluation from the rest pose; only
        # nodes some setter changed since the last evaluation are recomputed (a clip animates a few of them)
        self._local_m: np.ndarray | None = None
        self._dirty_nodes = np.zeros(len(scene.nodes), bool)
        self._palettes: dict[int, np.ndarray] = {}
        self._skin_alias: dict[tuple[bytes, bytes], int] = {}
        self._palette_applied: dict[int, np.ndarray] = {}

    # ------------------------------------------------------------------ reading (no side effects)
    def __len__(self) -> int:
        return self.count

    def __getitem__(self, i) -> Instance:
        return Instance(self, self._row(i))

    @property
    def weights(self) -> np.ndarray:
        """(instances, weight slots) float32, read-only; row i is laid out like ``SceneMorphPose.flat``."""
        return _read_only(self._weights)

    @property
    def weight_versions(self) -> np.ndarray:
        return _read_only(self._weight_versions)

    @property
    def skeleton_versions(self) -> np.ndarray:
        return _read_only(self._skeleton_versions)

    @property
    def transform_versions(self) -> np.ndarray:
        return _read_only(self._transform_versions)

    @property
    def gpu_posed(self) -> np.ndarray:
        """(instances,) bool, read-only: poses sampled on the GPU (see the module docstring)."""
        return _read_only(self._gpu_posed)

    def set_gpu_posed(self, rows, posed: bool) -> int:
        """Mark instances ``rows`` as posed on the GPU (True) or here (False); a change stamps their skeleton
        version (their palettes change source). Called by ``CrowdAnimation.play`` / ``stop``; returns how many
        changed."""
        r = self._rows(rows)
        hit = r[self._gpu_posed[r] != bool(posed)]
        if len(hit):
            self._gpu_posed[hit] = bool(posed)
            if not posed:
                self._dirty_nodes[:] = True     # its cached local matrices may predate its GPU time: redo them
            self._stamp(self._skeleton_versions, hit)
        return len(hit)

    @property
    def transforms(self) -> np.ndarray:
        """(instances, 4, 4) float64 world transform of each instance (above the scene's roots), read-only."""
        return _read_only(self._transform)

    @property
    def local(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(instances, nodes, 3 / 4 / 3) local translation, rotation (x, y, z, w), scale, read-only."""
        return tuple(_read_only(a) for a in self._local)

    def _row(self, i) -> int:
        if isinstance(i, bool) or not isinstance(i, (int, np.integer)) or not 0 <= i < self.count:
            raise UsageError(f"instance {i!r} out of range: the crowd has {self.count} instances")
        return int(i)

    def _rows(self, rows) -> np.ndarray:
        if rows is None:
            return np.arange(self.count)
        r = np.asarray(rows).reshape(-1)
        if r.dtype.kind not in "iu" or (len(r) and (r.min() < 0 or r.max() >= self.count)):
            raise UsageError(f"rows must be instance indices in [0, {self.count})")
        return r.astype(np.int64)

    # ------------------------------------------------------------------ setters
    def _stamp(self, which: np.ndarray, rows: np.ndarray) -> None:
        self.version += 1
        which[rows] = self.version

    def set_weights(self, i: int, node: int | str, weights) -> bool:
        """Instance i's weights of one node: a full sequence or a mapping {target name or index: weight}, checked
        and driven as ``SceneMorphPose.set_weights`` does. True when anything changed."""
        row, pose = self._row(i), self.pose
        n = pose._node(node)
        sl = pose.slice_of(n)
        cur = self._weights[row, sl]
        new = pose.resolved_weights(n, weights, cur)
        if np.array_equal(new, cur):
            return False
        self._weights[row, sl] = new
        self._stamp(self._weight_versions, np.array([row]))
        return True

    def set_all_weights(self, values, rows=None) -> int:
        """Every weight of the instances ``rows`` (None: all) at once from a (rows, slots) array: vectorized range
        check and compare; only rows that really changed are stamped. Returns how many changed."""
        r = self._rows(rows)
        arr = np.asarray(values, np.float64)
        if arr.shape != (len(r), self._weights.shape[1]):
            raise UsageError(f"expected weights of shape {(len(r), self._weights.shape[1])}, got {arr.shape}")
        lo, hi = self.pose.weight_range
        if not (np.isfinite(arr).all() and arr.min(initial=lo) >= lo and arr.max(initial=hi) <= hi):
            for n in self.pose.morph_nodes:   # rare path: name the first bad target, or clamp with a warning
                sl = self.pose.slice_of(n)
                arr[:, sl] = self.pose._checked(arr[:, sl].reshape(-1), n).reshape(len(r), -1)
        new = arr.astype(np.float32)
        for n in self.pose._rules:             # rules are per node; rows loop only where the scene has rules
            sl = self.pose.slice_of(n)
            for k in range(len(r)):
                self.pose._run_rules(n, new[k, sl])
        changed = (new != self._weights[r]).any(axis=1)
        if not changed.any():
            return 0
        hit = r[changed]
        self._weights[hit] = new[changed]
        self._stamp(self._weight_versions, hit)
        return len(hit)

    def set_local(self, translation=None, rotation=None, scale=None, rows=None) -> int:
        """Local TRS of every node of the instances ``rows`` (None: all): (rows, nodes, 3 / 4 / 3) arrays, None
        keeps one. Returns how many instances changed."""
        r = self._rows(rows)
        changed = self._gpu_posed[r].copy()     # a GPU-posed instance set by hand is the CPU's again: it changes
        if changed.any():
            self._gpu_posed[r] = False
            self._dirty_nodes[:] = True         # its cached local matrices may predate its GPU time: redo them
        for arr, value, what in zip(self._local, (translation, rotation, scale), ("translation", "rotation", "scale")):
            if value is None:
                continue
            v = np.asarray(value, np.float64)
            if v.shape != (len(r),) + arr.shape[1:]:
                raise UsageError(f"{what} must have shape {(len(r),) + arr.shape[1:]}, got {v.shape}")
            if not np.isfinite(v).all():
                raise UsageError(f"{what} has a non-finite value")
            ne = v != arr[r]
            diff = ne.reshape(len(r), -1).any(axis=1)
            if diff.any():
                arr[r[diff]] = v[diff]
                self._dirty_nodes |= ne.any(axis=(0, 2))
            changed |= diff
        if changed.any():
            self._stamp(self._skeleton_versions, r[changed])
        return int(changed.sum())

    def set_transforms(self, matrices, rows=None) -> int:
        """World transform (4 x 4, column vectors) of the instances ``rows`` (None: all); returns how many changed."""
        r = self._rows(rows)
        m = np.asarray(matrices, np.float64)
        if m.shape != (len(r), 4, 4) or not np.isfinite(m).all():
            raise UsageError(f"transforms must be {(len(r), 4, 4)} finite matrices, got shape {m.shape}")
        diff = (m != self._transform[r]).reshape(len(r), -1).any(axis=1)
        if diff.any():
            self._transform[r[diff]] = m[diff]
            self._stamp(self._skeleton_versions, r[diff])
            self._transform_versions[r[diff]] = self.version
        return int(diff.sum())

    def reset(self) -> None:
        """Every instance back to the weights it started with and the rest pose (only changes stamp)."""
        self.set_all_weights(np.repeat(self._start_weights[None], self.count, 0))
        self.set_local(*self._rest)

    def play(self, clip: AnimationClip | None, times, rows=None) -> int:
        """Sample ``clip`` at one time per instance (``times``: (rows,) seconds, used as given) into the weights and
        skeleton poses of ``rows`` (None: all): every channel at all those times in one vectorized call
        (``pose_batch.sample_many``), no Python work per instance. Returns how many instances changed."""
        r = self._rows(rows)
        t = np.asarray(times, np.float64).reshape(-1)
        if len(t) != len(r):
            raise UsageError(f"play needs one time per instance: {len(r)} rows, {len(t)} times")
        T, R, S = self._batch.sample(clip, t)
        moved = self.set_local(T, R, S, rows=r)
        if clip is not None and clip.morph_channels:
            W = self._weights[r].astype(np.float64)
            for ch in clip.morph_channels:
                if not self.pose.has_targets(ch.node):
                    continue
                sl = self.pose.slice_of(ch.node)
                w = sample_many(ch.times, ch.values, t, ch.interpolation)
                k = min(sl.stop - sl.start, w.shape[1])
                W[:, sl.start:sl.start + k] = w[:, :k]
            moved = max(moved, self.set_all_weights(W, rows=r))
        return moved

    def play_weights(self, clips: list[AnimationClip], clip_of, times, rows=None) -> int:
        """Morph weights of instances ``rows`` (None: all) from their own clips: instance ``rows[k]`` plays
        ``clips[clip_of[k]]`` at ``times[k]`` (a ``clip_of`` outside ``clips`` keeps that row's weights). One
        vectorized ``sample_many`` per (clip, morph channel) over that clip's rows, one ``set_all_weights`` for
        all: no Python work per instance (the GPU crowd animation samples the skeleton; weights stay here, where
        the morph pass's version-gated upload reads them). Returns how many instances changed."""
        r = self._rows(rows)
        c = np.asarray(clip_of).reshape(-1)
        t = np.asarray(times, np.float64).reshape(-1)
        if len(c) != len(r) or len(t) != len(r):
            raise UsageError(f"play_weights needs one clip and one time per row: {len(r)} rows, {len(c)} clips, "
                             f"{len(t)} times")
        W = self._weights[r].astype(np.float64)
        order = np.argsort(c, kind="stable")        # rows grouped by clip: one sort, then a slice per clip
        bounds = np.searchsorted(c[order], np.arange(len(clips) + 1))
        for ci, clip in enumerate(clips):
            k = order[bounds[ci]:bounds[ci + 1]]
            if not len(k) or not clip.morph_channels:
                continue
            for ch, const in self._weight_plan(clip):
                sl = self.pose.slice_of(ch.node)
                w = const if const is not None else sample_many(ch.times, ch.values, t[k], ch.interpolation)
                m = min(sl.stop - sl.start, w.shape[-1])
                W[k, sl.start:sl.start + m] = w[..., :m]
        return self.set_all_weights(W, rows=r)

    def _weight_plan(self, clip: AnimationClip) -> list:
        """(channel, constant value or None) per morph channel of ``clip`` that drives targets, made once per
        clip: a channel whose values are all equal (exporters write them for clips that leave the face alone)
        is that value at every time, so it costs no sampling."""
        plans = self.__dict__.setdefault("_weight_plans", {})
        plan = plans.get(id(clip))
        if plan is None or plan[0] is not clip:
            chans = []
            for ch in clip.morph_channels:
                if not self.pose.has_targets(ch.node):
                    continue
                v = np.asarray(ch.values, np.float64).reshape(len(ch.values), -1)
                const = v[0] if len(v) and (v == v[0]).all() else None
                chans.append((ch, const))
            plan = plans[id(clip)] = (clip, chans)
        return plan[1]

    # ------------------------------------------------------------------ derived, cached per instance version
    def stale_rows(self, applied: np.ndarray) -> np.ndarray:
        """Instances whose skeleton version differs from ``applied`` (one vectorized compare)."""
        return np.flatnonzero(self._skeleton_versions != applied)

    def _cpu_stale(self, applied: np.ndarray) -> np.ndarray:
        """``stale_rows`` that are posed here; GPU-posed ones are marked applied without CPU work (their CPU
        world matrices and palettes are stale by design: the GPU pass computes them)."""
        rows = self.stale_rows(applied)
        gpu = self._gpu_posed[rows]
        if gpu.any():
            applied[rows[gpu]] = self._skeleton_versions[rows[gpu]]
            rows = rows[~gpu]
        return rows

    def world_matrices(self) -> np.ndarray:
        """(instances, nodes, 4, 4) float64 world matrices (instance transform x the node's world), a read-only
        view (node-major underneath); only instances that moved since the last call are recomputed."""
        rows = self._cpu_stale(self._world_applied)
        if len(rows):
            fresh, moved = self._split_fresh(rows)
            if len(fresh):        # never changed: the rest pose under an identity transform, computed once
                self._world[:, fresh] = self._rest_world()[:, None]
            if len(moved):
                self._world[:, self._index(moved)] = self._moved_world(moved)
            # every instance whose pose moved was just evaluated: the local matrices are current for all
            self._dirty_nodes[:] = False
            self._world_applied[rows] = self._skeleton_versions[rows]
        return _read_only(self._world.transpose(1, 0, 2, 3))

    def _moved_world(self, moved: np.ndarray) -> np.ndarray:
        """(nodes, moved, 4, 4): the instance transform enters at the roots (one product per root, not per
        node), then one batched product per hierarchy level, parents gathered as contiguous node rows."""
        b = self._batch
        sel = self._index(moved)
        if self._local_m is None:
            rest = trs_matrices(*(a[0] for a in self._rest))
            self._local_m = np.repeat(rest[:, None], self.count, 1)
        dn = np.flatnonzero(self._dirty_nodes)
        if len(dn):
            fresh = trs_matrices(*(np.ascontiguousarray(a[sel][:, dn].transpose(1, 0, 2)) for a in self._local))
            if isinstance(sel, slice):
                self._local_m[dn] = fresh
            else:
                self._local_m[np.ix_(dn, moved)] = fresh
        world = self._local_m[:, sel] if not isinstance(sel, slice) else self._local_m.copy()
        roots = b.levels[0]
        world[roots] = self._transform[sel][None] @ world[roots]
        for level in b.levels[1:]:
            world[level] = world[b.parent[level]] @ world[level]
        return world

    def _index(self, rows: np.ndarray):
        """``rows`` as an index: a slice when it is every instance (the all-changing crowd: no gather/scatter)."""
        return slice(None) if len(rows) == self.count else rows

    def _split_fresh(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(rows never changed since creation, the others): building a crowd costs one pose, not N."""
        zero = self._skeleton_versions[rows] == 0
        return rows[zero], rows[~zero]

    def _rest_world(self) -> np.ndarray:
        if not hasattr(self, "_rest_world_cache"):
            self._rest_world_cache = self._batch.world_matrices(*(a[:1] for a in self._rest))[0]
        return self._rest_world_cache

    def skin_matrices(self, skin: int) -> np.ndarray:
        """(instances, joints, 4, 4) float32 palettes (joint world x inverse bind: world space, the instance's
        transform included), read-only; recomputed only for instances that moved. Skins with the same joints
        and inverse binds (a glTF exporter writes one per mesh of a character) share one array."""
        s = self.scene.skins[skin]
        key = (np.asarray(s.joints).tobytes(), np.asarray(s.inverse_bind_matrices).tobytes())
        skin = self._skin_alias.setdefault(key, skin)
        pal = self._palettes.get(skin)
        if pal is None:
            J = len(self.scene.skins[skin].joints)
            pal = self._palettes[skin] = np.zeros((self.count, J, 4, 4), np.float32)
            self._palette_applied[skin] = np.full(self.count, -1, np.int64)
        applied = self._palette_applied[skin]
        rows = self._cpu_stale(applied)
        if len(rows):
            self.world_matrices()
            s = self.scene.skins[skin]
            fresh, moved = self._split_fresh(rows)
            if len(fresh):        # never changed: one palette of the rest pose for all of them
                pal[fresh] = self._rest_world()[s.joints] @ s.inverse_bind_matrices
            if len(moved):
                sel = self._index(moved)
                joint_world = self._world[s.joints][:, sel] if isinstance(sel, slice) else \
                    self._world[np.ix_(s.joints, moved)]                       # (joints, moved, 4, 4)
                pal[sel] = (joint_world @ s.inverse_bind_matrices[:, None]).transpose(1, 0, 2, 3)
            applied[rows] = self._skeleton_versions[rows]
        return _read_only(pal)


class Instance:
    """A handle on one instance of a crowd (``rt.crowd[i]``): its own weights, pose and transform."""

    def __init__(self, crowd: CrowdState, index: int):
        self.crowd, self.index = crowd, index

    def set_weights(self, node: int | str, weights) -> bool:
        return self.crowd.set_weights(self.index, node, weights)

    def set_weight(self, node: int | str, target: int | str, value: float) -> bool:
        return self.crowd.set_weights(self.index, node, {target: value})

    def set_transform(self, matrix) -> bool:
        return bool(self.crowd.set_transforms(np.asarray(matrix, np.float64)[None], rows=[self.index]))

    def set_trs(self, node: int, path: str, value) -> bool:
        """One node's translation, rotation (x, y, z, w) or scale of this instance; True when it changed."""
        k = {"translation": 0, "rotation": 1, "scale": 2}.get(path)
        if k is None:
            raise UsageError(f"path must be translation, rotation or scale, got {path!r}")
        nodes = len(self.crowd.scene.nodes)
        if isinstance(node, bool) or not isinstance(node, (int, np.integer)) or not 0 <= node < nodes:
            raise UsageError(f"node {node!r} out of range: the scene has {nodes} nodes")
        arrays = [None, None, None]
        cur = self.crowd._local[k][self.index].copy()
        cur[node] = np.asarray(value, np.float64)
        arrays[k] = cur[None]
        return bool(self.crowd.set_local(*arrays, rows=[self.index]))

    @property
    def weights(self) -> np.ndarray:
        return self.crowd.weights[self.index]
