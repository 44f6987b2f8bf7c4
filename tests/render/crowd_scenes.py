"""Crowd test scenes (not a test module): shared by tests/render/test_crowd*.py."""

from __future__ import annotations

import numpy as np

from tests.helpers import random_prim
from vkmorph.asset.model import (
    SKINNED_VERTEX,
    STATIC_VERTEX,
    AnimationClip,
    MeshAsset,
    NodeAsset,
    NodeChannel,
    SceneAsset,
    SkinAsset,
)
from vkmorph.gpu import memory as M
from vkmorph.morph.reference import morph_reference, skin_reference


def crowd_scene(rng) -> SceneAsset:
    """Two morphing primitives (one skinned by a 3-joint chain), one static one without targets."""
    a, b, c = random_prim(rng, 300, 5, 0.4), random_prim(rng, 700, 40, 0.2), random_prim(rng, 50, 0, 0.0)
    v = np.zeros(len(b.vertices), SKINNED_VERTEX)
    for f in b.vertices.dtype.names:
        v[f] = b.vertices[f]
    v["joints"] = rng.integers(0, 3, (len(v), 4))
    w = rng.random((len(v), 4))
    v["weights"] = w / w.sum(axis=1, keepdims=True)
    b.vertices, b.skin = v, 0
    nodes = [NodeAsset("a", mesh=0), NodeAsset("b", mesh=1, skin=0), NodeAsset("c", mesh=2),
             NodeAsset("j0", children=[4]), NodeAsset("j1", parent=3, children=[5], translation=[0, 1, 0]),
             NodeAsset("j2", parent=4, translation=[0, 1, 0])]
    inv = np.stack([np.eye(4)] * 3)
    inv[1, 1, 3], inv[2, 1, 3] = -1.0, -2.0
    skins = [SkinAsset(np.array([3, 4, 5]), inv)]
    meshes = [MeshAsset("ma", [a]), MeshAsset("mb", [b]), MeshAsset("mc", [c])]
    return SceneAsset(nodes=nodes, meshes=meshes, skins=skins, animations=[], roots=[0, 1, 2, 3])


def random_quats(rng, k):
    q = rng.normal(size=(k, 4))
    return q / np.linalg.norm(q, axis=1, keepdims=True)


def anim_scene(rng) -> SceneAsset:
    """A skinned primitive on a 4-joint chain under a root node, and two clips covering every interpolation of
    every path (STEP, LINEAR, CUBICSPLINE; rotations slerped), one with two channels on the same path."""
    b = random_prim(rng, 200, 3, 0.4)
    v = np.zeros(len(b.vertices), SKINNED_VERTEX)
    for f in b.vertices.dtype.names:
        v[f] = b.vertices[f]
    v["joints"] = rng.integers(0, 4, (len(v), 4))
    w = rng.random((len(v), 4))
    v["weights"] = w / w.sum(axis=1, keepdims=True)
    b.vertices, b.skin = v, 0
    nodes = [NodeAsset("mesh", mesh=0, skin=0), NodeAsset("root", children=[2], translation=[0.5, 0, 0]),
             NodeAsset("j0", parent=1, children=[3], rotation=list(random_quats(rng, 1)[0])),
             NodeAsset("j1", parent=2, children=[4], translation=[0, 1, 0]),
             NodeAsset("j2", parent=3, children=[5], translation=[0, 1, 0], scale=[1.1, 0.9, 1.0]),
             NodeAsset("j3", parent=4, children=[6], translation=[0, 0.5, 0]),
             NodeAsset("prop", parent=5, mesh=1, translation=[0.1, 0.2, 0])]      # a rigid part on the chain
    inv = np.stack([np.eye(4)] * 4)
    inv[:, 1, 3] = [0.0, -1.0, -2.0, -2.5]
    skins = [SkinAsset(np.array([2, 3, 4, 5]), inv)]
    k = 6
    times = np.sort(rng.random(k)) * 2.0
    times[0] = 0.0
    lin_t = rng.normal(size=(k, 3))
    cub_s = 1.0 + 0.2 * rng.normal(size=(3 * k, 3))
    a = AnimationClip("a", float(times[-1]), node_channels=[
        NodeChannel(2, "rotation", times, random_quats(rng, k), "LINEAR"),
        NodeChannel(3, "translation", times, lin_t, "LINEAR"),
        NodeChannel(4, "scale", times, cub_s, "CUBICSPLINE"),
        NodeChannel(5, "rotation", times[:3], random_quats(rng, 3), "STEP"),
        NodeChannel(1, "translation", times, rng.normal(size=(k, 3)), "STEP"),
        NodeChannel(1, "translation", times, rng.normal(size=(k, 3)), "LINEAR")])   # the later one wins
    tb = np.linspace(0.0, 1.5, 4)
    qc = np.concatenate([0.1 * rng.normal(size=(1, 4)), random_quats(rng, 1), 0.1 * rng.normal(size=(1, 4))] * 4)
    bclip = AnimationClip("b", 1.5, node_channels=[
        NodeChannel(3, "rotation", tb, qc, "CUBICSPLINE"),
        NodeChannel(4, "translation", tb, rng.normal(size=(4, 3)), "LINEAR"),
        NodeChannel(2, "scale", tb[:1], np.array([[1.2, 1.2, 0.8]]), "LINEAR")])    # one key: held
    meshes = [MeshAsset("m", [b]), MeshAsset("p", [random_prim(rng, 30, 0, 0.0)])]
    return SceneAsset(nodes=nodes, meshes=meshes, skins=skins, animations=[a, bclip],
                      roots=[0, 1])


