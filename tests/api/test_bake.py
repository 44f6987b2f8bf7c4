"""The batched GPU bake (vkmorph/bake.py) against the per-frame numpy reference, under the validation layer with
synchronization validation (the model fixture fails on any message): weights that change every frame, several
batches in flight, both spaces, with and without skinning, overrides; and the numpy baseline against the same
reference. Tolerances: positions 2e-5 (float32 on the GPU against float64 in numpy, coordinates of order 1-10),
unit normals and tangents 2e-4."""

from __future__ import annotations

import numpy as np
import pytest

from vkmorph.bake import bake_numpy, bake_numpy_fast, frame_weights, measure_bake_throughput, weight_runs

pytestmark = pytest.mark.gpu

ROBOT = ("RobotExpressive", "RobotExpressive.glb")
CUBE = ("AnimatedMorphCube", "AnimatedMorphCube.gltf")


def _close(a, b, pos=2e-5, unit=2e-4):
    np.testing.assert_allclose(a.positions, b.positions, atol=pos)
    np.testing.assert_allclose(a.normals, b.normals, atol=unit)
    np.testing.assert_allclose(a.tangents, b.tangents, atol=unit)


@pytest.mark.parametrize("model", [CUBE], indirect=True)
def test_weights_changing_every_frame_over_several_batches_in_flight(model):
    clip = model.clips[0]
    times = np.linspace(0.0, model.scene.clip(clip).duration, 11)
    W = frame_weights(model, model.scene.clip(clip), times, None)
    assert len(weight_runs(W)) > 5                     # the morph pass really runs per frame
    for space in ("mesh", "world"):
        gpu = model.bake(clip=clip, times=times, space=space, batch_frames=3)    # 4 batches, 2 slots reused
        ref = bake_numpy(model, clip=clip, times=times, space=space)
        _close(gpu, ref)
        assert np.abs(gpu.positions[0] - gpu.positions[5]).max() > 1e-2      # it moved
        _close(bake_numpy_fast(model, clip=clip, times=times, space=space), ref)


@pytest.mark.parametrize("model", [ROBOT], indirect=True)
def test_skinned_rigid_and_morphing_parts_with_overrides_match_the_reference(model):
    times = np.linspace(0.0, 2.0, 7)
    name = model.target_names[0]
    for space, skinning in (("world", True), ("mesh", True), ("mesh", False), ("world", False)):
        gpu = model.bake(clip="Wave", times=times, weights={name: 0.8}, space=space, skinning=skinning,
                         batch_frames=4)
        ref = bake_numpy(model, clip="Wave", times=times, weights={name: 0.8}, space=space, skinning=skinning)
        _close(gpu, ref)
    fast = bake_numpy_fast(model, clip="Wave", times=times, weights={name: 0.8}, space="world")
    _close(fast, bake_numpy(model, clip="Wave", times=times, weights={name: 0.8}, space="world"))


@pytest.mark.parametrize("model", [CUBE, ROBOT], indirect=True)
def test_a_bake_leaves_the_runtime_and_skeleton_at_its_last_frame(model):
    """GpuBaker.run sets the last frame (Model._reset + _apply) while the device runs the last batch: afterwards
    the runtime's weights and the skeleton are those of the last time, as ``Model.pose`` reads them for bounds."""
    clip = model.scene.clip(model.clips[0])
    times = np.r_[np.linspace(0.0, clip.duration, 8), 0.37 * clip.duration]     # the last frame mid-clip
    model.bake(clip=model.clips[0], times=times, space="world", batch_frames=2)
    flat, world = np.array(model.runtime.pose.flat), np.array(model.skeleton.world_matrices())
    model._reset()
    model._apply(clip, times[-1], None)
    np.testing.assert_array_equal(flat, model.runtime.pose.flat)
    np.testing.assert_array_equal(world, model.skeleton.world_matrices())


@pytest.mark.parametrize("model", [CUBE, ROBOT], indirect=True)
def test_frame_weights_are_what_reset_and_apply_set_frame_by_frame(model):
    clip = model.scene.clip(model.clips[0])
    times = np.r_[-0.5, np.linspace(0.0, clip.duration, 9), clip.duration + 1.0]   # clamped at both ends
    W = frame_weights(model, clip, times, None)
    for f, t in enumerate(times):
        model._reset()
        model._apply(clip, t, None)
        np.testing.assert_array_equal(W[f].astype(np.float32), model.runtime.pose.flat)


