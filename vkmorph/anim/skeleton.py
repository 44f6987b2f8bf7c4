"""Node world matrices from the hierarchy and skinning palettes (column-vector convention, M @ v)."""

from __future__ import annotations

import numpy as np

from ..asset.model import SceneAsset


def trs_matrix(t: np.ndarray, q: np.ndarray, s: np.ndarray) -> np.ndarray:
    x, y, z, w = q
    r = np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
                  [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
                  [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]])
    m = np.eye(4)
    m[:3, :3] = r * np.asarray(s)[None, :]
    m[:3, 3] = t
    return m


class Skeleton:
    """Local TRS per node (animated by the player) and world matrices recomputed on demand."""

    def __init__(self, scene: SceneAsset):
        self.scene = scene
        self.translation = np.array([n.translation for n in scene.nodes], np.float64).reshape(-1, 3)
        self.rotation = np.array([n.rotation for n in scene.nodes], np.float64).reshape(-1, 4)
        self.scale = np.array([n.scale for n in scene.nodes], np.float64).reshape(-1, 3)
        self.version = 0
        self._world = None
        self._world_version = -1
        # parents always precede children in the importer's pre-order; keep an explicit order anyway
        self._order = self._topological()

    def _topological(self) -> list[int]:
        order, stack = [], [i for i, n in enumerate(self.scene.nodes) if n.parent is None]
        while stack:
            i = stack.pop()
            order.append(i)
            stack.extend(reversed(self.scene.nodes[i].children))
        return order

    def set_trs(self, node: int, path: str, value: np.ndarray) -> None:
        arr = {"translation": self.translation, "rotation": self.rotation, "scale": self.scale}[path]
        if not np.array_equal(arr[node], value):
            arr[node] = value
            self.version += 1

    def world_matrices(self) -> np.ndarray:
        """(N, 4, 4) world matrices, cached until a local transform changes."""
        if self._world_version == self.version:
            return self._world
        nodes = self.scene.nodes
        world = np.empty((len(nodes), 4, 4))
        for i in self._order:
            local = trs_matrix(self.translation[i], self.rotation[i], self.scale[i])
            p = nodes[i].parent
            world[i] = local if p is None else world[p] @ local
        self._world, self._world_version = world, self.version
        return world

    def skin_matrices(self, skin: int, mesh_node: int | None = None) -> np.ndarray:
        """(J, 4, 4) float32 skinning palette.

        ``mesh_node=None``: joint world x inverse bind, i.e. skinned positions in world space (glTF: the skinned
        mesh node's own transform is ignored), so draw with an identity model matrix; nothing is inverted.
        With ``mesh_node``: inverse(mesh node world) x joint world x inverse bind, positions in that node's
        space. A singular mesh node (scaled to 0, e.g. to hide it in a clip) has no inverse there; its
        pseudo-inverse is used, so the result is the projection onto the node's collapsed space (exact again
        as soon as the scale comes back), never a ``LinAlgError``.
        """
        world = self.world_matrices()
        s = self.scene.skins[skin]
        palette = world[s.joints] @ s.inverse_bind_matrices
        if mesh_node is not None:
            palette = affine_inverse(world[mesh_node])[None] @ palette
        return palette.astype(np.float32)


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
