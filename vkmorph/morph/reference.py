"""The numpy reference deformer: the oracle for every GPU test and the CPU path for users without a GPU.

Dense and straightforward on purpose (no CSR), so it checks the sparse GPU path independently. Normal and
tangent use the shader's rule: normalize, or fall back to the base vector when the length is near zero;
tangent.w (handedness) is kept.

Tangents after morphing (GPU Gems 3 "Dawn"): with ``orthogonalize=True`` the morphed tangent is re-orthogonalized
against the morphed normal by one Gram-Schmidt step, w kept::

    n = normalize_or(n0 + sum(w_k dn_k), n0)
    t = t0.xyz + sum(w_k dt_k)
    t = t - n * dot(n, t)
    t = dot(t, t) > 1e-12 ? t / length(t) : t0.xyz        # t0.w unchanged

The default follows ``ORTHOGONALIZE_TANGENTS``, which says what the GPU kernel does today, so GPU-vs-reference
tests compare like with like; the kernel switches it on when morph.comp applies the same formula.
"""

from __future__ import annotations

import numpy as np

from ..asset.model import MeshPrimitiveAsset

NORMALIZE_EPSILON = 1e-12  # squared length below which the base vector is kept (same constant in morph.comp)
ORTHOGONALIZE_TANGENTS = True  # glsl/morph_common.glsl writeVertex applies the same step


def _normalize_or(v: np.ndarray, fallback: np.ndarray) -> np.ndarray:
    len2 = np.sum(v * v, axis=1, keepdims=True)
    ok = len2 > NORMALIZE_EPSILON
    return np.where(ok, v / np.sqrt(np.where(ok, len2, 1.0)), fallback)


def orthogonalized(tangents: np.ndarray, normals: np.ndarray, fallback: np.ndarray) -> np.ndarray:
    """One Gram-Schmidt step: the part of each tangent perpendicular to its (unit) normal, normalized; the
    ``fallback`` vector where that part is near zero (tangent parallel to the normal)."""
    t = tangents - normals * np.sum(normals * tangents, axis=1, keepdims=True)
    return _normalize_or(t, fallback)


def morph_reference(prim: MeshPrimitiveAsset, weights, orthogonalize: bool | None = None
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Positions (V,3), normals (V,3), tangents (V,4) after ``base + sum(w * delta)``, float32; tangents
    Gram-Schmidt'ed against the morphed normals when ``orthogonalize`` (default ORTHOGONALIZE_TANGENTS)."""
    if orthogonalize is None:
        orthogonalize = ORTHOGONALIZE_TANGENTS
    w = np.asarray(weights, np.float64).reshape(-1)
    v = prim.vertices
    p = v["position"].astype(np.float64).copy()
    n = v["normal"].astype(np.float64).copy()
    t = v["tangent"][:, :3].astype(np.float64).copy()
    for k, tgt in enumerate(prim.morph_targets):
        if w[k] == 0.0:
            continue
        p += w[k] * tgt.position_deltas
        if tgt.normal_deltas is not None:
            n += w[k] * tgt.normal_deltas
        if tgt.tangent_deltas is not None:
            t += w[k] * tgt.tangent_deltas
    n = _normalize_or(n, v["normal"].astype(np.float64))
    if orthogonalize:
        t = orthogonalized(t, n, v["tangent"][:, :3].astype(np.float64))
    else:
        t = _normalize_or(t, v["tangent"][:, :3].astype(np.float64))
    tangent = np.concatenate([t, v["tangent"][:, 3:4]], axis=1)
    return p.astype(np.float32), n.astype(np.float32), tangent.astype(np.float32)


def skin_reference(positions, normals, tangents, joints, weights, skin_matrices):
    """Four-bone linear blend skinning: position by the weighted matrix, normal/tangent by its 3x3 part
    (renormalized), tangent.w kept. ``skin_matrices`` is (J, 4, 4) acting on column vectors."""
    m = np.einsum("vk,vkij->vij", weights.astype(np.float64), skin_matrices.astype(np.float64)[joints])
    p = np.einsum("vij,vj->vi", m[:, :3, :3], positions) + m[:, :3, 3]
    n = np.einsum("vij,vj->vi", m[:, :3, :3], normals)
    t = np.einsum("vij,vj->vi", m[:, :3, :3], tangents[:, :3])
    n = _normalize_or(n, normals.astype(np.float64))
    t = _normalize_or(t, tangents[:, :3].astype(np.float64))
    return (p.astype(np.float32), n.astype(np.float32),
            np.concatenate([t, tangents[:, 3:4]], axis=1).astype(np.float32))
