"""Weights without a transfer in the frame (issue 26 item 5): with ``weight_writes="host"`` (the default with
several output slots on a device with device-local host-visible memory, lavapipe's only kind) each output slot
has its own host-visible weight and active-bit buffers that the CPU writes while ``record`` runs, so a changed
frame records no vkCmdUpdateBuffer and no transfer -> compute barrier; vkQueueSubmit orders the host writes.
Checked on lavapipe under synchronization validation across submissions (frames in flight, no wait between
them) with weights changing every frame, every frame's output exact against the numpy reference; the
vkCmdUpdateBuffer path stays available (forced, and the default with one slot)."""

from __future__ import annotations

import numpy as np
import pytest

from tests.helpers import random_prim
from vkmorph.errors import UsageError
from vkmorph.morph.reference import morph_reference

pytestmark = pytest.mark.gpu


def _scene(rng):
    from vkmorph.app.bench_data import synthetic_scene

    return synthetic_scene([random_prim(rng, int(rng.integers(50, 600)), int(rng.integers(2, 9)), 0.3)
                            for _ in range(5)])


def _spy(monkeypatch):
    """Counts vkCmdUpdateBuffer calls and collects the names of the barriers the morph pass records."""
    from vkmorph.gpu import barriers
    from vkmorph.gpu.vk import vk

    seen = {"updates": 0, "barriers": []}
    update, record = vk.vkCmdUpdateBuffer, barriers.record

    def counting_update(*a):
        seen["updates"] += 1
        return update(*a)

    def naming_record(cb, b, *a, **k):
        seen["barriers"].append(b.name)
        return record(cb, b, *a, **k)
    monkeypatch.setattr(vk, "vkCmdUpdateBuffer", counting_update)
    monkeypatch.setattr(barriers, "record", naming_record)
    return seen


def _frames_in_flight(ctx, rt, rng, frames: int, spy):
    """``frames`` frames, frame i into slot i % slots, each with new random weights for every node, submitted
    without waiting (the host waits only for the fence of the frame that last used a slot, as docs/embedding.md
    requires); returns the largest position / normal error of any frame's output against numpy."""
    from vkmorph.gpu.vk import call, vk

    S = rt.slots
    cbs = [ctx.allocate_command_buffer() for _ in range(S)]
    fences = [call("vkCreateFence", ctx.device, vk.VkFenceCreateInfo(), None) for _ in range(S)]
    pending: list = [None] * S
    worst = [0.0, 0.0]

    def collect(k):
        ctx.wait_fence(fences[k])
        serial, weights, reads = pending[k]
        ctx.completed(serial)
        for inst, rb in reads:
            out = rb.vertices()
            p, n, _ = morph_reference(inst.prim, weights[inst.node][: inst.target_count].astype(np.float64))
            worst[0] = max(worst[0], float(np.abs(out["position"] - p).max()))
            worst[1] = max(worst[1], float(np.abs(out["normal"] - n).max()))
        pending[k] = None

    try:
        for i in range(frames):
            k = i % S
            if pending[k] is not None:
                collect(k)
            weights = {}
            for node in rt.pose.morph_nodes:
                w = rng.random(len(rt.pose.weights(node)))
                w[rng.random(len(w)) < 0.3] = 0.0
                rt.set_weights(node, w)
                weights[node] = rt.pose.weights(node).copy()
            cb = cbs[k]
            vk.vkResetCommandBuffer(cb, 0)
            ctx.begin(cb, vk.VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT)
            before = (spy["updates"], len(spy["barriers"]))
            c = rt.record(cb, slot=k, consumer="transfer")
            frame_updates, frame_barriers = spy["updates"] - before[0], spy["barriers"][before[1]:]
            assert c.dispatched == len(rt.morphing) and c.update_calls == frame_updates
            if rt.weight_writes == "host":
                assert frame_updates == 0 and "transfer write -> compute read" not in frame_barriers
                assert c.barriers == 2 == len(frame_barriers)            # the guard and the consumer barrier
            else:
                assert frame_updates > 0 and "transfer write -> compute read" in frame_barriers
            reads = [(inst, rt.record_readback(cb, inst.node, slot=k)) for inst in rt.morphing]
            ctx.end(cb)
            ctx.submit([cb], fence=fences[k])
            pending[k] = (ctx.last_serial, weights, reads)
        for k in range(S):
            if pending[k] is not None:
                collect(k)
    finally:
        for k in range(S):
            if pending[k] is not None:
                ctx.wait_fence(fences[k])
                ctx.completed(pending[k][0])
            vk.vkDestroyFence(ctx.device, fences[k], None)
            ctx.free_command_buffer(cbs[k])
    return worst


@pytest.mark.parametrize("slots,delta_format", [(2, "full"), (3, "compact")])
def test_host_written_weights_per_slot_record_no_transfer_and_stay_exact_in_flight(ctx, monkeypatch, slots,
                                                                                   delta_format):
    """compact: the per-vertex kernel's pre-scaled weights (4 words per slot) take the same path."""
    from vkmorph.render.morph_pass import MorphRuntime

    rng = np.random.default_rng(slots)
    spy = _spy(monkeypatch)
    tol = 1.0 if delta_format == "full" else 30.0          # snorm16 deltas: a few 1e-5 of these coordinates
    with MorphRuntime(ctx, _scene(rng), slots=slots, delta_format=delta_format) as rt:
        assert rt.weight_writes == "host"          # the default with several slots on lavapipe
        assert len({id(b) for b in rt.batch.slot_weights}) == slots
        err_p, err_n = _frames_in_flight(ctx, rt, rng, 4 * slots + 1, spy)
    assert err_p < tol * 1e-5 and err_n < tol * 1e-4, (err_p, err_n)


def test_transfer_path_forced_and_host_path_with_one_slot(ctx, monkeypatch):
    from vkmorph.render.morph_pass import MorphRuntime

    rng = np.random.default_rng(7)
    spy = _spy(monkeypatch)
    scene = _scene(rng)
    with MorphRuntime(ctx, scene, slots=2, weight_writes="transfer") as rt:
        assert rt.weight_writes == "transfer"
        err_p, err_n = _frames_in_flight(ctx, rt, rng, 6, spy)
        assert err_p < 1e-5 and err_n < 1e-4, (err_p, err_n)
    with MorphRuntime(ctx, scene) as rt:
        assert rt.weight_writes == "transfer"      # one slot: frames in flight need the GPU-timeline upload
    with MorphRuntime(ctx, scene, weight_writes="host") as rt:   # one slot, the host waits for every frame
        for _ in range(3):
            for node in rt.pose.morph_nodes:
                rt.set_weights(node, rng.random(len(rt.pose.weights(node))))
            ctx.submit_and_wait(rt.record)
            assert rt.last_counters.update_calls == 0
            for inst in rt.morphing:
                p, _, _ = morph_reference(inst.prim, rt.pose.weights(inst.node)[: inst.target_count]
                                          .astype(np.float64))
                assert np.abs(rt.read_vertices(inst)["position"] - p).max() < 1e-5
    with pytest.raises(UsageError, match=r"^weight_writes must be one of \('auto', 'host', 'transfer'\)"):
        MorphRuntime(ctx, scene, weight_writes="push")
