"""The benchmark's crowd section: N instances of RobotExpressive in one ``MorphRuntime(instances=N)``, every
instance changing its weights and its pose every frame (each at its own clip time and speed), against a frame
where nothing changed.

Per N: build time; per frame the CPU of animation (``CrowdState.play`` + ``set_all_weights``: vectorized
sampling over instances), palettes and model matrices (``crowd_draws().refresh()``) and ``record()``, each as
thread CPU time with wall time beside it (median of the frames); GPU ms of the morph pass (timestamps around
the recorded frame, one frame per submission); memory per instance (GPU: its morph outputs and weight slots;
CPU: its state). Only the morph pass exists for crowds so far: skinning, shadow and forward passes of crowds
are not measured here (the vertex-shader path draws them per instance; nothing records that yet).

``python -m vkmorph.app.crowd_bench [--quick] [--json OUT] [--markdown OUT]`` runs it alone (with the rows
below); ``vkmorph bench --only crowd`` runs the CPU-path rows.

GPU animation (``gpu_anim_costs``, ``--only-gpu-anim``): the same crowds with the skeleton sampled on the GPU
(``render/crowd_anim.CrowdAnimation``), CPU per frame split into weights, palettes pass, morph record and
skinning record; ``--gpu-scaling N k...``: k of N instances' weights changing while all play; ``--heads N...``:
Dawn-like heads as a crowd of one shared head, GPU ms and GPU bytes measured at each N.
"""

from __future__ import annotations

import argparse
import json
import math
import time

import numpy as np

from ..errors import UsageError

MODEL = "RobotExpressive"
COUNTS, COUNTS_QUICK = (1, 100, 1000, 10000), (1, 100, 1000)


def _timed(fn):
    c0, w0 = time.thread_time(), time.perf_counter()
    out = fn()
    return out, 1e3 * (time.thread_time() - c0), 1e3 * (time.perf_counter() - w0)


def crowd_costs(ctx, timer, counts=COUNTS, frames: int = 8) -> list[dict]:
    from .. import load_scene
    from .bench_data import find_model

    path = find_model(MODEL)
    if path is None:
        return []
    scene = load_scene(str(path))
    clip = max(scene.animations, key=lambda c: len(c.node_channels)) if scene.animations else None
    return [_crowd_row(ctx, timer, scene, clip, N, frames) for N in counts]


def _crowd_row(ctx, timer, scene, clip, N: int, frames: int) -> dict:
    from ..render.crowd_skin import CrowdSkinning
    from ..render.morph_pass import MorphRuntime

    rng = np.random.default_rng(N)
    rt, build_cpu, build_wall = _timed(lambda: MorphRuntime(ctx, scene, instances=N))
    skin, skin_skipped = None, ""
    try:
        try:
            skin = CrowdSkinning(rt, passes=3, path="compute")  # skin once per frame (shadow, forward, outline)
        except UsageError as exc:                              # too large to bind on this device: morph only
            skin_skipped = str(exc)
        crowd = rt.crowd
        duration = clip.duration if clip else 1.0
        phase = rng.random(N) * duration
        speed = 0.8 + 0.4 * rng.random(N)
        base_w = rng.random(crowd.weights.shape)
        lo, hi = rt.pose.weight_range
        stats: dict[str, list[float]] = {}

        def frame(f: int, changing: bool):
            ft = f if changing else 0
            t = (phase + speed * ft / 30.0) % duration
            w = lo + (hi - lo) * base_w * (0.5 + 0.5 * np.sin(0.3 * ft + 6.0 * base_w))
            if changing:      # unchanged frames: the host changes nothing (its clips paused)
                _, cpu_a, wall_a = _timed(lambda: (crowd.play(clip, t), crowd.set_all_weights(w)))
            else:
                cpu_a = wall_a = 0.0
            _, cpu_p, wall_p = _timed(lambda: rt.crowd_draws(0))
            rec = {}

            def seg(cb):
                rec["c"], rec["cpu"], rec["wall"] = _timed(lambda: rt.record(cb, consumer="compute"))

            def seg_skin(cb):
                rec["skinned"], rec["skin_cpu"], rec["skin_wall"] = _timed(lambda: skin.record(cb)) if skin \
                    else (0, 0.0, 0.0)
            gpu_ms, skin_ms = timer.run([seg, seg_skin], 1)
            key = "changed" if changing else "unchanged"
            for name, v in (("anim_cpu", cpu_a), ("anim_wall", wall_a), ("palette_cpu", cpu_p),
                            ("palette_wall", wall_p), ("record_cpu", rec["cpu"]), ("record_wall", rec["wall"]),
                            ("gpu", gpu_ms), ("instances_dispatched", rec["c"].instances_dispatched),
                            ("skin_cpu", rec["skin_cpu"]), ("skin_gpu", skin_ms), ("skinned", rec["skinned"])):
                stats.setdefault(f"{key}_{name}", []).append(v)

        for f in range(frames + 1):   # the first leaves the rest pose (dropped below)
            frame(f, True)
        for _ in range(frames + 1):   # nothing changed (the first of them still records the last change)
            frame(0, False)
        b = rt.batch
        row = {"instances": N, "build_cpu_ms": build_cpu, "build_wall_ms": build_wall,
               "gpu_bytes_per_instance": b.instance_stride * rt.slots
               + 4 * b.weight_words * b.instance_slots + b.instance_slots // 8,
               "palette_bytes_per_instance": int(sum(p[0].nbytes for p in crowd._palettes.values())),
               "cpu_state_bytes_per_instance": int(crowd._weights[0].nbytes + sum(a[0].nbytes for a in crowd._local)
                                                   + crowd._transform[0].nbytes + crowd._world[:, 0].nbytes),
               "frames": frames}
        for k, v in stats.items():
            row[k] = float(np.median(v[1:]))
        if skin is not None:
            row["skinned_bytes_per_instance"] = int(sum(48 * i.prim.vertex_count for i in skin.items))
        else:
            row["skinning_skipped"] = skin_skipped
        return row
    finally:
        if skin is not None:
            skin.destroy()
        rt.destroy()
        ctx.wait_idle()


def changed_scaling(ctx, timer, N: int = 1000, ks=(1, 10, 100, 1000), frames: int = 4) -> list[dict]:
    """k of N instances changing weights and pose per frame (every k-th one... spread over the crowd): CPU of
    the crowd's setters + palettes + record, GPU ms of the morph pass; cost should follow k, not N."""
    from .. import load_scene
    from ..render.morph_pass import MorphRuntime
    from .bench_data import find_model

    path = find_model(MODEL)
    if path is None:
        return []
    scene = load_scene(str(path))
    clip = max(scene.animations, key=lambda c: len(c.node_channels)) if scene.animations else None
    rt = MorphRuntime(ctx, scene, instances=N)
    out = []
    try:
        crowd, rng = rt.crowd, np.random.default_rng(0)
        ctx.submit_and_wait(lambda cb: rt.record(cb))
        rt.crowd_draws(0)
        for k in ks:
            rows = np.linspace(0, N - 1, k).astype(np.int64)
            cpu, gpu, disp = [], [], []
            for f in range(frames + 1):
                w = rng.random((k, crowd.weights.shape[1])) * rt.pose.weight_range[1]
                t = rng.random(k) * (clip.duration if clip else 1.0)
                c0 = time.thread_time()
                crowd.play(clip, t, rows=rows)
                crowd.set_all_weights(w, rows=rows)
                rt.crowd_draws(0)
                rec = {}

                def seg(cb, rec=rec):
                    rec["c"] = rt.record(cb)
                    rec["cpu"] = time.thread_time()
                ms = timer.run([seg], 1)[0]
                if f:
                    cpu.append(1e3 * (rec["cpu"] - c0))
                    gpu.append(ms)
                    disp.append(rec["c"].instances_dispatched)
            out.append({"instances": N, "changed": k, "cpu_ms": float(np.median(cpu)), "gpu_ms": float(np.median(gpu)),
                        "instances_dispatched": int(np.median(disp))})
    finally:
        rt.destroy()
        ctx.wait_idle()
    return out


