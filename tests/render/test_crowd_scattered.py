"""Crowds whose changed instances are scattered (many runs of consecutive ones): the morph pass records a
bounded number of vkCmdUpdateBuffer calls and dispatches whatever the number of runs (the weights' gaps bridged,
one dispatch per binding group over the frame's instance list), and every instance stays exact against the
numpy reference, culled ones pending, per output slot; under validation + synchronization validation (the
``ctx`` fixture fails on any message)."""

from __future__ import annotations

import numpy as np
import pytest

from tests.render.crowd_scenes import crowd_scene
from vkmorph.morph.reference import morph_reference
from vkmorph.render.morph_pass import MorphRuntime


def weights_of(rt, row, inst):
    return rt.crowd.weights[row][rt.pose.slice_of(inst.node)][:inst.target_count]


def check_tol(rt, inst, instance, weights, tol):
    """Instance ``instance``'s output of ``inst`` (the slot last recorded) against the numpy reference."""
    out = rt.read_vertices(inst, instance=instance, slot=rt.last_counters.slot)
    p, _n, _t = morph_reference(inst.prim, weights)
    size = float(np.ptp(inst.prim.vertices["position"], axis=0).max()) or 1.0
    assert np.abs(out["position"] - p).max() <= tol * 1e-5 * size, f"instance {instance}"
    assert np.array_equal(out["texcoord"], inst.prim.vertices["texcoord"])


def _count_updates(monkeypatch):
    from vkmorph.gpu.vk import vk

    seen = {"updates": 0, "dispatches": 0}
    update, dispatch = vk.vkCmdUpdateBuffer, vk.vkCmdDispatch

    def counting_update(*a):
        seen["updates"] += 1
        return update(*a)

    def counting_dispatch(*a):
        seen["dispatches"] += 1
        return dispatch(*a)
    monkeypatch.setattr(vk, "vkCmdUpdateBuffer", counting_update)
    monkeypatch.setattr(vk, "vkCmdDispatch", counting_dispatch)
    return seen


@pytest.mark.parametrize("weight_writes,delta_format,slots,kernel", [
    ("transfer", "full", 1, "auto"), ("host", "full", 2, "auto"), ("transfer", "compact", 2, "auto"),
    ("host", "compact", 1, "auto"), ("transfer", "full", 2, "workgroup"), ("host", "compact", 2, "workgroup")])
def test_scattered_changes_every_frame_exact_per_slot(ctx, monkeypatch, weight_writes, delta_format, slots, kernel):
    """k scattered of N instances change every frame (some culled: they stay pending), frames alternate the
    output slots; every instance of the recorded slot equals the reference at the weights that slot applied.
    The output is bound in groups of 7 instances (a smaller maxStorageBufferRange), so list dispatches span
    several binding groups."""
    rng = np.random.default_rng(21)
    scene = crowd_scene(rng)
    out_bytes = 70656
    monkeypatch.setitem(ctx.info.limits, "maxStorageBufferRange", 7 * out_bytes + 100)
    N = 24
    from vkmorph.render import morph_batch
    if kernel == "workgroup" and not morph_batch.subgroup_ballot_in_compute(ctx):
        pytest.skip("no subgroup ballots in compute shaders on this device")
    tol = {"full": 1, "compact": 200}[delta_format]
    with MorphRuntime(ctx, scene, instances=N, slots=slots, delta_format=delta_format,
                      weight_writes=weight_writes, kernel=kernel) as rt:
        assert rt.weight_writes == weight_writes and rt.batch.group_instances == 7
        S = rt.crowd.weights.shape[1]
        applied = [np.zeros((N, S), np.float32) for _ in range(slots)]   # what each slot's outputs show
        for s in range(slots):    # frame 0 of every slot: all instances
            rt.crowd.set_all_weights((rng.random((N, S)) * (rng.random((N, S)) < 0.6)).astype(np.float32))
            ctx.submit_and_wait(lambda cb, s=s: rt.record(cb, slot=s))
            applied[s][:] = rt.crowd.weights
        lists = 0
        for frame in range(6):
            slot = frame % slots
            k = int(rng.integers(3, 9))
            rows = np.sort(rng.choice(N, k, replace=False))
            for i in rows.tolist():
                w = rng.random(S) * (rng.random(S) < 0.5)
                rt.crowd.set_all_weights(np.where(np.arange(N)[:, None] == i, w, rt.crowd.weights))
            visible = rng.random(N) < 0.8
            c: list = []
            ctx.submit_and_wait(lambda cb, c=c, slot=slot, visible=visible:
                                c.append(rt.record(cb, slot=slot, visible=visible)))
            # every instance whose weights differ from what this slot shows and that is visible is morphed
            pending = np.flatnonzero(np.any(applied[slot] != rt.crowd.weights, axis=1))
            seen = pending[visible[pending]]
            assert c[0].instances_dispatched == len(seen)
            assert c[0].instances_culled == len(pending) - len(seen)
            lists += c[0].dispatch_ranges > 1
            applied[slot][seen] = rt.crowd.weights[seen]
            for i in range(N):
                for inst in rt.morphing:
                    w = applied[slot][i][rt.pose.slice_of(inst.node)][:inst.target_count]
                    check_tol(rt, inst, i, w, tol)
        assert lists >= 3       # the list dispatch was exercised
        # everything visible again: the pending ones come back exact
        for slot in range(slots):
            ctx.submit_and_wait(lambda cb, slot=slot: rt.record(cb, slot=slot))
            for i in range(N):
                for inst in rt.morphing:
                    check_tol(rt, inst, i, weights_of(rt, i, inst), tol)


