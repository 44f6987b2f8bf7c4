"""World-space deformed positions of a whole scene, with the numpy references (for comparing two files of one
model: an encoder's variant against its float original)."""

from __future__ import annotations

import numpy as np

from vkmorph.anim.player import AnimationPlayer
from vkmorph.anim.skeleton import Skeleton
from vkmorph.morph.reference import morph_reference, skin_reference
from vkmorph.morph.state import SceneMorphPose


def world_positions(scene, *, clip=None, time=0.0, weights=None) -> np.ndarray:
    """(N, 3) float64: every drawn vertex after morph (clip weights, else ``weights``, else the file's) and
    skinning (joint world x inverse bind) or the node's world matrix."""
    pose, skel = SceneMorphPose(scene), Skeleton(scene)
    if clip is not None:
        AnimationPlayer(scene, pose, skel).play(clip, loop=False, time=time)
    world = skel.world_matrices()
    out = []
    for n_i, node in enumerate(scene.nodes):
        if node.mesh is None:
            continue
        for prim in scene.meshes[node.mesh].primitives:
            v = prim.vertices
            if prim.morph_targets:
                w = weights if weights is not None and clip is None else pose.weights(n_i)
                p, n, t = morph_reference(prim, w)
            else:
                p, n, t = v["position"], v["normal"], v["tangent"]
            if prim.is_skinned:
                p = skin_reference(p, n, t, v["joints"], v["weights"], skel.skin_matrices(prim.skin))[0]
                out.append(p.astype(np.float64))
            else:
                m = world[n_i]
                out.append(p.astype(np.float64) @ m[:3, :3].T + m[:3, 3])
    return np.concatenate(out)


def cloud_distance(a: np.ndarray, b: np.ndarray) -> float:
    """Symmetric Hausdorff distance between two point sets (encoders reorder and weld vertices)."""
    d = np.linalg.norm(a[:, None, :] - b[None, :, :], axis=2)
    return float(max(d.min(axis=1).max(), d.min(axis=0).max()))