@pytest.mark.parametrize("model", [ROBOT], indirect=True)
def test_throughput_reports_gpu_numpy_readback_with_spread(model):
    r = measure_bake_throughput(frames=8, model=model, repeats=2)
    assert r["repeats"] == 2 and r["frames"] == 8 and r["vertices"] == 7214
    for k in ("gpu", "numpy", "readback"):
        assert 0 < r[f"{k}_s_min"] <= r[f"{k}_s"] <= r[f"{k}_s_max"]
    assert r["speedup_min"] <= r["speedup"] <= r["speedup_max"]
    assert r["readback_fraction_min"] <= r["readback_fraction"] <= r["readback_fraction_max"]
    assert r["max_error"] < 2e-5 and r["numpy_max_error"] < 2e-5 and r["gpu_cpu_s"] > 0
    # the untimed warm-ups, reported apart (the first bake builds the model's resources)
    assert len(r["gpu_warmup_s"]) == len(r["numpy_warmup_s"]) == 2 and min(r["gpu_warmup_s"]) > 0
    from vkmorph.app.bench_bake import bake_line

    assert "untimed warm-ups, the first bake building its resources and pipelines: GPU " in bake_line(r)


@pytest.mark.parametrize("model", [ROBOT], indirect=True)
def test_bake_resources_are_kept_per_configuration_and_released(model):
    before = sorted(model.ctx.live_children)
    model.bake(clip="Dance", times=np.linspace(0, 1, 5), space="world")
    kept = model._bake_cache
    model.bake(clip="Dance", times=np.linspace(0, 2, 5), space="world")
    assert model._bake_cache is kept                          # same space, skinning, batch size: reused
    model.bake(clip="Dance", times=np.linspace(0, 2, 5), space="mesh")
    assert model._bake_cache is not kept
    assert sorted(model.ctx.live_children) != before
    model._free_bake_cache()
    assert sorted(model.ctx.live_children) == before


def test_progress_bar_only_when_asked_or_long_on_a_terminal():
    from vkmorph.bake import _progress

    assert _progress(1000, False) is None and _progress(10, None) is None
    bar = _progress(1000, True)
    assert bar is not None and bar.total == 1000 and not bar.disable
    bar.close()
    quiet = _progress(1000, None)             # pytest's stderr is no TTY: tqdm disables itself
    assert quiet is not None and quiet.disable
    quiet.close()


@pytest.mark.parametrize("model", [ROBOT], indirect=True)
def test_direct_and_copied_readbacks_both_match_the_reference(model):
    """The copy path (zero_copy=False): the kernel writing host-visible memory itself (lavapipe: host-cached
    device-local memory) and the discrete-GPU path (device-local output, one vkCmdCopyBuffer per batch) give the
    reference's bake; batches of 3 frames over two slots, so each slot is rewritten after its readback."""
    from vkmorph.bake import GpuBaker
    from vkmorph.gpu.memory import host_cached_device_memory

    clip = model.scene.clip("Wave")
    times = np.linspace(0.0, 2.0, 8)
    ref = bake_numpy(model, clip="Wave", times=times, space="world")
    for direct in (True, False):
        gpu = GpuBaker(model, "world", direct=direct, zero_copy=False).run(clip, times, None, 3, False)
        assert model._bake_cache.direct is direct and not model._bake_cache.zero_copy
        assert all(s.staging is None for s in model._bake_cache.slots) is direct
        _close(gpu, ref)
    if model.ctx.info.device_type == "cpu":
        assert host_cached_device_memory(model.ctx)         # lavapipe: the default is the direct path


