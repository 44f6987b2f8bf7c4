"""Frustum culling of a crowd's instances with bounds that follow each instance's pose (no Vulkan, numpy over
instances).

Per primitive, the weight-aware morph bounds of ``morph/bounds.py`` reduced to the whole primitive: the base
positions' box plus, per target, the min / max of its position deltas over the primitive, so for the weights w
of an instance every morphed vertex lies in ``[base_min + sum_t min(w_t dmin_t, w_t dmax_t), base_max + ...]``
(conservative for any real weights; one (instances, targets, 3) product). That mesh-space box is then taken
through what moves the instance:

* skinned primitives: a skinned position is a convex blend (weights >= 0, summing to 1, as validation
  guarantees) of the joint matrices applied to the morphed position, so it lies in the union of the box
  transformed by each joint the primitive's vertices use (weight > 0): one (instances, joints) box transform;
* rigid primitives: the box through the node's world matrix (the instance's transform included).

The instance's box is the union over its primitives, cached per instance by its weight and skeleton versions
(only instances whose versions moved are recomputed). ``visible(view_proj)`` tests every box against the six
planes of a Vulkan clip volume (x, y in [-w, w], z in [0, w]); a box is culled only when it lies wholly outside
one plane, so culling is conservative: a drawn-but-invisible instance is possible, a missing visible one is not.

GPU-posed instances (``CrowdCuller(rt, animation=anim)``, ``rt.crowd.gpu_posed``): their CPU palettes are stale
by design, so their box does not use the pose. Per clip of the ``CrowdAnimation``, once at build: the union over
the clip's sample times (every key time of its node channels, each key interval cut into ``CLIP_SUBSTEPS``
more, and the clip's ends; ``PoseBatch``, the instance transform left out) of the primitives' boxes posed there,
each primitive's mesh box taken over the whole weight range (any weights an instance may have: the box does not
follow the CPU-sampled weights either), grown by ``CLIP_PAD`` of its size on every side (poses between samples:
a slerp or a cubic spline between two samples can leave their union, so the pad, not a proof, covers that). Per
instance: that box of its clip through its world transform, recomputed only when its transform, clip or owner
(GPU / CPU) changed. Phase and speed do not matter: the box holds the whole loop.
"""

from __future__ import annotations

import numpy as np

from ..anim.pose_batch import PoseBatch
from ..morph.bounds import ClusterBounds

CLIP_SUBSTEPS = 4      # samples per key interval for the clip boxes of GPU-posed instances (their ends included)
CLIP_PAD = 0.05        # their growth, a fraction of the box's size on each side (poses between the samples)