def gpu_anim_costs(ctx, timer, counts=COUNTS, frames: int = 8) -> list[dict]:
    """The GPU animation path (``render/crowd_anim.CrowdAnimation``): instance k plays clip k mod clips at its
    own phase and speed, sampled on the GPU; per changing frame the clock moves and every instance's weights
    change (set by the host with ``set_all_weights``, as the CPU rows do: RobotExpressive's weight channels are
    constant, so its clips alone would change no weight; ``sample_weights``, the clips' channels on the CPU, is
    timed beside). Per N: CPU of animation (the weight setter), palettes (``CrowdAnimation.record``: host
    writes + recording) and ``record()`` (morph upload + dispatches), thread CPU with wall beside; GPU ms of
    the animation and morph passes; the same with nothing changed; build time; bytes per instance."""
    from .. import load_scene
    from .bench_data import find_model

    path = find_model(MODEL)
    if path is None:
        return []
    scene = load_scene(str(path))
    return [_gpu_anim_row(ctx, timer, scene, N, frames) for N in counts]


def _gpu_anim_row(ctx, timer, scene, N: int, frames: int) -> dict:
    from ..render.crowd_anim import CrowdAnimation
    from ..render.crowd_skin import CrowdSkinning
    from ..render.morph_pass import MorphRuntime

    rng = np.random.default_rng(N)
    rt, build_cpu, build_wall = _timed(lambda: MorphRuntime(ctx, scene, instances=N))
    anim = skin = None
    try:
        anim, anim_build_cpu, anim_build_wall = _timed(lambda: CrowdAnimation(rt))
        try:      # skin once per frame from the animation's palettes, where the device can bind the crowd
            skin = CrowdSkinning(rt, passes=3, path="compute", animation=anim)
        except UsageError:
            skin = None
        _play_clips(anim, N, rng)
        stats: dict[str, list[float]] = {}
        base_w = rng.random(rt.crowd.weights.shape)
        lo, hi = rt.pose.weight_range

        def frame(clock: float, changing: bool):
            if changing:    # the clips' weight channels (CPU), then every instance's weights set by the host
                _, cpu_c, wall_c = _timed(lambda: anim.sample_weights(clock))
                w = lo + (hi - lo) * base_w * (0.5 + 0.5 * np.sin(9.0 * clock + 6.0 * base_w))
                n_w, cpu_a, wall_a = _timed(lambda: rt.crowd.set_all_weights(w))
                stats.setdefault("clip_weights_cpu", []).append(cpu_c)
                stats.setdefault("clip_weights_wall", []).append(wall_c)
            else:
                n_w, cpu_a, wall_a = 0, 0.0, 0.0
            rec = {}

            def seg_anim(cb):
                rec["a"], rec["acpu"], rec["awall"] = _timed(lambda: anim.record(cb, time=clock))

            def seg_morph(cb):
                rec["c"], rec["cpu"], rec["wall"] = _timed(lambda: rt.record(cb, consumer="compute"))

            def seg_skin(cb):
                rec["s"], rec["scpu"], rec["swall"] = _timed(lambda: skin.record(cb)) if skin else (0, 0.0, 0.0)
            morph_ms, anim_ms, skin_ms = timer.run([seg_morph, seg_anim, seg_skin], 1)
            key = "changed" if changing else "unchanged"
            for name, v in (("anim_cpu", cpu_a), ("anim_wall", wall_a), ("palette_cpu", rec["acpu"]),
                            ("palette_wall", rec["awall"]), ("record_cpu", rec["cpu"]), ("record_wall", rec["wall"]),
                            ("anim_gpu", anim_ms), ("gpu", morph_ms), ("animated", rec["a"]),
                            ("weights_changed", n_w), ("instances_dispatched", rec["c"].instances_dispatched),
                            ("skin_cpu", rec["scpu"]), ("skin_wall", rec["swall"]), ("skin_gpu", skin_ms),
                            ("skinned", rec["s"])):
                stats.setdefault(f"{key}_{name}", []).append(v)

        for f in range(frames + 1):   # the first uploads every instance's parameters (dropped below)
            frame(f / 30.0, True)
        for _ in range(frames + 1):   # nothing changed: same clock, no setter (the first still records the last)
            frame(frames / 30.0, False)
        b = rt.batch
        morph_bytes = b.instance_stride * rt.slots + 4 * b.weight_words * b.instance_slots + b.instance_slots // 8
        anim_bytes = rt.slots * (16 + 64 + 64 * anim.palette_width)   # parameters, transform, palettes per slot
        row = {"instances": N, "path": "gpu", "build_cpu_ms": build_cpu + anim_build_cpu,
               "build_wall_ms": build_wall + anim_build_wall, "runtime_build_wall_ms": build_wall,
               "anim_build_wall_ms": anim_build_wall, "gpu_bytes_per_instance": morph_bytes + anim_bytes,
               "morph_bytes_per_instance": morph_bytes, "anim_bytes_per_instance": anim_bytes,
               "palette_bytes_per_instance": rt.slots * 64 * anim.palette_width,
               "cpu_state_bytes_per_instance": _cpu_state_bytes(rt.crowd) + 8 * 3 + 4, "frames": frames}
        for k, v in stats.items():
            row[k] = float(np.median(v[1:]))
        row["skinning"] = skin is not None
        return row
    finally:
        if skin is not None:
            skin.destroy()
        if anim is not None:
            anim.destroy()
        rt.destroy()
        ctx.wait_idle()


def _cpu_state_bytes(crowd) -> int:
    """Host bytes one instance adds to a CrowdState: weights, local TRS, transform, versions, flags, its world
    matrices and its palettes (the CPU caches)."""
    return int(crowd._weights[0].nbytes + sum(a[0].nbytes for a in crowd._local) + crowd._transform[0].nbytes
               + crowd._world[:, 0].nbytes + sum(p[0].nbytes for p in crowd._palettes.values()) + 8 * 5 + 1)


def _frame_cpu(c: dict, key: str, what: str = "cpu") -> float:
    """A frame's CPU (or wall) ms: weights + palettes pass + morph record + skinning record."""
    return sum(c[f"{key}_{p}_{what}"] for p in ("anim", "palette", "record", "skin"))


def gpu_anim_line(c: dict) -> str:
    total, idle = _frame_cpu(c, "changed"), _frame_cpu(c, "unchanged")
    return (f"crowd {c['instances']:>6,} (GPU animation): changing {total:.2f} ms CPU = {c['changed_anim_cpu']:.2f} "
            f"weights + {c['changed_palette_cpu']:.2f} palettes pass + {c['changed_record_cpu']:.2f} morph record + "
            f"{c['changed_skin_cpu']:.2f} skinning record (wall {_frame_cpu(c, 'changed', 'wall'):.2f}); GPU anim "
            f"{c['changed_anim_gpu']:.3f} ms, morph {c['changed_gpu']:.3f} ms; unchanged {idle:.3f} ms CPU; build "
            f"{c['build_wall_ms']:.0f} ms wall; {c['gpu_bytes_per_instance'] / 1024:.1f} KiB GPU per instance")


