"""Morph weights of a scene at runtime (``SceneMorphPose``), the weight range a file implies, and the version
bookkeeping every consumer of the scene's state uses (``AppliedVersions``).

The pose is the CPU half of the runtime's version cache (``render.morph_pass.MorphRuntime.record`` is a consumer):

- All nodes' weights live in one flat float32 array (a node's targets are ``flat[slice_of(node)]``): exactly the
  array the batched GPU pass gathers from, so nothing is copied per primitive. ``flat`` and ``weights(node)`` are
  read-only views: the setters are the only way to change a weight, so no change can bypass the versions.
- ``version`` moves on every real change; ``node_versions[node]`` is the value ``version`` had when that node's
  weights last changed (0: never since creation; a consumer starts from -1, "nothing applied"). A consumer keeps,
  per output slot, the versions it applied (``AppliedVersions``) and compares: reading the state has no side
  effect, so any number of consumers (the morph pass per output slot, a host's own cache, a second runtime
  view) each see every change exactly once.
- ``mark_changed(node)`` moves a node's version without a weight change (to force a re-upload).

Weights follow glTF: any finite value, not just [0, 1]. The allowed range defaults to the file's own
(``file_weight_range``: at least [0, 1], widened to the default weights and the weights its animations reach),
and the runtime's conservative bounds are built for that range. A weight outside it is a ``UsageError``, or,
with ``clamp=True``, is clamped with a ``WeightClampedWarning`` that says so — never silently.

Targets can be named (``set_weight(node, "MouthOpen", 0.7)``, ``set_weights(node, {"MouthOpen": 0.7})``).
Corrective (combination) targets and in-betweens are rules evaluated here, after every change, into the flat
weights themselves: the GPU pass stays one pass over plain weights.
"""

from __future__ import annotations

import itertools
import warnings
from collections.abc import Mapping

import numpy as np

from ..asset.model import SceneAsset
from ..errors import UsageError, abridged, name_list

HERMITE_OVERSHOOT = 4.0 / 27.0   # max |h10| = max |h11| of the cubic Hermite basis on [0, 1]
MAX_DRIVERS = 8


class WeightClampedWarning(UserWarning):
    """A weight outside the pose's range was clamped because the caller asked for clamping."""


def _channel_range(values: np.ndarray, times: np.ndarray, interpolation: str) -> tuple[float, float]:
    """Smallest and largest weight a sampled channel can produce."""
    v = np.asarray(values, np.float64)
    if interpolation != "CUBICSPLINE" or len(v) < 6:
        keys = v[1::3] if interpolation == "CUBICSPLINE" else v
        return float(keys.min(initial=0.0)), float(keys.max(initial=0.0))
    # Hermite segment: h00 p0 + h01 p1 lies between p0 and p1; the tangent terms add at most 4/27 |m|
    p, a_in, b_out = v[1::3], v[0::3], v[2::3]
    dt = np.diff(np.asarray(times, np.float64))[:, None]
    slack = HERMITE_OVERSHOOT * (np.abs(b_out[:-1] * dt) + np.abs(a_in[1:] * dt))
    lo = np.minimum(p[:-1], p[1:]) - slack
    hi = np.maximum(p[:-1], p[1:]) + slack
    return float(min(lo.min(), p.min())), float(max(hi.max(), p.max()))


def file_weight_range(scene: SceneAsset, extra=()) -> tuple[float, float]:
    """[0, 1] widened to the scene's default weights, every weight its animations can produce, and ``extra``."""
    lo, hi = 0.0, 1.0
    arrays = [np.asarray(extra, np.float64).reshape(-1)]
    arrays += [np.asarray(n.default_weights, np.float64) for n in scene.nodes if n.default_weights is not None]
    arrays += [np.asarray(p.default_weights, np.float64) for p in scene.primitives if p.default_weights is not None]
    for a in arrays:
        if len(a):
            lo, hi = min(lo, float(a.min())), max(hi, float(a.max()))
    for clip in scene.animations:
        for ch in clip.morph_channels:
            c_lo, c_hi = _channel_range(ch.values, ch.times, ch.interpolation)
            lo, hi = min(lo, c_lo), max(hi, c_hi)
    return lo, hi


