"""``SceneState``: the one per-frame state of a scene, on the CPU (no Vulkan).

It is the morph pose (``morph/state.SceneMorphPose``: weights per node) and the skeleton pose
(``anim/skeleton.Skeleton``: local TRS per node, world matrices, palettes) together, each with a version for the
whole and one per node. ``MorphRuntime`` owns one (``rt.state``; ``rt.pose`` and ``rt.skeleton`` are its halves);
the ``AnimationPlayer``, ``SceneRenderer``, ``vkmorph.api.Model`` and embedding hosts all write and read that one,
so there is one skeleton per scene. Writers use the setters (the arrays are read-only views); readers compare the
versions they applied (``morph/state.AppliedVersions``), so reading never consumes anything and no consumer can
hide a change from another.
"""

from __future__ import annotations

from ..asset.model import SceneAsset
from ..morph.state import SceneMorphPose
from .skeleton import Skeleton


class SceneState:
    """Morph weights + skeleton pose of one scene. ``weight_range``, ``clamp``: as ``SceneMorphPose``."""

    def __init__(self, scene: SceneAsset, *, weight_range: tuple[float, float] | None = None, clamp: bool = False):
        self.scene = scene
        self.pose = SceneMorphPose(scene, weight_range, clamp=clamp)
        self.skeleton = Skeleton(scene)

    @property
    def version(self) -> tuple[int, int]:
        """(weights version, skeleton version): equal to an earlier value exactly when nothing changed since."""
        return self.pose.version, self.skeleton.version

    def reset(self) -> None:
        """The file's default weights and rest pose (only what differs gets a new version)."""
        pose = self.pose
        for node in pose.morph_nodes:
            dw = self.scene.nodes[node].default_weights
            cur = pose.weights(node)
            pose.set_weights(node, dw if dw is not None and len(dw) == len(cur) else [0.0] * len(cur))
        self.skeleton.reset()