def gpu_anim_markdown(rows: list[dict]) -> list[str]:
    if not rows:
        return []
    base = rows[0]["build_wall_ms"]
    out = ["", f"Crowds with GPU animation ({MODEL} x N, instance k plays clip k mod 14 at its own phase and speed; "
           "skeleton sampled and palettes written by glsl/crowd_anim.comp; every instance's weights set by the host "
           f"every frame; median of {rows[0]['frames']} frames; CPU = thread CPU time, wall in brackets):", "",
           "| instances | CPU changing ms: weights + palettes pass + morph record + skinning record = total | "
           "unchanged frame CPU ms | "
           "GPU anim ms | GPU morph ms | compute skinning: record CPU ms, GPU ms | clip weight channels CPU ms | "
           "build ms wall (x one instance) | GPU KiB / instance (morph + anim) | CPU KiB / instance |",
           "|---|---|---|---|---|---|---|---|---|---|"]
    for c in rows:
        total, wall = _frame_cpu(c, "changed"), _frame_cpu(c, "changed", "wall")
        idle, idle_w = _frame_cpu(c, "unchanged"), _frame_cpu(c, "unchanged", "wall")
        out.append(f"| {c['instances']:,} | {c['changed_anim_cpu']:.2f} + {c['changed_palette_cpu']:.2f} + "
                   f"{c['changed_record_cpu']:.2f} + {c['changed_skin_cpu']:.2f} = **{total:.2f}** ({wall:.2f}) | "
                   f"{idle:.3f} ({idle_w:.3f}) | "
                   f"{c['changed_anim_gpu']:.3f} | {c['changed_gpu']:.3f} | "
                   + (f"{c['changed_skin_cpu']:.2f}, {c['changed_skin_gpu']:.3f}" if c.get("skinning") else
                      "skipped: bindings over maxStorageBufferRange")
                   + f" | {c['clip_weights_cpu']:.2f} | {c['build_wall_ms']:.0f} "
                   f"(x{c['build_wall_ms'] / base:.1f}) | {c['morph_bytes_per_instance'] / 1024:.1f} + "
                   f"{c['anim_bytes_per_instance'] / 1024:.1f} | {c['cpu_state_bytes_per_instance'] / 1024:.1f} |")
    return out


def gpu_anim_scaling(ctx, timer, N: int = 10000, ks=(0, 1, 100, 1000, 10000), frames: int = 4) -> list[dict]:
    """GPU animation, every instance playing (the clock moves every frame), k of N instances' weights set by
    the host per frame: CPU of the setter + palettes pass + morph record (thread time), GPU ms of both passes;
    the CPU should follow k, the palettes pass stay flat in N."""
    from .. import load_scene
    from ..render.crowd_anim import CrowdAnimation
    from ..render.morph_pass import MorphRuntime
    from .bench_data import find_model

    path = find_model(MODEL)
    if path is None:
        return []
    scene = load_scene(str(path))
    rt = MorphRuntime(ctx, scene, instances=N)
    anim, out = None, []
    try:
        anim = CrowdAnimation(rt)
        rng = np.random.default_rng(1)
        _play_clips(anim, N, rng)
        clock = [0.0]

        def frame(k: int, rows: np.ndarray) -> tuple:
            clock[0] += 1 / 30.0
            rec = {}
            c0 = time.thread_time()
            if k:
                rt.crowd.set_all_weights(rng.random((k, rt.crowd.weights.shape[1])) * rt.pose.weight_range[1],
                                         rows=rows)

            def seg_morph(cb):
                rec["c"] = rt.record(cb, consumer="compute")

            def seg_anim(cb):
                anim.record(cb, time=clock[0])
                rec["cpu"] = time.thread_time()
            morph_ms, anim_ms = timer.run([seg_morph, seg_anim], 1)
            c = rec["c"]
            return 1e3 * (rec["cpu"] - c0), morph_ms, anim_ms, c.instances_dispatched, c.dispatch_calls, \
                c.update_calls, c.dispatch_ranges

        frame(0, np.zeros(0, np.int64))
        for k in ks:
            rows = np.linspace(0, N - 1, k).astype(np.int64) if k else np.zeros(0, np.int64)
            res = [frame(k, rows) for _ in range(frames + 1)][1:]
            out.append({"instances": N, "changed": k, "cpu_ms": float(np.median([r[0] for r in res])),
                        "morph_gpu_ms": float(np.median([r[1] for r in res])),
                        "anim_gpu_ms": float(np.median([r[2] for r in res])),
                        "instances_dispatched": int(np.median([r[3] for r in res])),
                        "dispatch_calls": int(np.median([r[4] for r in res])),
                        "update_calls": int(np.median([r[5] for r in res])),
                        "runs": int(np.median([r[6] for r in res]))})
    finally:
        if anim is not None:
            anim.destroy()
        rt.destroy()
        ctx.wait_idle()
    return out


def gpu_scaling_markdown(rows: list[dict]) -> list[str]:
    if not rows:
        return []
    out = ["", f"GPU animation, all {rows[0]['instances']:,} instances playing (the clock moves every frame), k of "
           "them with weights set by the host per frame (CPU: setter + morph record + palettes pass, thread time):", "",
           "| weights changed | CPU ms | GPU morph ms | GPU anim ms | instances morphed | runs | dispatches | "
           "vkCmdUpdateBuffer |", "|---|---|---|---|---|---|---|---|"]
    out += [f"| {d['changed']:,} | {d['cpu_ms']:.2f} | {d['morph_gpu_ms']:.3f} | {d['anim_gpu_ms']:.3f} | "
            f"{d['instances_dispatched']:,} | {d.get('runs', '')} | {d.get('dispatch_calls', '')} | "
            f"{d.get('update_calls', '')} |" for d in rows]
    return out


HEAD_COUNTS, HEAD_COUNTS_QUICK = (1, 4, 16, 64), (1, 4)


def _gpu_bytes_used(ctx) -> int:
    from ..gpu.memory import Allocator

    return int(sum(n for b in Allocator.of(ctx).blocks for _, n in b._spans.values()))   # bytes incl. padding


def crowd_heads(ctx, timer, counts=HEAD_COUNTS, fmt: str = "full", frames: int = 3) -> list[dict]:
    """Dawn-like heads as a crowd: ``MorphRuntime(instances=N)`` of ONE head (14k vertices, 50 targets, 10 %
    clustered coverage, 5 active), so deltas, tables and base vertices exist once and each head adds its output
    and weight slots. Per N the GPU ms of a frame in which every head's weights change (measured at that N,
    not extrapolated from another) and the GPU bytes the runtime holds (allocator bytes in use), from which
    bytes per extra head = (bytes(N) - bytes(1)) / (N - 1). ``heads_per_16_6_ms`` in ``crowd_heads_summary``
    is the largest N measured whose frame took <= 16.6 ms."""
    from ..render.morph_pass import MorphRuntime
    from .bench_data import synthetic_primitive, synthetic_scene
    from .bench_timing import FRAME_MS

    head = synthetic_primitive(14_000, 50, 0.1, "clustered", seed=3)
    scene = synthetic_scene([head])
    out, base_bytes = [], None
    for N in counts:
        before = _gpu_bytes_used(ctx)
        rt, _, build_wall = _timed(lambda N=N: MorphRuntime(ctx, scene, instances=N, delta_format=fmt))
        try:
            held = _gpu_bytes_used(ctx) - before
            base_bytes = held if base_bytes is None and N == 1 else base_bytes
            W = np.zeros(rt.crowd.weights.shape, np.float32)
            sl = rt.pose.slice_of(0)
            W[:, sl.start:sl.start + 5] = 0.5
            flip = [0]

            def rec(cb, W=W, rt=rt, flip=flip):
                flip[0] ^= 1
                rt.crowd.set_all_weights(W * (0.9 if flip[0] else 1.0))
                rt.record(cb)
            ms = min(timer.run([rec], frames)[0] for _ in range(2))
            out.append({"heads": N, "format": fmt, "gpu_ms": ms, "gpu_us_per_head": 1e3 * ms / N,
                        "fits_16_6_ms": bool(ms <= FRAME_MS), "gpu_bytes": held, "build_wall_ms": build_wall,
                        "kernel": rt.batch.kernel_family,
                        "bytes_per_extra_head": (held - base_bytes) / (N - 1) if base_bytes is not None and N > 1
                        else None})
        finally:
            rt.destroy()
            ctx.wait_idle()
    return out


