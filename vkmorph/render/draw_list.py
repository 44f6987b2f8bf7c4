"""What a host draws: one ``Draw`` per primitive instance, kept in one ``DrawList`` per output slot.

The lists are built once (``MorphRuntime`` builds them with the runtime) and refreshed in place only where the
skeleton's versions moved: a rigid draw's matrices when its node's world version changed, a skinned draw's
palette when one of its joints' did. An unchanged frame costs one integer compare (``refresh`` returns 0), so
``rt.draws(slot)`` may be called every frame. Vertex-input descriptions are built once per vertex layout.

The arrays of a ``Draw`` (``world``, ``node_world``, ``joint_palette``) are read-only views the list rewrites
in place on refresh; all slots' lists share them (a slot differs only in its vertex offsets). Copy them if you
keep a frame's values.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache

import numpy as np

from ..anim.skeleton import Skeleton
from ..gpu.pipeline import vertex_input_attributes
from ..gpu.vk import vk
from ..morph.state import AppliedVersions


@dataclass
class VertexInput:
    """How to bind a primitive's vertex buffer in your own pipeline (VkVertexInput* values)."""

    stride: int
    attributes: list[tuple[int, str, int, int]]  # (location, name, VkFormat, byte offset)


@cache
def vertex_input_of(dtype: np.dtype) -> VertexInput:
    """The vertex input of a vertex layout, built once per dtype (every draw of that layout shares it)."""
    return VertexInput(stride=dtype.itemsize, attributes=vertex_input_attributes(dtype))


@dataclass
class Draw:
    """Everything a host needs to draw one primitive instance with its own pipeline (vkCmdDrawIndexed)."""

    node: int
    node_name: str
    primitive: int
    vertex_buffer: object      # VkBuffer
    vertex_offset: int         # bytes, for vkCmdBindVertexBuffers
    vertex_count: int
    vertex_input: VertexInput
    index_buffer: object       # VkBuffer
    index_offset: int          # bytes, for vkCmdBindIndexBuffer
    index_type: int            # VK_INDEX_TYPE_UINT32
    index_count: int
    first_index: int
    world: np.ndarray          # (4, 4) float32 model matrix to draw with, column vectors (M @ v): the node's
    #                            world matrix; identity for skinned primitives (the palette is world-space)
    node_world: np.ndarray     # (4, 4) float32 the node's world matrix (also for skinned primitives)
    skin: int | None
    joint_palette: np.ndarray | None  # (J, 4, 4) float32: joint world x inverse bind (glTF: the skinned mesh
    #                                   node's own transform is ignored), so skinned vertices land in world space
    morphing: bool


def _read_only(a: np.ndarray) -> np.ndarray:
    v = a.view()
    v.flags.writeable = False
    return v


class DrawTransforms:
    """The matrices every slot's draws share, refreshed from one skeleton where its versions moved."""

    def __init__(self, instances, scene, skeleton: Skeleton):
        self.skeleton, self.scene = skeleton, scene
        self.nodes = np.array([inst.node for inst in instances], np.int64)
        self.node_world = np.zeros((len(instances), 4, 4), np.float32)   # per draw (rows rewritten in place)
        self.model = np.zeros((len(instances), 4, 4), np.float32)        # what the draw draws with
        self.skinned = np.array([inst.prim.is_skinned for inst in instances], bool)
        self.model[self.skinned] = np.eye(4, dtype=np.float32)
        skins = sorted({inst.prim.skin for inst in instances if inst.prim.is_skinned})
        self.palettes = {s: np.zeros((len(scene.skins[s].joints), 4, 4), np.float32) for s in skins}
        self._skin_applied = {s: -1 for s in skins}
        self._nodes_applied = AppliedVersions(self.nodes)
        self._version = -1
        self.views = ([_read_only(m) for m in self.model], [_read_only(m) for m in self.node_world],
                      {s: _read_only(p) for s, p in self.palettes.items()})

    def refresh(self) -> int:
        """Bring the matrices to the skeleton's current pose; returns how many draws' node matrices and palettes
        were rewritten (0, after one compare, when the skeleton did not move)."""
        sk = self.skeleton
        if self._nodes_applied.up_to_date(0, sk.version):
            return 0
        idx, cur = self._nodes_applied.changed(0, sk.world_versions())
        n = len(idx)
        if n:
            world = sk.world_matrices()[self.nodes[idx]].astype(np.float32)
            self.node_world[idx] = world
            rigid = ~self.skinned[idx]
            self.model[idx[rigid]] = world[rigid]
        for s in self.palettes:
            v = sk.skin_version(s)
            if v != self._skin_applied[s]:
                self.palettes[s][:] = sk.skin_matrices(s)
                self._skin_applied[s] = v
                n += 1
        self._nodes_applied.applied(0, sk.version, idx, cur)
        return n


class DrawList(Sequence):
    """The draws of one output slot (a read-only sequence of ``Draw``; see the module docstring)."""

    def __init__(self, draws: list[Draw], transforms: DrawTransforms):
        self._draws, self.transforms = draws, transforms

    def __getitem__(self, k):
        return self._draws[k]

    def __len__(self) -> int:
        return len(self._draws)

    def refresh(self) -> int:
        return self.transforms.refresh()


def build_draw_lists(instances, scene, skeleton: Skeleton, offsets_per_slot: list[list[int]]) -> list[DrawList]:
    """One DrawList per output slot over ``instances`` (``offsets_per_slot[slot][i]``: draw i's vertex offset)."""
    transforms = DrawTransforms(instances, scene, skeleton)
    models, node_worlds, palettes = transforms.views
    lists = []
    for offsets in offsets_per_slot:
        draws = []
        for k, inst in enumerate(instances):
            p = inst.prim
            vin = vertex_input_of(p.vertices.dtype)
            draws.append(Draw(node=inst.node, node_name=scene.nodes[inst.node].name, primitive=inst.prim_index,
                              vertex_buffer=inst.vertex_buffer.handle, vertex_offset=offsets[k],
                              vertex_count=p.vertex_count, vertex_input=vin,
                              index_buffer=inst.index_buffer.handle, index_offset=0,
                              index_type=vk.VK_INDEX_TYPE_UINT32, index_count=inst.index_count, first_index=0,
                              world=models[k], node_world=node_worlds[k], skin=p.skin if p.is_skinned else None,
                              joint_palette=palettes[p.skin] if p.is_skinned else None,
                              morphing=inst.is_morphing))
        lists.append(DrawList(draws, transforms))
    transforms.refresh()
    return lists