class _PrimBounds:
    """Whole-primitive extents of one primitive instance, from its ``ClusterBounds``."""

    def __init__(self, inst, slot: slice | None):
        cb = ClusterBounds(inst.prim)
        self.base_min, self.base_max = cb.base_min.min(axis=0), cb.base_max.max(axis=0)
        self.dmin, self.dmax = cb.delta_min.min(axis=0), cb.delta_max.max(axis=0)     # (T, 3)
        self.slot = slot                      # the node's weight slots in a crowd weight row (None: no targets)
        self.node, self.skinned = inst.node, inst.prim.is_skinned
        self.skin = inst.prim.skin if self.skinned else None
        if self.skinned:
            v = inst.prim.vertices
            self.joints = np.unique(v["joints"][v["weights"] > 0]).astype(np.int64)

    def mesh_boxes(self, weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(rows, 3) lo, hi of the morphed vertices for ``weights`` (rows, crowd weight slots)."""
        n = len(weights)
        if self.slot is None or not self.dmin.shape[0]:
            return np.broadcast_to(self.base_min, (n, 3)), np.broadcast_to(self.base_max, (n, 3))
        w = weights[:, self.slot][:, :self.dmin.shape[0]].astype(np.float64)[:, :, None]
        a, b = w * self.dmin[None], w * self.dmax[None]
        return self.base_min + np.minimum(a, b).sum(axis=1), self.base_max + np.maximum(a, b).sum(axis=1)

    def range_box(self, weight_range: tuple[float, float]) -> tuple[np.ndarray, np.ndarray]:
        """(3,) lo, hi of the morphed vertices for any weights within ``weight_range`` (pose- and weight-free)."""
        if self.slot is None or not self.dmin.shape[0]:
            return self.base_min, self.base_max
        ends = np.array(weight_range, np.float64)[:, None, None]               # (2, 1, 1)
        ext = np.concatenate([ends * self.dmin[None], ends * self.dmax[None]])  # (4, T, 3)
        return self.base_min + ext.min(axis=0).sum(axis=0), self.base_max + ext.max(axis=0).sum(axis=0)


def clip_sample_times(clip, substeps: int = CLIP_SUBSTEPS) -> np.ndarray:
    """Every key time of ``clip``'s node channels, each interval cut into ``substeps``, and 0 / the duration."""
    keys = [np.asarray(ch.times, np.float64).reshape(-1) for ch in clip.node_channels]
    t = np.unique(np.concatenate(keys + [np.array([0.0, float(clip.duration)])]))
    if len(t) > 1:
        f = np.arange(substeps)[None] / substeps
        t = np.unique(np.concatenate([(t[:-1, None] + (t[1:] - t[:-1])[:, None] * f).reshape(-1), t[-1:]]))
    return t


def _transform_boxes(lo, hi, m):
    """Axis-aligned boxes (..., 3) through affine matrices (..., 4, 4), column vectors."""
    c, h = (lo + hi) / 2, (hi - lo) / 2
    r = m[..., :3, :3]
    wc = np.einsum("...ij,...j->...i", r, c) + m[..., :3, 3]
    wh = np.einsum("...ij,...j->...i", np.abs(r), h)
    return wc - wh, wc + wh


def frustum_planes(view_proj: np.ndarray) -> np.ndarray:
    """(6, 4) planes (n, d), inside where n . x + d >= 0, of a Vulkan clip volume (depth 0..1)."""
    m = np.asarray(view_proj, np.float64)
    r0, r1, r2, r3 = m
    return np.stack([r3 + r0, r3 - r0, r3 + r1, r3 - r1, r2, r3 - r2])


class CrowdCuller:
    """Posed world bounds of every instance of a crowd runtime and the frustum test over them."""

    def __init__(self, rt, *, animation=None):
        self.rt, self.crowd, self.animation = rt, rt.crowd, animation
        self.prims = [_PrimBounds(inst, rt.pose.slice_of(inst.node) if inst.is_morphing else None)
                      for inst in rt.instances]
        N = self.crowd.count
        self._boxes = np.zeros((N, 2, 3))
        self._applied = np.full(N, -1, np.int64)
        # GPU-posed instances: one box per clip in the instance's own frame (module docstring); per instance the
        # transform version and clip its box was made with (-1: not made from a clip box)
        self.clip_boxes = self._clip_boxes(animation) if animation is not None else np.zeros((0, 2, 3))
        self._gpu_transform = np.full(N, -1, np.int64)
        self._gpu_clip = np.full(N, -1, np.int64)

    def _clip_boxes(self, anim) -> np.ndarray:
        """(clips, 2, 3): per clip the union of every primitive's posed box over the clip's sample times."""
        batch, scene = PoseBatch(self.crowd.scene), self.crowd.scene
        wr = self.rt.pose.weight_range
        out = np.zeros((max(1, len(anim.clips)), 2, 3))
        for ci, clip in enumerate(anim.clips):
            world = batch.world_matrices(*batch.sample(clip, clip_sample_times(clip)))      # (F, nodes, 4, 4)
            lo, hi = np.full(3, np.inf), np.full(3, -np.inf)
            for p in self.prims:
                mlo, mhi = p.range_box(wr)
                if p.skinned:
                    s = scene.skins[p.skin]
                    m = world[:, np.asarray(s.joints)[p.joints]] @ np.asarray(s.inverse_bind_matrices)[p.joints]
                else:
                    m = world[:, p.node]
                wlo, whi = _transform_boxes(mlo, mhi, m)
                lo = np.minimum(lo, wlo.reshape(-1, 3).min(axis=0))
                hi = np.maximum(hi, whi.reshape(-1, 3).max(axis=0))
            pad = CLIP_PAD * (hi - lo).max()
            out[ci] = lo - pad, hi + pad
        return out

    def boxes(self) -> np.ndarray:
        """(instances, 2, 3) world [min, max] of each instance as posed now (read-only view); only instances
        whose weights or pose moved since the last call are recomputed."""
        crowd = self.crowd
        moved = np.maximum(crowd.weight_versions, crowd.skeleton_versions)
        gpu = crowd.gpu_posed if self.animation is not None else np.zeros(crowd.count, bool)
        if gpu.any():
            self._gpu_boxes(gpu)
        # CPU-posed: posed boxes; one that was GPU-posed until now is redone whatever its versions say
        rows = np.flatnonzero(~gpu & ((moved != self._applied) | (self._gpu_clip >= 0)))
        self._gpu_clip[rows] = -1
        if len(rows):
            sel = slice(None) if len(rows) == crowd.count else rows
            weights = crowd.weights[sel]
            lo = np.full((len(rows), 3), np.inf)
            hi = np.full((len(rows), 3), -np.inf)
            world = None
            for p in self.prims:
                mlo, mhi = p.mesh_boxes(weights)
                if p.skinned:
                    pal = crowd.skin_matrices(p.skin)[sel][:, p.joints].astype(np.float64)   # (rows, J, 4, 4)
                    wlo, whi = _transform_boxes(mlo[:, None], mhi[:, None], pal)
                    wlo, whi = wlo.min(axis=1), whi.max(axis=1)
                else:
                    if world is None:
                        world = crowd.world_matrices()
                    wlo, whi = _transform_boxes(mlo, mhi, world[sel, p.node])
                lo, hi = np.minimum(lo, wlo), np.maximum(hi, whi)
            self._boxes[rows, 0], self._boxes[rows, 1] = lo, hi
            self._applied[rows] = moved[rows]
        v = self._boxes.view()
        v.flags.writeable = False
        return v

    def _gpu_boxes(self, gpu: np.ndarray) -> None:
        """Boxes of the GPU-posed instances whose transform or clip changed: their clip's box, transformed."""
        crowd, clip = self.crowd, self.animation.clip_of.astype(np.int64)
        tv = crowd.transform_versions
        rows = np.flatnonzero(gpu & ((tv != self._gpu_transform) | (clip != self._gpu_clip)))
        if not len(rows):
            return
        c = np.minimum(clip[rows], len(self.clip_boxes) - 1)
        lo, hi = _transform_boxes(self.clip_boxes[c, 0], self.clip_boxes[c, 1], crowd.transforms[rows])
        self._boxes[rows, 0], self._boxes[rows, 1] = lo, hi
        self._gpu_transform[rows], self._gpu_clip[rows] = tv[rows], clip[rows]
        self._applied[rows] = -1           # back on the CPU later: its posed box is made afresh

    def visible(self, view_proj: np.ndarray) -> np.ndarray:
        """(instances,) bool: the instance's posed box is not wholly outside any plane of ``view_proj``'s clip
        volume (conservative)."""
        b = self.boxes()
        planes = frustum_planes(view_proj)                  # (6, 4)
        c, h = (b[:, 0] + b[:, 1]) / 2, (b[:, 1] - b[:, 0]) / 2
        n = planes[:, :3]
        dist = c @ n.T + planes[:, 3] + h @ np.abs(n).T     # (instances, 6): the box's most-inside corner
        return (dist >= 0).all(axis=1)

    def casts_into(self, view_proj: np.ndarray, light_dir) -> np.ndarray:
        """(instances,) bool: the instance's posed box swept along the light's travel direction ``light_dir``
        (its shadow volume) is not wholly outside any plane of ``view_proj``'s clip volume: its shadow may land
        in view (conservative). Per plane the swept box is outside when the box is and the light does not carry
        it in (n . light_dir <= 0)."""
        b = self.boxes()
        planes = frustum_planes(view_proj)
        n = planes[:, :3]
        c, h = (b[:, 0] + b[:, 1]) / 2, (b[:, 1] - b[:, 0]) / 2
        dist = c @ n.T + planes[:, 3] + h @ np.abs(n).T
        carried = (n @ np.asarray(light_dir, np.float64)) > 0          # (6,): moving along the light enters
        return ((dist >= 0) | carried[None]).all(axis=1)

    def bounds(self) -> tuple[np.ndarray, np.ndarray]:
        """World (lo, hi) of the whole crowd as posed now."""
        b = self.boxes()
        return b[:, 0].min(axis=0), b[:, 1].max(axis=0)