@pytest.mark.parametrize("model", [ROBOT], indirect=True)
def test_pose_on_the_gpu_matches_the_reference_and_the_host_pose(model):
    """Both spaces (skinned and rigid parts; mesh-space palettes relative to the mesh node, inverted by the pass),
    with and without skinning: the pose pass (crowd_anim.comp through ClipPosePass) writes every batch's matrices,
    the host writes only the frames' times; times beyond both ends are clamped, no clip is the rest pose; batches
    of 3 over two slots."""
    from vkmorph.bake import GpuBaker

    clip = model.scene.clip("Dance")
    times = np.r_[-0.25, np.linspace(0.0, clip.duration, 6), clip.duration + 0.5]
    for space, skinning in (("world", True), ("world", False), ("mesh", True)):
        baker = GpuBaker(model, space, skinning)
        gpu = baker.run(clip, times, None, 3, False)
        assert baker.gpu_pose and baker.pose_refusal is None
        assert model._bake_cache.pose is not None                   # posed by the pass, not by PoseBatch
        assert all(s.matrices.mapped is None for s in model._bake_cache.slots)      # device-local: no host write
        ref = bake_numpy(model, clip="Dance", times=times, space=space, skinning=skinning)
        _close(gpu, ref)
        host = GpuBaker(model, space, skinning, pose="cpu").run(clip, times, None, 3, False)
        assert model._bake_cache.pose is None
        _close(host, ref)
        assert np.abs(gpu.positions[1] - gpu.positions[4]).max() > 1e-2           # it moved
    rest = GpuBaker(model, "world", pose="gpu")                 # Model.pose's one frame, here posed on the GPU
    _close(rest.run(None, np.zeros(1), None, None, False), bake_numpy(model, space="world"))   # no clip: rest pose
    assert rest.gpu_pose
    one = GpuBaker(model, "world")
    _close(one.run(clip, times[3:4], None, None, False), bake_numpy(model, clip="Dance", times=times[3:4],
                                                                  space="world"))
    assert not one.gpu_pose                                    # one frame by default: cheaper on the host


@pytest.mark.parametrize("model", [ROBOT], indirect=True)
def test_bad_pose_arguments_are_one_line(model):
    from vkmorph.asset.model import AnimationClip
    from vkmorph.bake import GpuBaker
    from vkmorph.errors import UsageError

    with pytest.raises(UsageError, match="pose must be"):
        GpuBaker(model, "world", pose="fast")
    assert not GpuBaker(model, "mesh", False).gpu_pose         # nothing to pose: every part copied as stored
    foreign = AnimationClip("elsewhere", 1.0)
    with pytest.raises(UsageError, match="'elsewhere' is not one of the scene's animations"):
        GpuBaker(model, "world").run(foreign, np.zeros(2), None, None, False)


def test_a_clip_that_scales_the_mesh_node_to_zero_is_posed_on_the_host_in_mesh_space(tmp_path):
    """Mesh-space palettes of a singular mesh node need the host's pseudo-inverse: that clip falls back to the host
    pose and says why; world space and a clip without the zero scale stay on the GPU."""
    import vkmorph
    from tests.asset.gltf_build import skinned_morph_model, write_gltf
    from vkmorph.bake import GpuBaker
    from vkmorph.errors import UsageError

    doc, binary = skinned_morph_model()       # clip 'move': mesh node 'body' scale 1 -> 0 at 0.5 s -> 1 at 1 s
    m = vkmorph.open(write_gltf(tmp_path / "hide.gltf", doc, binary), validation=True)
    try:
        clip = m.scene.clip("move")
        times = np.linspace(0.0, 1.0, 5)
        baker = GpuBaker(m, "mesh")
        out = baker.run(clip, times, None, 2, False)
        assert not baker.gpu_pose and "'body' is scaled to 0" in baker.pose_refusal
        _close(out, bake_numpy(m, clip="move", times=times, space="mesh"))
        with pytest.raises(UsageError, match="cannot be computed on the GPU: mesh-space"):
            GpuBaker(m, "mesh", pose="gpu").run(clip, times, None, 2, False)
        world = GpuBaker(m, "world")
        _close(world.run(clip, times, None, 2, False), bake_numpy(m, clip="move", times=times, space="world"))
        assert world.gpu_pose
        rest = GpuBaker(m, "mesh", pose="gpu")
        _close(rest.run(None, np.zeros(1), None, None, False), bake_numpy(m, space="mesh"))
        assert rest.gpu_pose
    finally:
        m.close()
    assert not m.messages, m.messages