def heads_markdown(rows: list[dict]) -> list[str]:
    if not rows:
        return []
    fit = [r["heads"] for r in rows if r["fits_16_6_ms"]]
    out = ["", f"Dawn-like heads as one crowd (instances of one head asset: deltas shared; {rows[0]['format']} "
           f"deltas, {rows[0]['kernel']}; every head's 5 weights change every frame; GPU ms measured at each N). "
           f"Largest N measured within 16.6 ms: {max(fit) if fit else 'none'}:", "",
           "| heads | GPU ms per frame | GPU us per head | within 16.6 ms | GPU MiB held | bytes per extra head | "
           "build ms wall |", "|---|---|---|---|---|---|---|"]
    for r in rows:
        per = "" if r["bytes_per_extra_head"] is None else f"{r['bytes_per_extra_head'] / 1024:.1f} KiB"
        out.append(f"| {r['heads']:,} | {r['gpu_ms']:.3f} | {r['gpu_us_per_head']:.2f} | "
                   f"{'yes' if r['fits_16_6_ms'] else 'no'} | {r['gpu_bytes'] / 2**20:.1f} | {per} | "
                   f"{r['build_wall_ms']:.0f} |")
    return out


def crowd_line(c: dict) -> str:
    return (f"crowd {c['instances']:>6,}: changing {c['changed_anim_cpu']:.2f} + {c['changed_palette_cpu']:.2f} + "
            f"{c['changed_record_cpu']:.2f} ms CPU (anim + palettes + record; wall {c['changed_anim_wall']:.2f} + "
            f"{c['changed_palette_wall']:.2f} + {c['changed_record_wall']:.2f}), GPU morph {c['changed_gpu']:.3f} ms, "
            f"compute skinning {c.get('changed_skin_gpu', 0.0):.3f} ms GPU "
            f"({c.get('changed_skin_cpu', 0.0):.2f} ms CPU); "
            f"unchanged {c['unchanged_anim_cpu'] + c['unchanged_palette_cpu'] + c['unchanged_record_cpu']:.3f} ms "
            f"CPU; build {c['build_wall_ms']:.0f} ms wall ({c['build_cpu_ms']:.0f} CPU); per instance "
            f"{c['gpu_bytes_per_instance'] / 1024:.1f} KiB GPU + {c['palette_bytes_per_instance'] / 1024:.1f} KiB "
            f"palette")


def crowd_markdown(rows: list[dict]) -> list[str]:
    if not rows:
        return []
    out = [f"Crowds ({MODEL} x N in one runtime, every instance changing weights and pose every frame; median of "
           f"{rows[0]['frames']} frames; CPU = thread CPU time, wall in brackets):", "",
           "| instances | anim ms | palettes ms | record ms | GPU morph ms | skinning: record ms CPU, GPU ms | "
           "unchanged frame ms (CPU) | instances dispatched | build ms wall (CPU) | GPU KiB / instance | "
           "palette KiB / instance |",
           "|---|---|---|---|---|---|---|---|---|---|---|"]
    for c in rows:
        unchanged = (c["unchanged_anim_cpu"] + c["unchanged_palette_cpu"] + c["unchanged_record_cpu"]
                     + c.get("unchanged_skin_cpu", 0.0))
        out.append(f"| {c['instances']:,} | {c['changed_anim_cpu']:.2f} ({c['changed_anim_wall']:.2f}) | "
                   f"{c['changed_palette_cpu']:.2f} ({c['changed_palette_wall']:.2f}) | "
                   f"{c['changed_record_cpu']:.3f} ({c['changed_record_wall']:.3f}) | {c['changed_gpu']:.3f} | "
                   + ("skipped: bindings over maxStorageBufferRange" if "skinning_skipped" in c else
                      f"{c.get('changed_skin_cpu', 0.0):.2f}, {c.get('changed_skin_gpu', 0.0):.3f}")
                   + f" | {unchanged:.3f} | "
                   f"{c['changed_instances_dispatched']:.0f} / "
                   f"{c['unchanged_instances_dispatched']:.0f} | {c['build_wall_ms']:.0f} ({c['build_cpu_ms']:.0f}) | "
                   f"{c['gpu_bytes_per_instance'] / 1024:.1f} | {c['palette_bytes_per_instance'] / 1024:.1f} |")
    return out


def changed_markdown(rows: list[dict]) -> list[str]:
    if not rows:
        return []
    out = ["", f"k of {rows[0]['instances']:,} instances changing weights and pose per frame (CPU: setters + "
           "palettes + record, thread time):", "", "| changed | CPU ms | GPU morph ms | instances dispatched |",
           "|---|---|---|---|"]
    out += [f"| {d['changed']:,} | {d['cpu_ms']:.2f} | {d['gpu_ms']:.3f} | {d['instances_dispatched']:,} |"
            for d in rows]
    return out


# ---------------------------------------------------------------------------------------------- per-pass GPU ms
PASS_COUNTS, PASS_COUNTS_QUICK = (1, 100, 1000, 10000), (1, 100)
PASS_SIZE = (320, 240)      # small: lavapipe shades every pixel on the CPU; the passes' vertex work is the point


def lod_option(text: str):
    """``--lod`` value: "off", "on" or a forced level (int) -> ``SceneRenderer(lod=)``."""
    t = str(text).strip()
    if t in ("off", "on"):
        return t
    try:
        return int(t)
    except ValueError:
        raise UsageError(f"--lod: 'off', 'on' or a level number, got {text!r}") from None


def _play_clips(anim, N: int, rng) -> None:
    """Instance i plays clip i mod (clips) at its own phase (0-3 s) and speed (0.8-1.2): one vectorized play a clip."""
    nclips = len(anim.clips)
    for ci in range(nclips):
        rows = np.arange(ci, N, nclips)
        anim.play(ci, phase=rng.random(len(rows)) * 3.0, speed=0.8 + 0.4 * rng.random(len(rows)), rows=rows)


def _lay_out_grid(crowd, renderers, N: int, spacing: float = 1.0) -> None:
    """The N instances (every one at the origin until now) on crowd_driver's grid, its pitch ``spacing`` times the
    model's footprint, and each renderer's camera framing them."""
    from .crowd_driver import grid_transforms

    lo, hi = renderers[0].scene_bounds()
    crowd.set_transforms(grid_transforms(N, spacing * float(max(hi[0] - lo[0], hi[2] - lo[2]))))
    for r in renderers:
        r.frame_camera()