@pytest.mark.parametrize("weight_writes", ["transfer", "host"])
def test_recorded_calls_bounded_whatever_the_runs(ctx, monkeypatch, weight_writes):
    """k changed instances, one every ``stride``: the vkCmdUpdateBuffer calls and dispatches do not grow with
    k (the runs); instances_dispatched and workgroups follow k exactly."""
    rng = np.random.default_rng(4)
    scene = crowd_scene(rng)
    N = 400
    seen = _count_updates(monkeypatch)
    with MorphRuntime(ctx, scene, instances=N, slots=2, weight_writes=weight_writes) as rt:
        S = rt.crowd.weights.shape[1]
        rt.crowd.set_all_weights(rng.random((N, S)).astype(np.float32))
        ctx.submit_and_wait(lambda cb: rt.record(cb, slot=0))
        chunks = rt.batch._chunk_total
        # the whole crowd's weights + active bits in 64 KiB calls, and the list: the bound for any k
        row = 4 * rt.batch.instance_slots * rt.batch.weight_words
        bound = 2 * (-(-N * row // 65536)) + 4 if weight_writes == "transfer" else 0
        for stride in (2, 5, 10, 40):
            rows = np.arange(1, N, stride)
            w = rt.crowd.weights.copy()
            w[rows] = rng.random((len(rows), S))
            rt.crowd.set_all_weights(w)
            seen["updates"] = seen["dispatches"] = 0
            got: list = []
            ctx.submit_and_wait(lambda cb, got=got: got.append(rt.record(cb, slot=0)))
            c = got[0]
            assert c.instances_dispatched == len(rows) and c.groups == chunks * len(rows)
            assert c.dispatch_ranges == len(rows)          # that many runs ...
            assert c.dispatch_calls == seen["dispatches"] == 1     # ... one dispatch
            assert c.update_calls == seen["updates"] <= bound, (stride, c.update_calls)
            for i in (0, 1, 1 + stride, rows[-1], N - 1):   # spot checks (the test above checks every one)
                for inst in rt.morphing:
                    check_tol(rt, inst, int(i), weights_of(rt, int(i), inst), 1)


@pytest.mark.parametrize("weight_writes,slots", [("transfer", 1), ("host", 2)])
def test_scattered_frames_in_flight(ctx, weight_writes, slots):
    """Frames submitted without waiting for the previous one (two command buffers; with one slot the guard
    barrier orders the shared weights, active bits and instance list; with host-written weights the host waits
    for the fence of the frame that last used a slot): every frame's readback of every instance exact."""
    from vkmorph.gpu.vk import call, vk

    rng = np.random.default_rng(8)
    scene = crowd_scene(rng)
    N, frames = 12, 6
    with MorphRuntime(ctx, scene, instances=N, slots=slots, weight_writes=weight_writes) as rt:
        S = rt.crowd.weights.shape[1]
        cbs = [ctx.allocate_command_buffer() for _ in range(2)]
        fences = [call("vkCreateFence", ctx.device, vk.VkFenceCreateInfo(), None) for _ in range(2)]
        pending: list = [None, None]
        worst = [0.0]

        def collect(k):
            ctx.wait_fence(fences[k])
            serial, weights, reads = pending[k]
            ctx.completed(serial)
            for i, inst, rb in reads:
                w = weights[i][rt.pose.slice_of(inst.node)][:inst.target_count]
                p, _n, _t = morph_reference(inst.prim, w.astype(np.float64))
                worst[0] = max(worst[0], float(np.abs(rb.vertices()["position"] - p).max()))
            pending[k] = None
        try:
            for f in range(frames):
                k = f % 2
                if pending[k] is not None:
                    collect(k)
                w = rt.crowd.weights.copy()
                rows = np.sort(rng.choice(N, N // 3, replace=False)) if f else np.arange(N)
                w[rows] = rng.random((len(rows), S)) * (rng.random((len(rows), S)) < 0.6)
                rt.crowd.set_all_weights(w)
                cb = cbs[k]
                vk.vkResetCommandBuffer(cb, 0)
                ctx.begin(cb, vk.VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT)
                slot = f % slots
                c = rt.record(cb, slot=slot, consumer="transfer")
                assert c.dispatch_calls == 1
                reads = [(i, inst, rt.record_readback(cb, inst.node, slot=slot, instance=i))
                         for i in range(N) for inst in rt.morphing]
                ctx.end(cb)
                ctx.submit([cb], fence=fences[k])
                pending[k] = (ctx.last_serial, rt.crowd.weights.copy(), reads)
            for k in range(2):
                if pending[k] is not None:
                    collect(k)
        finally:
            for k in range(2):
                if pending[k] is not None:
                    ctx.wait_fence(fences[k])
                    ctx.completed(pending[k][0])
                vk.vkDestroyFence(ctx.device, fences[k], None)
                ctx.free_command_buffer(cbs[k])
        assert worst[0] <= 1e-4
