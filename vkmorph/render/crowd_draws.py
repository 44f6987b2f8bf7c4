"""What a host draws for a crowd (``MorphRuntime(..., instances=N)``): one ``CrowdDraw`` per primitive of the
scene, covering every instance with arrays instead of one object per (instance, primitive).

Instance i of a draw reads its vertices at ``vertex_offset + i * instance_stride`` of ``vertex_buffer``
(``instance_stride`` is 0 for primitives without targets: every instance shares the file's vertices), and
draws with ``world[i]`` (rigid primitives: the instance's transform x the node's world matrix; skinned ones:
identity) and ``joint_palette[i]`` (world-space palette, the instance's transform included). A host draws a
shared-vertex primitive with one instanced draw (per-instance matrices from a buffer by gl_InstanceIndex) and
a morphing one per instance range, or copies the arrays into its own instance buffers.

The arrays are read-only views rewritten in place by ``refresh`` for the instances whose skeleton version moved
(``CrowdState.skeleton_versions``): an unchanged frame is one vectorized compare; all slots share them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..anim.crowd import CrowdState
from ..gpu.vk import vk
from .draw_list import DrawList, VertexInput, vertex_input_of


@dataclass
class CrowdDraw:
    """One primitive of the scene, for every instance of the crowd."""

    node: int
    node_name: str
    primitive: int
    vertex_buffer: object      # VkBuffer
    vertex_offset: int         # bytes: instance 0's vertices in this slot
    instance_stride: int       # bytes between instances' vertices (0: shared by every instance)
    vertex_count: int
    vertex_input: VertexInput
    index_buffer: object
    index_type: int
    index_count: int
    world: np.ndarray          # (instances, 4, 4) float32 model matrices (identity for skinned primitives)
    skin: int | None
    joint_palette: np.ndarray | None   # (instances, joints, 4, 4) float32
    morphing: bool

    def offset_of(self, instance: int) -> int:
        return self.vertex_offset + instance * self.instance_stride


class CrowdTransforms:
    """Model matrices of every (primitive, instance), refreshed from a crowd where instances moved."""

    def __init__(self, instances, crowd: CrowdState):
        self.crowd = crowd
        self.nodes = np.array([inst.node for inst in instances], np.int64)
        self.skinned = np.array([inst.prim.is_skinned for inst in instances], bool)
        self.rigid = np.flatnonzero(~self.skinned)
        self.model = np.zeros((len(instances), crowd.count, 4, 4), np.float32)
        self.model[self.skinned] = np.eye(4, dtype=np.float32)
        self.skins = sorted({inst.prim.skin for inst in instances if inst.prim.is_skinned})
        self._applied = np.full(crowd.count, -1, np.int64)
        self.views = [m.view() for m in self.model]
        for v in self.views:
            v.flags.writeable = False

    def palette(self, skin: int) -> np.ndarray:
        return self.crowd.skin_matrices(skin)      # the crowd's own cache, rewritten in place

    def refresh(self) -> int:
        """Bring the moved instances' matrices and palettes up to date; returns how many instances moved."""
        rows = self.crowd.stale_rows(self._applied)
        if not len(rows):
            return 0
        if len(self.rigid):
            world = self.crowd.world_matrices()
            self.model[self.rigid[:, None], rows[None, :]] = \
                world[rows][:, self.nodes[self.rigid]].transpose(1, 0, 2, 3)
        for s in self.skins:
            self.crowd.skin_matrices(s)
        self._applied[rows] = self.crowd.skeleton_versions[rows]
        return len(rows)


class CrowdDrawList(DrawList):
    """The crowd draws of one output slot (a read-only sequence of ``CrowdDraw``; ``transforms`` is the slot's
    ``CrowdTransforms``, whose ``refresh`` rewrites what moved)."""


def build_crowd_draw_lists(instances, scene, crowd: CrowdState, offsets_per_slot: list[list[int]],
                           strides: list[int]) -> list[CrowdDrawList]:
    """One CrowdDrawList per output slot (``offsets_per_slot[slot][k]``: instance 0's offset of primitive k)."""
    transforms = CrowdTransforms(instances, crowd)
    lists = []
    for offsets in offsets_per_slot:
        draws = []
        for k, inst in enumerate(instances):
            p = inst.prim
            vin = vertex_input_of(p.vertices.dtype)
            draws.append(CrowdDraw(
                node=inst.node, node_name=scene.nodes[inst.node].name, primitive=inst.prim_index,
                vertex_buffer=inst.vertex_buffer.handle, vertex_offset=offsets[k], instance_stride=strides[k],
                vertex_count=p.vertex_count, vertex_input=vin, index_buffer=inst.index_buffer.handle,
                index_type=vk.VK_INDEX_TYPE_UINT32, index_count=inst.index_count, world=transforms.views[k],
                skin=p.skin if p.is_skinned else None,
                joint_palette=transforms.palette(p.skin) if p.is_skinned else None, morphing=inst.is_morphing))
        lists.append(CrowdDrawList(draws, transforms))
    transforms.refresh()
    return lists
