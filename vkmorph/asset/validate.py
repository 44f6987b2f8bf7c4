"""CPU validation before anything reaches the GPU (seed 000 "数据合法性校验").

Each check raises ``AssetError`` naming file, mesh, primitive, target and the first offending index, so a user
can go straight to the broken element.
"""

from __future__ import annotations

import numpy as np

from ..errors import AssetError, abridged
from . import limits
from .model import MeshPrimitiveAsset, SceneAsset

MAX_TARGETS = limits.LIMITS["morph_targets"].default   # "unreasonable target count" (VKMORPH_MAX_MORPH_TARGETS)
MAX_COORD = 1e15            # bounds must be finite and representable after summing deltas
WEIGHT_SUM_TOLERANCE = 1e-3


def _first_bad(mask: np.ndarray) -> int:
    """Index of the first row where ``mask`` (any trailing axes) is True."""
    m = mask.reshape(len(mask), -1).any(axis=1) if mask.ndim > 1 else mask
    return int(np.flatnonzero(m)[0])


def validate_primitive(prim: MeshPrimitiveAsset, *, file: str | None = None, mesh: str | None = None,
                       primitive: int | None = None, joint_count: int | None = None) -> None:
    where = {"file": file, "mesh": mesh, "primitive": primitive}
    v = prim.vertices
    V = len(v)
    if V == 0:
        raise AssetError("primitive has no vertices", **where)
    for attr in ("position", "normal", "tangent", "texcoord"):
        bad = ~np.isfinite(v[attr])
        if bad.any():
            raise AssetError(f"non-finite vertex {attr}", index=_first_bad(bad), **where)
    if np.abs(v["position"]).max() > MAX_COORD:
        raise AssetError("invalid bounds: vertex position too large",
                         index=_first_bad(np.abs(v["position"]) > MAX_COORD), **where)
    idx = np.asarray(prim.indices)
    if idx.ndim != 1:
        raise AssetError(f"indices must be a flat list, got shape {idx.shape}", **where)
    if len(idx) % 3:
        raise AssetError(f"index count {len(idx)} is not a multiple of 3", index=len(idx) - len(idx) % 3,
                         **where)
    if len(idx) and (idx.min() < 0 or idx.max() >= V):
        raise AssetError(f"index out of range (vertex count {V})",
                         index=_first_bad((idx < 0) | (idx >= V)), **where)
    T = len(prim.morph_targets)
    if limits.exceeded("morph_targets", T):
        raise AssetError(f"unreasonable target count: {limits.exceeded('morph_targets', T)}", **where)
    for t_i, t in enumerate(prim.morph_targets):
        tw = dict(where, target=t.name if t.name else t_i)
        if not isinstance(t.name, str) or not t.name.strip():
            raise AssetError("empty target name", **dict(where, target=t_i))
        for label, d in (("position", t.position_deltas), ("normal", t.normal_deltas),
                         ("tangent", t.tangent_deltas)):
            if d is None:
                if label == "position":
                    raise AssetError("target has no position deltas", **tw)
                continue
            if d.shape != (V, 3):
                raise AssetError(f"{label} delta count {d.shape[0] if d.ndim else 0} != vertex count {V}"
                                 if d.ndim == 2 and d.shape[1:] == (3,) else
                                 f"{label} deltas have shape {d.shape}, expected ({V}, 3)", **tw)
            bad = ~np.isfinite(d)
            if bad.any():
                raise AssetError(f"non-finite {label} delta", index=_first_bad(bad), **tw)
            if label == "position" and np.abs(d).max(initial=0) > MAX_COORD:
                raise AssetError("invalid bounds: position delta too large",
                                 index=_first_bad(np.abs(d) > MAX_COORD), **tw)
    if prim.default_weights is not None:
        dw = np.asarray(prim.default_weights)
        if dw.shape != (T,) or not np.isfinite(dw).all():
            raise AssetError(f"default weights must be {T} finite values, got {dw.tolist()}", **where)
    if prim.is_skinned:
        j, w = v["joints"], v["weights"]
        if not np.isfinite(w).all() or (w < 0).any() or (w > 1 + 1e-6).any():
            raise AssetError("bad joint weight (non-finite, negative or > 1)",
                             index=_first_bad(~np.isfinite(w) | (w < 0) | (w > 1 + 1e-6)), **where)
        sums = w.sum(axis=1)
        bad = np.abs(sums - 1.0) > WEIGHT_SUM_TOLERANCE
        if bad.any():
            i = _first_bad(bad)
            raise AssetError(f"joint weights sum to {sums[i]:.4f}, not 1 (vertex without influences?)",
                             index=i, **where)
        if joint_count is not None:
            bad = (j >= joint_count) & (w > 0)
            if bad.any():
                i = _first_bad(bad)
                raise AssetError(f"joint index {int(j[i].max())} beyond the skin's {joint_count} joints",
                                 index=i, **where)


def validate_scene(scene: SceneAsset) -> None:
    """Validate every primitive, node references and animation channels of a scene."""
    file = scene.source
    n_nodes = len(scene.nodes)
    for m in scene.meshes:
        for p_i, p in enumerate(m.primitives):
            jc = None
            if p.is_skinned:
                if p.skin is None or not 0 <= p.skin < len(scene.skins):
                    raise AssetError(f"skinned primitive refers to missing skin {p.skin}", file=file, mesh=m.name,
                                     primitive=p_i)
                jc = len(scene.skins[p.skin].joints)
            validate_primitive(p, file=file, mesh=m.name, primitive=p_i, joint_count=jc)
    for s_i, s in enumerate(scene.skins):
        if len(s.joints) and (s.joints.min() < 0 or s.joints.max() >= n_nodes):
            raise AssetError(f"skin {s_i} refers to a node beyond the {n_nodes} nodes", file=file)
        if not np.isfinite(s.inverse_bind_matrices).all():
            raise AssetError(f"skin {s_i} has non-finite inverse bind matrices", file=file,
                             index=_first_bad(~np.isfinite(s.inverse_bind_matrices)))
    validate_animations(scene)


def validate_animations(scene: SceneAsset) -> None:
    """Animation channels: existing nodes, finite increasing key times, finite values."""
    file, n_nodes = scene.source, len(scene.nodes)
    for a in scene.animations:
        for ch in list(a.morph_channels) + list(a.node_channels):
            if not 0 <= ch.node < n_nodes:
                raise AssetError(f"animation {abridged(a.name)} animates missing node {ch.node}", file=file)
            t = ch.times
            if len(t) == 0 or not np.isfinite(t).all() or (np.diff(t) < 0).any():
                raise AssetError(f"animation {abridged(a.name)}: key times must be finite and increasing", file=file,
                                 index=_first_bad(~np.isfinite(t)) if not np.isfinite(t).all() else None)
            if not np.isfinite(ch.values).all():
                raise AssetError(f"animation {abridged(a.name)}: non-finite key value", file=file,
                                 index=_first_bad(~np.isfinite(ch.values)))