class _Rule:
    """A driven target: corrective (product of drivers) or in-between (piecewise-linear curve of one driver)."""

    def __init__(self, target: int, drivers: list[int], curve: np.ndarray | None):
        self.target, self.drivers, self.curve = target, drivers, curve

    def apply(self, w: np.ndarray) -> None:
        if self.curve is None:
            w[self.target] = np.prod(w[self.drivers], dtype=np.float64)
        else:
            w[self.target] = np.interp(float(w[self.drivers[0]]), self.curve[:, 0], self.curve[:, 1])


class AppliedVersions:
    """What one consumer applied, per output slot, of items that each follow one node's version (a morph
    primitive follows its node's weights, a draw its node's world matrix). Pure bookkeeping: ``changed`` reads
    the current versions without touching them, ``applied`` records what the consumer really wrote."""

    def __init__(self, item_nodes, slots: int = 1):
        self.item_nodes = np.asarray(item_nodes, np.int64).reshape(-1)
        self.items = np.full((int(slots), len(self.item_nodes)), -1, np.int64)   # -1: never applied
        self.totals = [-1] * int(slots)    # the state's whole version last applied per slot (level 1)

    def up_to_date(self, slot: int, version: int) -> bool:
        """Level 1: nothing moved since this slot was last applied (one integer compare)."""
        return self.totals[slot] == version

    def changed(self, slot: int, node_versions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(indices of the items whose node moved since ``slot`` applied them, ascending; the items' current
        versions). Vectorized: one gather and one compare over the items."""
        cur = node_versions[self.item_nodes]
        return np.flatnonzero(cur != self.items[slot]), cur

    def applied(self, slot: int, version: int, idx: np.ndarray | None = None, cur: np.ndarray | None = None) -> None:
        """Record that ``slot`` now holds items ``idx`` at versions ``cur`` (from ``changed``) and the whole state
        at ``version``."""
        if idx is not None and len(idx):
            self.items[slot, idx] = cur[idx]
        self.totals[slot] = version


class SceneMorphPose:
    """Morph weights per node of a scene, with a version for the whole pose and one per node (see the module
    docstring).

    ``weight_range``: None takes the file's range (``file_weight_range``); ``clamp``: clamp out-of-range weights
    with a warning instead of raising.
    """

    def __init__(self, scene: SceneAsset, weight_range: tuple[float, float] | None = None, *, clamp: bool = False):
        if weight_range is None:
            weight_range = file_weight_range(scene)
        lo, hi = (float(x) for x in weight_range)
        if not (np.isfinite(lo) and np.isfinite(hi) and lo <= hi):
            raise UsageError(f"weight range {tuple(weight_range)} must be two finite numbers, low <= high")
        self.scene, self.clamp = scene, clamp
        self.weight_range = (lo, hi)
        self._slices: dict[int, slice] = {}
        self._names: dict[int, list[str]] = {}
        self._generated: dict[int, list[bool]] = {}
        total = 0
        for i, node in enumerate(scene.nodes):
            if node.mesh is not None and scene.meshes[node.mesh].target_count:
                mesh = scene.meshes[node.mesh]
                T = mesh.target_count
                self._slices[i] = slice(total, total + T)
                total += T
                named = max(mesh.primitives, key=lambda p: len(p.morph_targets)).morph_targets
                self._names[i] = [t.name for t in named]
                self._generated[i] = [t.generated_name for t in named]
        self._flat = np.zeros(total, np.float32)     # the only writable reference; the setters write it
        self._flat_view = self._flat.view()
        self._flat_view.flags.writeable = False
        self._weights: dict[int, np.ndarray] = {i: self._flat[sl] for i, sl in self._slices.items()}
        self._rules: dict[int, list[_Rule]] = {}
        for i, w in self._weights.items():
            dw = scene.nodes[i].default_weights
            if dw is not None and len(dw) == len(w):
                w[:] = self._checked(np.asarray(dw, np.float64), i, "default weight")
        # version 0 is the initial weights: a consumer that applied nothing (-1) sees every node changed once
        self.version = 0
        self._node_versions = np.zeros(len(scene.nodes), np.int64)
        self._node_versions_view = self._node_versions.view()
        self._node_versions_view.flags.writeable = False
        self._slot_node = np.zeros(total, np.int64)
        for i, sl in self._slices.items():
            self._slot_node[sl] = i

    # ------------------------------------------------------------------ reading (no side effects)
    @property
    def flat(self) -> np.ndarray:
        """All weights, laid out node after node (``slice_of``): a read-only view; change them with the setters."""
        return self._flat_view

    @property
    def node_versions(self) -> np.ndarray:
        """(nodes,) int64, read-only: ``version`` as it was when each node's weights last changed."""
        return self._node_versions_view

    def _changed(self, nodes) -> None:
        self.version += 1
        self._node_versions[nodes] = self.version

    def mark_changed(self, node: int | str | None = None) -> None:
        """Move the version of ``node`` (None: every node with weights) as if its weights changed, so every
        consumer re-applies it (e.g. after a host overwrote the morph output itself)."""
        self._changed(list(self._weights) if node is None else self._node(node))

    # ------------------------------------------------------------------ nodes and names
    @property
    def morph_nodes(self) -> list[int]:
        return list(self._weights)

    def has_targets(self, node: int) -> bool:
        return node in self._weights

    def slice_of(self, node: int | str) -> slice:
        return self._slices[self._node(node)]

    def _node(self, node: int | str) -> int:
        if isinstance(node, str):
            try:
                node = self.scene.node_index(node)
            except KeyError:
                raise UsageError(f"no node named {abridged(node)}; "
                                 f"{self.scene.morph_nodes_hint()}") from None
        if node not in self._weights:
            raise UsageError(f"node {self._label(node)} has no morph targets; "
                             f"{self.scene.morph_nodes_hint()}")
        return node

    def _label(self, node) -> str:
        if isinstance(node, (int, np.integer)) and 0 <= node < len(self.scene.nodes) and self.scene.nodes[node].name:
            return abridged(self.scene.nodes[node].name)
        return str(node)

    def target_names(self, node: int | str) -> list[str]:
        """The node's target names (generated ones, for targets the file left unnamed, included)."""
        return list(self._names[self._node(node)])

    def generated_names(self, node: int | str) -> list[bool]:
        return list(self._generated[self._node(node)])

    def duplicate_names(self, node: int | str) -> dict[str, list[int]]:
        """Names used by more than one target of the node, with their indices (such names need an index)."""
        seen: dict[str, list[int]] = {}
        for k, name in enumerate(self._names[self._node(node)]):
            seen.setdefault(name, []).append(k)
        return {n: ks for n, ks in seen.items() if len(ks) > 1}

    def target_index(self, node: int | str, target: int | str) -> int:
        n = self._node(node)
        names = self._names[n]
        T = len(self._weights[n])
        if isinstance(target, (int, np.integer)) and not isinstance(target, bool):
            if not 0 <= target < T:
                raise UsageError(f"node {self._label(n)}: target index {target} out of range (0..{T - 1})")
            return int(target)
        hits = [k for k, name in enumerate(names) if name == target]
        if not hits:
            raise UsageError(f"node {self._label(n)} has no target {abridged(target)}; its targets are "
                             f"{name_list(names)}")
        if len(hits) > 1:
            raise UsageError(f"node {self._label(n)}: target name {target!r} is used by targets {hits}; "
                             "use the index")
        return hits[0]

    # ------------------------------------------------------------------ range
    def _checked(self, arr: np.ndarray, node: int, what: str = "weight", first: int = 0) -> np.ndarray:
        """``arr`` (float64) as float32 if finite and in range; clamped with a warning if ``clamp``."""
        if not np.isfinite(arr).all():
            k = int(np.flatnonzero(~np.isfinite(arr))[0])
            raise UsageError(f"node {self._label(node)}: {what} for target {first + k} is not finite ({arr[k]})")
        lo, hi = self.weight_range
        tol = 1e-6 * max(1.0, hi - lo)      # float rounding of in-range values is not a user error
        bad = (arr < lo - tol) | (arr > hi + tol)
        if bad.any():
            k = int(np.flatnonzero(bad)[0])
            names = self._names.get(node, [])
            tname = f" {names[first + k]!r}" if first + k < len(names) else ""
            msg = (f"node {self._label(node)}: {what} {arr[k]:g} for target {first + k}{tname} is outside the "
                   f"weight range [{lo:g}, {hi:g}]")
            if not self.clamp:
                raise UsageError(msg + " (pass weight_range=(low, high) when creating the pose/runtime, "
                                       "or clamp=True to clamp)")
            warnings.warn(msg + f"; clamped to {min(max(arr[k], lo), hi):g} ({int(bad.sum())} clamped)",
                          WeightClampedWarning, stacklevel=3)
        return np.clip(arr, lo, hi).astype(np.float32)

    # ------------------------------------------------------------------ setting weights
    def resolved_weights(self, n: int, weights, cur: np.ndarray) -> np.ndarray:
        """What node ``n``'s weights become when ``weights`` (a full sequence, or a mapping of target name/index ->
        weight over ``cur``) is applied: checked, clamped to the range and with the corrective/in-between rules
        run. Changes nothing; ``set_weights`` and the crowd's per-instance setter both go through it."""
        if isinstance(weights, Mapping):
            new = cur.copy()
            for key, value in weights.items():
                k = self.target_index(n, key)
                self._not_driven(n, k)
                new[k] = self._checked(np.array([float(value)]), n, first=k)[0]
        else:
            arr = np.asarray(weights, np.float64).reshape(-1)
            if arr.shape != cur.shape:
                raise UsageError(f"node {self._label(n)}: expected {len(cur)} weights, got {arr.shape[0]}")
            new = self._checked(arr, n)
        self._run_rules(n, new)
        return new

    def set_weights(self, node: int | str, weights) -> bool:
        """Set a node's weights: a full sequence (one per target) or a mapping {name or index: weight} that
        changes only those. Targets driven by a corrective/in-between rule take the rule's value (in a full
        sequence their entries are ignored; naming one in a mapping is an error). True when anything changed."""
        n = self._node(node)
        cur = self._weights[n]
        new = self.resolved_weights(n, weights, cur)
        if np.array_equal(new, cur):
            return False
        cur[:] = new
        self._changed(n)
        return True

    def set_weight(self, node: int | str, target: int | str, value: float) -> bool:
        """One target by name or index; True when it changed."""
        return self.set_weights(node, {target: value})

    def set_flat(self, values) -> int:
        """Set every node's weights at once from a flat array laid out like ``flat`` (vectorized: one
        comparison, no per-node Python work beyond the changed nodes and nodes with rules). Returns how many
        nodes changed."""
        arr = np.asarray(values, np.float64).reshape(-1)
        if arr.shape != self.flat.shape:
            raise UsageError(f"expected {len(self.flat)} weights, got {arr.shape[0]}")
        lo, hi = self.weight_range
        if not (np.isfinite(arr).all() and arr.min(initial=lo) >= lo and arr.max(initial=hi) <= hi):
            for n, sl in self._slices.items():   # rare path: name the first bad target, or clamp with a warning
                arr[sl] = self._checked(arr[sl], n)
        new = arr.astype(np.float32)
        for n in self._rules:
            self._run_rules(n, new[self._slices[n]])
        changed = new != self._flat
        if not changed.any():
            return 0
        self._flat[:] = new
        sel = self._slot_node[changed]
        nodes = sel[np.r_[True, sel[1:] != sel[:-1]]]    # runs (slots are node-contiguous): no sort, no hash
        self._changed(nodes)
        return len(nodes)

    def weights(self, node: int | str) -> np.ndarray:
        """A read-only view of the node's weights (driven targets included)."""
        v = self._weights[self._node(node)].view()
        v.flags.writeable = False
        return v

    # ------------------------------------------------------------------ correctives and in-betweens
    def add_corrective(self, node: int | str, target: int | str, drivers) -> None:
        """Drive ``target`` by the product of the ``drivers``' weights (a combination shape, e.g. the fix for
        JawOpen + Smile). The drivers stay free; the target can no longer be set directly."""
        n = self._node(node)
        t = self.target_index(n, target)
        ds = [self.target_index(n, d) for d in drivers]
        if not 1 <= len(ds) <= MAX_DRIVERS or t in ds or len(set(ds)) != len(ds):
            raise UsageError(f"node {self._label(n)}: a corrective needs 1..{MAX_DRIVERS} distinct drivers other "
                             f"than its target, got target {t} and drivers {ds}")
        lo, hi = self.weight_range
        ends = [float(np.prod(c)) for c in itertools.product((lo, hi), repeat=len(ds))]
        if min(ends) < lo or max(ends) > hi:
            raise UsageError(f"node {self._label(n)}: the product of {len(ds)} weights in [{lo:g}, {hi:g}] reaches "
                             f"[{min(ends):g}, {max(ends):g}], outside the weight range; create the pose with a "
                             "wider weight_range")
        self._add_rule(n, _Rule(t, ds, None))

    def add_inbetween(self, node: int | str, target: int | str, driver: int | str, curve) -> None:
        """Drive ``target`` by a piecewise-linear ``curve`` [(driver weight, target weight), ...] of one driver
        (held constant beyond the first and last point), e.g. [(0, 0), (0.5, 1), (1, 0)] for a half-way shape."""
        n = self._node(node)
        t, d = self.target_index(n, target), self.target_index(n, driver)
        c = np.asarray(curve, np.float64)
        if c.ndim != 2 or c.shape[1] != 2 or len(c) < 1 or not np.isfinite(c).all() or (np.diff(c[:, 0]) <= 0).any():
            raise UsageError(f"node {self._label(n)}: in-between curve must be finite (driver weight, value) "
                             f"points with increasing driver weights, got {np.asarray(curve).tolist()}")
        if t == d:
            raise UsageError(f"node {self._label(n)}: an in-between cannot drive its own driver {t}")
        self._checked(c[:, 1], n, "in-between curve value", first=t)
        self._add_rule(n, _Rule(t, [d], c))

    def _add_rule(self, n: int, rule: _Rule) -> None:
        self._not_driven(n, rule.target)
        self._rules.setdefault(n, []).append(rule)
        new = self._weights[n].copy()
        self._run_rules(n, new)
        if not np.array_equal(new, self._weights[n]):
            self._weights[n][:] = new
            self._changed(n)

    def _not_driven(self, n: int, k: int) -> None:
        if any(r.target == k for r in self._rules.get(n, ())):
            raise UsageError(f"node {self._label(n)}: target {k} {self._names[n][k]!r} is driven by a "
                             "corrective/in-between rule and cannot be set directly")

    def _run_rules(self, n: int, w: np.ndarray) -> None:
        for rule in self._rules.get(n, ()):   # in the order added, so a rule may drive a later one
            rule.apply(w)

    def driven_targets(self, node: int | str) -> list[int]:
        return [r.target for r in self._rules.get(self._node(node), ())]


def apply_named_weights(pose: SceneMorphPose, named: Mapping[str, float], names_of) -> None:
    """Every morphing node with a target called one of ``named``'s keys gets that weight; its other targets keep
    theirs. ``names_of(node)`` gives the node's target names as the caller addresses them (one rule for
    ``Model.pose(weights={...})`` and the CLI's ``--weight NAME=W``)."""
    for node in pose.morph_nodes:
        names = names_of(node)
        if any(n in named for n in names):
            w = np.array(pose.weights(node), np.float64)
            for k, n in enumerate(names):
                if n in named:
                    w[k] = named[n]
            pose.set_weights(node, w)