@pytest.mark.parametrize("model", [ROBOT], indirect=True)
def test_uniform_windows_of_a_few_frames_match_the_reference_and_the_storage_kernel(model):
    """bake_ubo.comp reads the frames' matrices through a dynamic uniform buffer, a window of frames per dispatch at
    its dynamic offset: windows of 2 frames in batches of 5 (windows of 2, 2, 1 per batch, two slots), posed on
    the GPU and on the host, both spaces; the storage-buffer kernel (window=0) gives the same bake. World space
    shares the four skins' one palette (equal joints and inverse binds), mesh space keeps one per mesh node."""
    from vkmorph.bake import GpuBaker
    from vkmorph.gpu.interface import BAKE, BAKE_SKINNED, BAKE_UBO, BAKE_WIDE

    clip = model.scene.clip("Dance")
    times = np.r_[-0.25, np.linspace(0.0, clip.duration, 11)]
    for space in ("world", "mesh"):
        ref = bake_numpy(model, clip="Dance", times=times, space=space)
        for pose in (None, "cpu"):
            baker = GpuBaker(model, space, pose=pose, window=2)
            assert baker.window == 2
            gpu = baker.run(clip, times, None, 5, False)
            # the uniform window's kernel (an explicit window is not the wide kernel: tests/api/test_bake_wide.py)
            assert model._bake_cache.pipeline.iface is BAKE_UBO and not baker.wide_stores
            assert model._bake_cache.window == 2
            _close(gpu, ref)
        lay = baker.layout
        skinned = {lay.matrix[k] for k, mode in enumerate(lay.modes) if mode == BAKE_SKINNED}
        assert len(skinned) == (1 if space == "world" else 4)
        full = GpuBaker(model, space, wide_stores=False)      # as many frames as fit the 64 KiB window
        assert full.window == 1024 // lay.matrices_per_frame > 2
        _close(full.run(clip, times, None, 5, False), ref)
        default = GpuBaker(model, space)                      # CPU devices: the wide kernel, a texel buffer
        _close(default.run(clip, times, None, 5, False), ref)
        assert model._bake_cache.pipeline.iface is (BAKE_WIDE if default.wide_stores else BAKE_UBO)
        assert default.window == (0 if default.wide_stores else full.window)
        ssbo = GpuBaker(model, space, window=0)
        _close(ssbo.run(clip, times, None, 5, False), ref)
        assert model._bake_cache.pipeline.iface is BAKE and model._bake_cache.window == 0


@pytest.mark.parametrize("model", [CUBE], indirect=True)
def test_uniform_windows_start_where_the_weight_runs_do(model):
    """Morphing parts are dispatched per run of equal weights (here every frame): each run's windows start at
    the run's first frame, not at a multiple of the window."""
    from vkmorph.bake import GpuBaker

    clip = model.scene.clip(model.clips[0])
    times = np.linspace(0.0, clip.duration, 11)
    ref = bake_numpy(model, clip=model.clips[0], times=times, space="world")
    for window in (1, 3):
        _close(GpuBaker(model, "world", window=window).run(clip, times, None, 7, False), ref)


@pytest.mark.parametrize("model", [ROBOT], indirect=True)
def test_a_frame_whose_matrices_exceed_the_window_keeps_the_storage_kernel(model, monkeypatch):
    from vkmorph.bake import GpuBaker
    from vkmorph.errors import UsageError
    from vkmorph.gpu import interface

    monkeypatch.setattr(interface, "BAKE_UBO_MATRICES", 40)     # RobotExpressive: 58 matrices a frame
    baker = GpuBaker(model, "world", wide_stores=False)         # (the wide kernel has no window: a texel buffer)
    assert baker.window == 0
    times = np.linspace(0.0, 1.0, 4)
    _close(baker.run(model.scene.clip("Dance"), times, None, None, False),
           bake_numpy(model, clip="Dance", times=times, space="world"))
    assert model._bake_cache.pipeline.iface is interface.BAKE
    assert GpuBaker(model, "mesh", False).window == 0            # nothing reads matrices
    for bad in (-1, True, 2.0):
        with pytest.raises(UsageError, match="window must be None or an int >= 0"):
            GpuBaker(model, "world", window=bad)