def pass_rows(ctx, counts=PASS_COUNTS, frames: int = 3, lod="off", *, size: tuple[int, int] = PASS_SIZE,
              spacing: float = 1.0, again: int = 1) -> list[dict]:
    """Both skinning paths side by side: per N, one crowd runtime drawn by two SceneRenderers (compute skinning
    once per frame then plain draws; vertex-shader skinning in each pass), frames interleaved A, B, A, B in one
    window, every instance changing weights and pose every frame, culling off (every instance drawn). GPU ms per
    pass from the renderer's timestamps (``pass_timing``); the morph pass runs in A's frame (B's finds it done:
    both draw the same morph output), so B's morph column is A's. A crowd whose compute-skinning bindings exceed
    maxStorageBufferRange gets the vertex path only (the row says so). ``lod``: ``SceneRenderer(lod=)`` ("off",
    "on", a forced level); each row reports the triangles each pass drew and the LOD histogram per pass.
    ``size``: the target's pixels; ``spacing``: the grid's pitch as a multiple of crowd_driver's (the camera frames
    the grid either way): both change how many pixels each instance covers, not the vertex work. ``again``: how
    often each measured frame's passes are resubmitted at once (nothing changed); the "back to back" times are
    the median of the last half of those (after a long CPU update an idle GPU lowers its clocks; many
    resubmissions bring them back up, as an application that draws every frame keeps them)."""
    from .. import load_scene
    from .bench_data import find_model

    path = find_model(MODEL)
    if path is None:
        return []
    scene = load_scene(str(path))
    clip = max(scene.animations, key=lambda c: len(c.node_channels)) if scene.animations else None
    out = []
    for N in counts:
        try:
            out.append(_pass_row(ctx, scene, clip, N, frames, lod, size=size, spacing=spacing, again=again))
        except UsageError as exc:   # too large for this device in one runtime
            out.append({"instances": N, "lod": str(lod), "skipped": str(exc)})
    return out