def expected_world(rt, inst, i):
    """numpy: instance i's primitive morphed at its own weights, skinned by its own palette (world space)."""
    crowd = rt.crowd
    v = inst.prim.vertices
    if inst.is_morphing:
        w = crowd.weights[i][rt.pose.slice_of(inst.node)][:inst.target_count]
        p, n, t = morph_reference(inst.prim, w)
    else:
        p, n, t = v["position"], v["normal"], v["tangent"]
    return skin_reference(p, n, np.asarray(t), v["joints"], v["weights"], crowd.skin_matrices(inst.prim.skin)[i])


def pose_randomly(rt, rng, rows=None):
    crowd = rt.crowd
    r = np.arange(crowd.count) if rows is None else np.asarray(rows)
    crowd.set_all_weights(rng.random((len(r), crowd.weights.shape[1])), rows=r)
    T, R, S = (np.array(a)[r] for a in crowd.local)
    ang = rng.random(R.shape[:2]) * 1.5
    R[:] = np.stack([np.zeros_like(ang), np.sin(ang / 2), np.zeros_like(ang), np.cos(ang / 2)], -1)
    crowd.set_local(rotation=R, rows=r)


def skinned_positions(ctx, skin, slot, d, i):
    raw = M.readback(ctx, skin.outputs[slot], np.uint8, count=48 * d.vertex_count, offset=d.offset_of(i))
    return raw.view(STATIC_VERTEX)["position"].copy()



class SlotFrames:
    """Frames in flight as the crowd tests submit them: a fence and a command buffer per slot. ``submit(slot,
    record)`` first waits for (and frees) the slot's previous frame, then records ``record(cb)`` into a new command
    buffer and submits it with the slot's fence; ``destroy()`` frees what is left."""

    def __init__(self, ctx, slots: int = 2):
        from vkmorph.gpu.vk import call, vk

        self.ctx = ctx
        self.fences = [call("vkCreateFence", ctx.device, vk.VkFenceCreateInfo(), None) for _ in range(slots)]
        self.cbs = [None] * slots

    def wait(self, slot: int) -> None:
        """The host waits only for the frame that last used ``slot`` (nothing when none did)."""
        if self.cbs[slot] is not None:
            self.ctx.wait_fence(self.fences[slot])
            self.ctx.free_command_buffer(self.cbs[slot])
            self.cbs[slot] = None

    def submit(self, slot: int, record) -> None:
        self.wait(slot)
        cb = self.cbs[slot] = self.ctx.allocate_command_buffer()
        self.ctx.begin(cb)
        record(cb)
        self.ctx.end(cb)
        self.ctx.submit([cb], fence=self.fences[slot])

    def destroy(self) -> None:
        from vkmorph.gpu.vk import vk

        for cb in self.cbs:
            if cb is not None:
                self.ctx.free_command_buffer(cb)
        for fnc in self.fences:
            vk.vkDestroyFence(self.ctx.device, fnc, None)