@pytest.mark.parametrize("model", [ROBOT], indirect=True)
def test_a_kernel_per_mode_matches_the_one_kernel_and_the_reference(model):
    """split_modes: a pipeline per mode (the kernel specialized through BAKE_MODE), the items of each source sorted
    by mode and dispatched per mode; RobotExpressive has rigid, skinned and morphing parts (world space) and
    copied ones (mesh space without skinning). Windows of 2 frames in batches of 5, the full window, the storage
    kernel; the default splits on a CPU device only."""
    from vkmorph.bake import GpuBaker
    from vkmorph.gpu import memory as M
    from vkmorph.gpu.interface import BAKE_ANY, BAKE_ITEM, BAKE_MODE_ID, BAKE_SKIP_ZERO_ID

    clip = model.scene.clip("Wave")
    times = np.linspace(0.0, 2.0, 12)
    name = model.target_names[0]
    for space, skinning in (("world", True), ("mesh", False)):
        ref = bake_numpy(model, clip="Wave", times=times, weights={name: 0.8}, space=space, skinning=skinning)
        for window in (2, None, 0):
            one = GpuBaker(model, space, skinning, window=window, split_modes=False)
            a = one.run(clip, times, {name: 0.8}, 5, False)
            res = model._bake_cache
            assert list(res.pipelines) == [None] and not res.split
            split = GpuBaker(model, space, skinning, window=window, split_modes=True)
            rest = split.layout.rest                          # interleave the modes (the sort must regroup them)
            rest[:] = rest[::2] + rest[1::2][::-1]
            b = split.run(clip, times, {name: 0.8}, 5, False)
            res = model._bake_cache
            modes = {split.layout.modes[k] for k in range(len(split.layout.modes))}
            assert res.split and set(res.pipelines) == modes
            assert all(p.specialization == {BAKE_MODE_ID: m, BAKE_SKIP_ZERO_ID: 0}
                       for m, p in res.pipelines.items())
            table = M.readback(model.ctx, res.items, BAKE_ITEM)
            for _, first, count, _, mode in res.groups:       # each dispatch group: one source, one mode
                assert mode != BAKE_ANY and set(table["mode"][first:first + count].tolist()) == {mode}
            # one group per (source, mode): the items were sorted, so a mode is one dispatch per window
            assert len(res.groups) == len({(g[0], g[4]) for g in res.groups})
            _close(a, ref)
            _close(b, ref)
            _close(a, b, pos=1e-6, unit=1e-6)
    default = GpuBaker(model, "world")
    assert default.split_modes is (model.ctx.info.device_type == "cpu")


@pytest.mark.parametrize("model", [CUBE], indirect=True)
def test_a_kernel_per_mode_with_weight_runs_over_several_batches(model):
    """The morphing parts' dispatches per run of equal weights (every frame here) with a kernel per mode, windows
    of 1 and 3 frames, batches of 4 (three batches, two slots)."""
    from vkmorph.bake import GpuBaker

    clip = model.scene.clip(model.clips[0])
    times = np.linspace(0.0, clip.duration, 11)
    assert len(weight_runs(frame_weights(model, clip, times, None))) > 5
    for space in ("world", "mesh"):
        ref = bake_numpy(model, clip=model.clips[0], times=times, space=space)
        for window in (1, 3):
            _close(GpuBaker(model, space, window=window, split_modes=True).run(clip, times, None, 4, False), ref)
            assert model._bake_cache.split


@pytest.mark.parametrize("model", [CUBE], indirect=True)
def test_bad_split_modes_is_one_line(model):
    from vkmorph.bake import GpuBaker
    from vkmorph.errors import UsageError

    with pytest.raises(UsageError, match="split_modes must be None, True or False, got 'yes'"):
        GpuBaker(model, "world", split_modes="yes")
    for bad in (1, 0, 0.0):                    # equal to True / False, but not them
        with pytest.raises(UsageError, match="split_modes must be None, True or False"):
            GpuBaker(model, "world", split_modes=bad)


@pytest.mark.parametrize("model", [ROBOT], indirect=True)
def test_the_pose_pass_in_workgroups_of_a_few_frames_matches_the_host_pose(model, monkeypatch):
    """On a CPU device the pose pass runs a batch in one workgroup per host CPU (``_pose_group``: multiples of 8
    frames, at most 64): batches of 64 and of 20 frames (workgroups of 32 and 16 on two CPUs, the last one
    partial; 64 and 24 on one) against the host's pose, which reads the same clip."""
    import os

    from vkmorph import bake as B

    clip = model.scene.clip("Dance")
    times = np.linspace(0.0, clip.duration, 70)
    host = B.GpuBaker(model, "world", pose="cpu").run(clip, times, None, 64, False)
    expected = {1: {64: 64, 20: 24}, 2: {64: 32, 20: 16}}
    for cpus in (2, 1):
        monkeypatch.setattr(os, "cpu_count", lambda c=cpus: c)
        for batch in (64, 20):
            gpu = B.GpuBaker(model, "world", pose="gpu").run(clip, times, None, batch, False)
            group = model._bake_cache.pose.pose.local_size
            if model.ctx.info.device_type == "cpu":
                assert group == B._pose_group(model.ctx, batch) == expected[cpus][batch]
            _close(gpu, host, pos=1e-5, unit=1e-5)