def _pass_row(ctx, scene, clip, N: int, frames: int, lod="off", *, size=PASS_SIZE, spacing: float = 1.0,
              again: int = 1) -> dict:
    from ..render.crowd_render import RENDER_PASSES
    from ..render.morph_pass import MorphRuntime
    from ..render.offscreen import OffscreenRenderer
    from ..render.skin_cost import choose_path, skinning_cost

    w, h = size
    rt = MorphRuntime(ctx, scene, instances=N)
    offs: dict[str, OffscreenRenderer] = {}
    row: dict = {"instances": N, "frames": frames, "lod": str(lod), "size": [w, h], "spacing": spacing,
                 "again": again}
    try:
        for p in ("compute", "vertex"):
            try:
                offs[p] = OffscreenRenderer(ctx, scene, w, h, samples=1, shadow_size=512, runtime=rt, skinning=p,
                                            cull=False, pass_timing=True, ground=False, lod=lod)
            except UsageError as exc:
                row[f"{p}_skipped"] = str(exc)
        crowd = rt.crowd
        _lay_out_grid(crowd, [o.renderer for o in offs.values()], N, spacing)
        rng = np.random.default_rng(N)
        duration = clip.duration if clip else 1.0
        phase, base_w = rng.random(N) * duration, rng.random(crowd.weights.shape)
        lo, hi = rt.pose.weight_range
        samples: dict[str, list[float]] = {}
        for f in range(frames + 1):        # the first frame (build-time uploads, first use) is dropped
            crowd.play(clip, (phase + f / 30.0) % duration)
            crowd.set_all_weights(lo + (hi - lo) * base_w * (0.5 + 0.5 * np.sin(0.3 * f + 6.0 * base_w)))
            for p, o in offs.items():
                c0, w0 = time.thread_time(), time.perf_counter()
                o.renderer.update(0, w / h, w, h)   # no readback; a 10,000 frame outlasts render()'s 60 s wait
                ctx.submit_and_wait(lambda cb, o=o: o.renderer.record(cb, 0, o.targets.framebuffers[0], w, h),
                                    timeout_s=1800.0)
                cpu, wall = 1e3 * (time.thread_time() - c0), 1e3 * (time.perf_counter() - w0)
                ms = o.renderer.pass_ms(0)
                if f:
                    for k, v in ms.items():
                        samples.setdefault(f"{p}_{k}_ms", []).append(v)
                    samples.setdefault(f"{p}_frame_cpu_ms", []).append(cpu)
                    samples.setdefault(f"{p}_frame_wall_ms", []).append(wall)
                    cf = o.renderer.crowd_frame
                    row[f"{p}_draw_calls"] = cf.draw_calls   # crowd draws of the frame
                    for which in ("shadow", "forward"):
                        row[f"{p}_{which}_draws"] = cf.pass_draws[which]
                        row[f"{p}_{which}_triangles"] = cf.pass_triangles[which]
                        row[f"{p}_{which}_lod"] = cf.level_counts(which)
                    row["drawn_skinned_vertices"] = sum(v[0] for v in cf.pass_vertices.values())
                    row["drawn_other_vertices"] = sum(v[1] for v in cf.pass_vertices.values())
                    # The same frame again at once, nothing changed (no morph, no skinning dispatch): the passes
                    # with the GPU still busy from the frame before. After a long CPU update (Python animation at
                    # large N) an idle GPU may have lowered its clocks, so the first frame's passes can read slow.
                    # ``again`` resubmissions: the last ones are the passes on a GPU kept busy (its clocks up),
                    # as in an application drawing every frame; the median of the last half is the steady time.
                    runs = []
                    for _ in range(again):
                        o.renderer.update(0, w / h, w, h)
                        ctx.submit_and_wait(lambda cb, o=o: o.renderer.record(cb, 0, o.targets.framebuffers[0], w,
                                                                              h), timeout_s=1800.0)
                        runs.append(o.renderer.pass_ms(0))
                    for k in ("shadow", "forward"):
                        tail = [r.get(k, 0.0) for r in runs[len(runs) // 2:]]
                        samples.setdefault(f"{p}_{k}_steady_ms", []).append(float(np.median(tail)))
        for k, v in samples.items():
            row[k] = float(np.median(v))
        if "compute_morph_ms" in row and "vertex_morph_ms" in row:
            row["vertex_morph_ms"] = row["compute_morph_ms"]    # the same morph output for both (docstring)
        skinned = [i for i in rt.instances if i.prim.is_skinned]
        stride = skinned[0].prim.vertices.dtype.itemsize if skinned else 0
        row["model_choice"] = choose_path(stride, RENDER_PASSES) if skinned else None
        row["model_bytes"] = skinning_cost(stride, RENDER_PASSES) if skinned else None
        for p in offs:
            row[f"{p}_deform_draw_ms"] = sum(row.get(f"{p}_{k}_ms", 0.0) for k in ("skin", "shadow", "forward"))
        if "compute_deform_draw_ms" in row and "vertex_deform_draw_ms" in row and row["compute_deform_draw_ms"]:
            row["vertex_over_compute"] = row["vertex_deform_draw_ms"] / row["compute_deform_draw_ms"]
            _time_model(row, N, skinned, stride)
        return row
    finally:
        ctx.wait_idle()          # nothing is destroyed while a frame may still run (an exception above)
        for o in offs.values():
            o.destroy()
        rt.destroy()
        ctx.wait_idle()


def sustained_rows(ctx, counts=(10000,), frames: int = 60, lod="on", paths=("compute", "vertex"),
                   size: tuple[int, int] = PASS_SIZE, in_flight: int = 1) -> list[dict]:
    """The crowd as an application runs it: frames back to back, each posing every instance on the GPU
    (``animation="gpu"``, its own clip phase and speed), setting every instance's weights on the host, updating,
    recording and drawing the shadow and forward passes. ``in_flight`` 1: each frame is waited for before the next
    (no CPU/GPU overlap, so the wall time per frame is an upper bound); 2: two frame slots (the renderer's
    ``frames_in_flight``, a fence and command buffer each), the host preparing frame f+1 while the GPU draws
    frame f. Per path: frames per second from the loop's wall time over the measured frames, the host's part of
    a frame (setters, update, record, submit; with one in flight the wait too) as wall and thread CPU time
    (medians), GPU ms per pass (timestamps, median; the "morph" mark includes the GPU animation pass, which
    CrowdFrame.record_deform records right after the morph pass, before the mark); the first ``frames // 4``
    frames are dropped (build-time uploads, the GPU's clocks coming up from idle). The grid and camera as
    ``pass_rows``."""
    from .. import load_scene
    from ..gpu.vk import call, vk
    from ..render.offscreen import OffscreenRenderer
    from .bench_data import find_model

    path = find_model(MODEL)
    if path is None:
        return []
    scene = load_scene(str(path))
    w, h = size
    out = []
    for N in counts:
        for p in paths:
            row: dict = {"instances": N, "lod": str(lod), "path": p, "frames": frames, "size": [w, h],
                         "in_flight": in_flight}
            try:
                o = OffscreenRenderer(ctx, scene, w, h, samples=1, shadow_size=512, instances=N, skinning=p,
                                      cull=False, pass_timing=True, ground=False, lod=lod, animation="gpu",
                                      frames_in_flight=in_flight)
            except UsageError as exc:
                out.append({**row, "skipped": str(exc)})
                continue
            fences, cbs = [], [None] * in_flight
            try:
                r = o.renderer
                rt, anim = r.runtime, r.animation
                _lay_out_grid(rt.crowd, [r], N)
                rng = np.random.default_rng(N)
                _play_clips(anim, N, rng)
                base_w = rng.random(rt.crowd.weights.shape)
                wlo, whi = rt.pose.weight_range
                fences = [call("vkCreateFence", ctx.device, vk.VkFenceCreateInfo(), None) for _ in range(in_flight)]
                fb = o.targets.framebuffers[0]     # one target: the forward pass orders the frames' writes to it
                samples: dict[str, list[float]] = {}
                first = frames // 4
                t_first = c_first = 0.0
                # frame f - in_flight is waited for at f, so the last one (frames - 1) at frames - 1 + in_flight
                for f in range(frames + in_flight):
                    slot = f % in_flight
                    if cbs[slot] is not None:      # the frame that last used this slot
                        ctx.wait_fence(fences[slot])
                        ctx.free_command_buffer(cbs[slot])
                        cbs[slot] = None
                        if f - in_flight >= first:
                            for k, v in r.pass_ms(slot).items():
                                samples.setdefault(f"{k}_ms", []).append(v)
                    if f == first:
                        t_first, c_first = time.perf_counter(), time.thread_time()
                    if f >= frames:
                        continue                   # only the last frames' waits
                    c0, w0 = time.thread_time(), time.perf_counter()
                    clock = f / 30.0
                    r.animation_time = clock
                    rt.crowd.set_all_weights(wlo + (whi - wlo) * base_w * (0.5 + 0.5 * np.sin(9.0 * clock
                                                                                          + 6.0 * base_w)))
                    r.update(slot, w / h, w, h)
                    cb = cbs[slot] = ctx.allocate_command_buffer()
                    ctx.begin(cb)
                    r.record(cb, slot, fb, w, h)
                    ctx.end(cb)
                    ctx.submit([cb], fence=fences[slot])
                    if in_flight == 1:             # waited for at once: this frame's own wall time
                        ctx.wait_fence(fences[slot])
                        ctx.free_command_buffer(cb)
                        cbs[slot] = None
                        if f >= first:
                            for k, v in r.pass_ms(slot).items():
                                samples.setdefault(f"{k}_ms", []).append(v)
                    if f >= first:
                        samples.setdefault("frame_cpu_ms", []).append(1e3 * (time.thread_time() - c0))
                        samples.setdefault("frame_wall_ms", []).append(1e3 * (time.perf_counter() - w0))
                measured = frames - first
                row["loop_wall_ms"] = 1e3 * (time.perf_counter() - t_first) / measured
                row["loop_cpu_ms"] = 1e3 * (time.thread_time() - c_first) / measured
                for k, v in samples.items():
                    row[k] = float(np.median(v))
                    row[k + "_max"] = float(np.max(v))
                row["fps"] = 1e3 / row["loop_wall_ms"]
                row["gpu_ms"] = sum(row.get(f"{k}_ms", 0.0) for k in ("morph", "skin", "shadow", "forward"))
                cf = r.crowd_frame
                row["triangles"] = {k: cf.pass_triangles[k] for k in ("shadow", "forward")}
                row["lod_levels"] = {k: cf.level_counts(k) for k in ("shadow", "forward")}
                out.append(row)
            finally:
                ctx.wait_idle()
                for cb in cbs:
                    if cb is not None:
                        ctx.free_command_buffer(cb)
                for fnc in fences:
                    vk.vkDestroyFence(ctx.device, fnc, None)
                o.destroy()
                ctx.wait_idle()
    return out


def sustained_line(r: dict) -> str:
    head = f"sustained {r['instances']:>6,} lod {r['lod']} {r['path']:>7} ({r.get('in_flight', 1)} in flight)"
    if "skipped" in r:
        return f"{head}: skipped ({r['skipped']})"
    names = {"morph": "morph+anim"}    # record_deform records the GPU animation pass before the "morph" mark
    passes = ", ".join(f"{names.get(k, k)} {r[k + '_ms']:.2f}" for k in ("morph", "skin", "shadow", "forward")
                       if k + "_ms" in r)
    return (f"{head}: {r['fps']:.1f} fps ({r['loop_wall_ms']:.1f} ms a frame over the loop; host's part "
            f"{r['frame_wall_ms']:.1f} ms wall, max {r['frame_wall_ms_max']:.1f}, {r['frame_cpu_ms']:.1f} ms CPU), "
            f"GPU {r['gpu_ms']:.2f} ms ({passes}), "
            f"triangles shadow {r['triangles']['shadow']:,} forward {r['triangles']['forward']:,}")


def sustained_markdown(rows: list[dict]) -> list[str]:
    if not rows:
        return []
    r0 = rows[0]
    out = ["", f"Sustained frames ({MODEL} x N as an application runs it: frames back to back, every instance "
           f"posed on the GPU and its weights set every frame, {'x'.join(map(str, r0.get('size', PASS_SIZE)))}, "
           f"shadow map 512, culling off; the first {r0['frames'] // 4} of {r0['frames']} frames dropped; fps "
           "from the loop's wall time; host = setters + update + record + submit (+ the wait with one in flight), "
           "thread CPU; GPU ms are medians of the per-pass timestamps, the first mark covering the morph and the "
           "GPU animation passes):", "",
           "| instances | LOD | path | in flight | fps | ms a frame | host CPU ms | GPU ms | morph+anim | skin | "
           "shadow | forward | triangles per pass |",
           "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        if "skipped" in r:
            out.append(f"| {r['instances']:,} | {r['lod']} | {r['path']} | {r.get('in_flight', 1)} | skipped: "
                       f"{r['skipped']} | | | | | | | | |")
            continue
        out.append(f"| {r['instances']:,} | {r['lod']} | {r['path']} | {r.get('in_flight', 1)} | {r['fps']:.1f} | "
                   f"{r['loop_wall_ms']:.1f} | {r['frame_cpu_ms']:.1f} | {r['gpu_ms']:.2f} | "
                   + " | ".join(f"{r.get(k + '_ms', 0.0):.2f}" for k in ("morph", "skin", "shadow", "forward"))
                   + f" | {r['triangles']['forward']:,} |")
    return out


def _time_model(row: dict, N: int, skinned, stride: int) -> None:
    """render/skin_cost.pass_model calibrated on this row's compute path (its skinning dispatch and raster
    passes), then its prediction of the vertex path against the measured one."""
    from ..render.skin_cost import calibrate, pass_model

    if not skinned or row.get("compute_skin_ms", 0) <= 0:
        return
    counts = {"passes": 1, "stride": stride, "skinned_vertices": N * sum(i.prim.vertex_count for i in skinned),
              "skinned_drawn": row["drawn_skinned_vertices"], "other_drawn": row["drawn_other_vertices"]}
    try:
        cal = calibrate(**counts, skin_ms=row["compute_skin_ms"],
                        raster_ms=row["compute_shadow_ms"] + row["compute_forward_ms"])
    except UsageError:
        return
    m = pass_model(**counts, **cal)
    row["time_model"] = {**cal, "vertex_ms": m["vertex"], "compute_ms": m["compute"],
                         "vertex_over_compute": m["vertex"] / m["compute"],
                         "choice": "compute" if m["compute"] < m["vertex"] else "vertex"}


def pass_line(r: dict) -> str:
    if "skipped" in r:
        return f"crowd passes {r['instances']:>6,} lod {r.get('lod', 'off')}: skipped ({r['skipped']})"
    parts = []
    for p in ("compute", "vertex"):
        if f"{p}_forward_ms" in r:
            parts.append(f"{p}: morph {r[f'{p}_morph_ms']:.2f} skin {r[f'{p}_skin_ms']:.2f} shadow "
                         f"{r[f'{p}_shadow_ms']:.2f} forward {r[f'{p}_forward_ms']:.2f} ms GPU "
                         f"(frame {r[f'{p}_frame_cpu_ms']:.1f} ms CPU, {r[f'{p}_frame_wall_ms']:.1f} wall"
                         + (f", {r[f'{p}_draw_calls']} crowd draws" if f"{p}_draw_calls" in r else "") + ")"
                         + (f"; back to back: shadow {r[f'{p}_shadow_steady_ms']:.2f} forward "
                            f"{r[f'{p}_forward_steady_ms']:.2f} ms" if f"{p}_shadow_steady_ms" in r else "")
                         + _tri_text(r, p))
        else:
            parts.append(f"{p}: skipped ({r.get(f'{p}_skipped', '')})")
    ratio = f"; vertex / compute (skin + shadow + forward) {r['vertex_over_compute']:.2f}" \
        if "vertex_over_compute" in r else ""
    tm = r.get("time_model")
    if tm:
        ratio += (f" (time model on the compute path's {tm['bandwidth_gbs']:.1f} GB/s, {tm['raster_ns']:.3f} ns per "
                  f"drawn vertex and pass: predicts {tm['vertex_over_compute']:.2f}, picks {tm['choice']})")
    return (f"crowd passes {r['instances']:>6,} lod {r.get('lod', 'off')}: " + "; ".join(parts) + ratio
            + f"; model picks {r['model_choice']}")


def _tri_text(r: dict, p: str) -> str:
    """Triangles and the LOD histogram (instances per level) of each pass, for a line."""
    if f"{p}_forward_triangles" not in r:
        return ""
    return " [" + ", ".join(f"{w} {r[f'{p}_{w}_triangles']:,} tris {r[f'{p}_{w}_draws']:,} draws "
                            f"lod {'/'.join(str(x) for x in r[f'{p}_{w}_lod'])}" for w in ("shadow", "forward")) + "]"


def pass_markdown(rows: list[dict]) -> list[str]:
    if not rows:
        return []
    out = ["", f"GPU ms per pass, both skinning paths in the same window ({MODEL} x N, one runtime drawn by two "
           f"renderers, frames interleaved, every instance changing every frame, culling off, "
           f"{'x'.join(map(str, rows[0].get('size', PASS_SIZE)))} no MSAA, "
           f"grid pitch x{rows[0].get('spacing', 1.0):g}, "
           f"shadow map 512; median of {rows[0].get('frames', 0)} frames; "
           "the morph pass is the same for both; frame CPU = thread time of update + record + submit + wait, "
           "wall beside it; draws: the frame's crowd vkCmdDraw* calls, CrowdFrame.draw_calls; "
           "lod: SceneRenderer(lod=); "
           "triangles and LOD histogram (instances at level 0/1/2/3) per pass: CrowdFrame.pass_triangles, "
           "level_counts; time model: render/skin_cost.pass_model calibrated on the row's compute path (skinning "
           "dispatch -> bandwidth, shadow + forward -> ns per drawn vertex and pass), its vertex / compute in "
           "brackets; back to back: the shadow and forward passes of the same frame submitted again at once, "
           f"nothing changed, {rows[0].get('again', 1)} times, the median of the last half: the GPU kept busy):",
           "",
           "| instances | lod | path | morph ms | skinning ms | shadow ms | forward ms | skin+shadow+forward ms | "
           "frame CPU ms (wall) | vertex / compute measured (time model predicts) | "
           "model picks (bytes per vertex: compute, vertex; time model) | "
           "shadow triangles (LOD histogram) | forward triangles (LOD histogram) | "
           "back to back: shadow, forward ms |",
           "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lod = r.get("lod", "off")
        if "skipped" in r:
            out.append(f"| {r['instances']:,} | {lod} | skipped: {r['skipped']} | | | | | | | | | | | |")
            continue
        for p in ("compute", "vertex"):
            if f"{p}_forward_ms" not in r:
                out.append(f"| {r['instances']:,} | {lod} | {p}: skipped ({r.get(f'{p}_skipped', '')}) "
                           "| | | | | | | | | | | |")
                continue
            tris = [f"{r[f'{p}_{w}_triangles']:,} ({'/'.join(str(x) for x in r[f'{p}_{w}_lod'])})"
                    if f"{p}_{w}_triangles" in r else "" for w in ("shadow", "forward")]
            ratio = f"{r['vertex_over_compute']:.2f}" if p == "vertex" and "vertex_over_compute" in r else ""
            tm = r.get("time_model")
            if ratio and tm:
                ratio += f" ({tm['vertex_over_compute']:.2f})"
            mb = r.get("model_bytes") or {}
            pick = (f"{r['model_choice']} ({mb.get('compute')}, {mb.get('vertex')}"
                    + (f"; time model {tm['choice']}" if tm else "") + ")") if p == "compute" else ""
            draws = f" ({r[f'{p}_draw_calls']:,} draws)" if f"{p}_draw_calls" in r else ""
            out.append(f"| {r['instances']:,} | {lod} | {p}{draws} | {r[f'{p}_morph_ms']:.2f} | "
                       f"{r[f'{p}_skin_ms']:.2f} | {r[f'{p}_shadow_ms']:.2f} | {r[f'{p}_forward_ms']:.2f} | "
                       f"{r[f'{p}_deform_draw_ms']:.2f} | "
                       f"{r[f'{p}_frame_cpu_ms']:.1f} ({r[f'{p}_frame_wall_ms']:.1f}) | "
                       f"{ratio} | {pick} | {tris[0]} | {tris[1]} | "
                       + (f"{r[f'{p}_shadow_steady_ms']:.2f}, {r[f'{p}_forward_steady_ms']:.2f} |"
                          if f"{p}_shadow_steady_ms" in r else " |"))
    return out


def main(argv=None) -> int:
    from ..gpu.context import Context
    from .bench_timing import WindowTimer, driver_string

    ap = argparse.ArgumentParser(prog="python -m vkmorph.app.crowd_bench")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--json")
    ap.add_argument("--markdown")
    ap.add_argument("--only-changed", action="store_true", help="only the k-of-N changed rows")
    ap.add_argument("--only-gpu-anim", action="store_true", help="only the GPU-animation rows")
    ap.add_argument("--heads", type=int, nargs="*", help="only Dawn-like heads as a crowd, at these counts")
    ap.add_argument("--gpu-scaling", type=int, nargs="*",
                    help="only the GPU-animation k-of-N rows: N then the k values (default 10000 0 1 100 1000 10000)")
    ap.add_argument("--passes", action="store_true",
                    help="only GPU ms per pass of both skinning paths side by side (pass_rows)")
    ap.add_argument("--counts", help="with --passes: instance counts, comma-separated (default 1,100,1000,10000)")
    ap.add_argument("--lod", default="off",
                    help="with --passes: levels of detail, comma-separated, each 'off', 'on' or a forced level; "
                         "every count is measured at each (e.g. off,on)")
    ap.add_argument("--size", default=f"{PASS_SIZE[0]}x{PASS_SIZE[1]}",
                    help="with --passes: the target, WxH (default 320x240)")
    ap.add_argument("--spacing", type=float, default=1.0,
                    help="with --passes: the grid's pitch as a multiple of the default (the camera frames it)")
    ap.add_argument("--sustained", type=int, metavar="FRAMES",
                    help="only frames back to back with GPU animation (sustained_rows), this many per path and "
                         "count; --counts, --lod (one), --size apply")
    ap.add_argument("--in-flight", type=int, default=1, choices=(1, 2),
                    help="with --sustained: frames in flight (1: each frame waited for; 2: host and GPU overlap)")
    ap.add_argument("--again", type=int, default=1,
                    help="with --passes: resubmissions of each measured frame's passes; back to back = the median "
                         "of the last half (default 1)")
    ap.add_argument("--note", help="a line for the markdown (e.g. the host's load)")
    args = ap.parse_args(argv)
    size, counts, lods = _check_options(ap, args)     # one usage line, before the device is touched
    ctx = Context.create(echo_messages=True)
    try:
        timer = WindowTimer(ctx)
        report = {"device": ctx.info.name, "driver": driver_string(ctx), "date": time.strftime("%Y-%m-%d %H:%M"),
                  "crowd": []}
        if args.sustained is not None:
            report["sustained"] = []
            for N in counts or [10000]:
                for row in sustained_rows(ctx, (N,), args.sustained, lods[0], size=size,
                                          in_flight=args.in_flight):
                    report["sustained"].append(row)
                    print(sustained_line(row), flush=True)
                    _write(report, args)
            timer.destroy()
            return 0
        if args.passes:
            report["passes"] = []
            for N in counts or (PASS_COUNTS_QUICK if args.quick else PASS_COUNTS):
                for lod in lods:
                    report["passes"] += pass_rows(ctx, (N,), lod=lod, size=size, spacing=args.spacing,
                                                  again=args.again)
                    print(pass_line(report["passes"][-1]), flush=True)
                    _write(report, args)      # after every row: a later size that crashes the driver keeps these
        report["gpu_anim"] = []
        special = args.heads is not None or args.gpu_scaling is not None or args.passes  # only those rows
        if args.gpu_scaling is not None:
            n_k = args.gpu_scaling or [10000, 0, 1, 100, 1000, 10000]
            report["gpu_scaling"] = gpu_anim_scaling(ctx, timer, n_k[0], tuple(n_k[1:]))
            for d in report["gpu_scaling"]:
                print(f"GPU animation, {d['changed']:>6,} of {d['instances']:,} weights changing: {d['cpu_ms']:.2f} ms "
                      f"CPU, GPU morph {d['morph_gpu_ms']:.3f} ms, anim {d['anim_gpu_ms']:.3f} ms", flush=True)
        if args.heads is not None:    # only the heads
            report["heads"] = crowd_heads(ctx, timer, tuple(args.heads) or (HEAD_COUNTS_QUICK if args.quick
                                                                            else HEAD_COUNTS))
            for r in report["heads"]:
                print(f"{r['heads']:>7,} Dawn-like heads (one shared head): {r['gpu_ms']:.3f} ms GPU, "
                      f"{r['gpu_us_per_head']:.2f} us per head, {r['gpu_bytes'] / 2**20:.1f} MiB", flush=True)
        for N in ([] if special else COUNTS_QUICK if args.quick else COUNTS):
            rows = [] if args.only_changed else gpu_anim_costs(ctx, timer, (N,))
            report["gpu_anim"] += rows
            for c in rows:
                print(gpu_anim_line(c), flush=True)
        for N in ([] if args.only_gpu_anim or special else COUNTS_QUICK if args.quick else COUNTS):
            rows = [] if args.only_changed else crowd_costs(ctx, timer, (N,))
            report["crowd"] += rows
            for c in rows:
                print(crowd_line(c), flush=True)
        report["changed_scaling"] = [] if args.only_gpu_anim or special else changed_scaling(
            ctx, timer, 100 if args.quick else 1000, (1, 10, 100) if args.quick else (1, 10, 100, 1000))
        for d in report["changed_scaling"]:
            print(f"{d['changed']:>5} of {d['instances']} instances changing: {d['cpu_ms']:.2f} ms CPU (setters, "
                  f"palettes, record), GPU morph {d['gpu_ms']:.3f} ms, {d['instances_dispatched']} dispatched",
                  flush=True)
        timer.destroy()
    finally:
        ctx.destroy()
    _write(report, args)
    return 0


def _check_options(ap, args) -> tuple[tuple[int, int], list[int] | None, list]:
    """(size, counts or None, levels of detail) from the options, or one argparse error line (exit status 2)."""
    if args.sustained is not None and args.sustained < 1:
        ap.error(f"--sustained {args.sustained}: frames must be >= 1")
    if not (math.isfinite(args.spacing) and args.spacing > 0):
        ap.error(f"--spacing {args.spacing}: must be a finite number > 0")
    if args.again < 1:
        ap.error(f"--again {args.again}: must be >= 1")
    size = _size_option(ap, args.size)
    counts = None
    if args.counts:
        try:
            counts = [int(x) for x in args.counts.split(",")]
        except ValueError:
            counts = []
        if not counts or min(counts) < 1:
            ap.error(f"--counts {args.counts!r}: expected instance counts >= 1, comma-separated")
    try:
        lods = [lod_option(x) for x in args.lod.split(",")]
    except UsageError as exc:
        ap.error(str(exc))
    if args.sustained is not None and len(lods) != 1:
        ap.error(f"--lod {args.lod!r}: --sustained takes one level of detail setting")
    return size, counts, lods


def _size_option(ap, text: str) -> tuple[int, int]:
    try:
        size = tuple(int(v) for v in text.lower().split("x"))
        if len(size) == 2 and min(size) > 0:
            return size
    except ValueError:
        pass
    ap.error(f"--size {text!r}: expected WxH in pixels, e.g. 320x240")


def _write(report: dict, args) -> None:
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(report, fh, indent=2)
    if args.markdown:
        with open(args.markdown, "w") as fh:
            fh.write("\n".join([f"# vkmorph crowd bench, {report['date']}, {report['device']} "
                                f"(driver {report['driver']})", ""]
                               + ([args.note, ""] if getattr(args, "note", None) else [])
                               + crowd_markdown(report["crowd"])
                               + changed_markdown(report.get("changed_scaling", []))
                               + gpu_anim_markdown(report.get("gpu_anim", []))
                               + heads_markdown(report.get("heads", []))
                               + gpu_scaling_markdown(report.get("gpu_scaling", []))
                               + pass_markdown(report.get("passes", []))
                               + sustained_markdown(report.get("sustained", []))) + "\n")


if __name__ == "__main__":
    raise SystemExit(main())
