"""The benchmark's crowd section: N instances of RobotExpressive in one ``MorphRuntime(instances=N)``, every
instance changing its weights and its pose every frame (each at its own clip time and speed), against a frame
where nothing changed.

Per N: build time; per frame the CPU of animation (``CrowdState.play`` + ``set_all_weights``: vectorized
sampling over instances), palettes and model matrices (``crowd_draws().refresh()``) and ``record()``, each as
thread CPU time with wall time beside it (median of the frames); GPU ms of the morph pass (timestamps around
the recorded frame, one frame per submission); memory per instance (GPU: its morph outputs and weight slots;
CPU: its state). Only the morph pass exists for crowds so far: skinning, shadow and forward passes of crowds
are not measured here (the vertex-shader path draws them per instance; nothing records that yet).

``python -m vkmorph.app.crowd_bench [--quick] [--json OUT] [--markdown OUT]`` runs it alone;
``vkmorph bench --only crowd`` likewise.
"""

from __future__ import annotations

import argparse
import json
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
    from .bench import find_model

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
    from .bench import find_model

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


def pass_rows(ctx, counts=PASS_COUNTS, frames: int = 3) -> list[dict]:
    """Both skinning paths side by side: per N, one crowd runtime drawn by two SceneRenderers (compute skinning
    once per frame then plain draws; vertex-shader skinning in each pass), frames interleaved A, B, A, B in one
    window, every instance changing weights and pose every frame, culling off (every instance drawn). GPU ms per
    pass from the renderer's timestamps (``pass_timing``); the morph pass runs in A's frame (B's finds it done:
    both draw the same morph output), so B's morph column is A's. A crowd whose compute-skinning bindings exceed
    maxStorageBufferRange gets the vertex path only (the row says so)."""
    from .. import load_scene
    from .bench import find_model

    path = find_model(MODEL)
    if path is None:
        return []
    scene = load_scene(str(path))
    clip = max(scene.animations, key=lambda c: len(c.node_channels)) if scene.animations else None
    out = []
    for N in counts:
        try:
            out.append(_pass_row(ctx, scene, clip, N, frames))
        except UsageError as exc:   # too large for this device in one runtime
            out.append({"instances": N, "skipped": str(exc)})
    return out


def _pass_row(ctx, scene, clip, N: int, frames: int) -> dict:
    from ..render.crowd_render import RENDER_PASSES
    from ..render.morph_pass import MorphRuntime
    from ..render.offscreen import OffscreenRenderer
    from ..render.skin_cost import choose_path, skinning_cost
    from .crowd_driver import grid_transforms

    w, h = PASS_SIZE
    rt = MorphRuntime(ctx, scene, instances=N)
    offs: dict[str, OffscreenRenderer] = {}
    row: dict = {"instances": N, "frames": frames}
    try:
        for p in ("compute", "vertex"):
            try:
                offs[p] = OffscreenRenderer(ctx, scene, w, h, samples=1, shadow_size=512, runtime=rt, skinning=p,
                                            cull=False, pass_timing=True, ground=False)
            except UsageError as exc:
                row[f"{p}_skipped"] = str(exc)
        crowd = rt.crowd
        lo, hi = next(iter(offs.values())).renderer.scene_bounds()      # every instance at the origin
        crowd.set_transforms(grid_transforms(N, float(max(hi[0] - lo[0], hi[2] - lo[2]))))
        for o in offs.values():
            o.renderer.frame_camera()
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
        return row
    finally:
        ctx.wait_idle()          # nothing is destroyed while a frame may still run (an exception above)
        for o in offs.values():
            o.destroy()
        rt.destroy()
        ctx.wait_idle()


def pass_line(r: dict) -> str:
    if "skipped" in r:
        return f"crowd passes {r['instances']:>6,}: skipped ({r['skipped']})"
    parts = []
    for p in ("compute", "vertex"):
        if f"{p}_forward_ms" in r:
            parts.append(f"{p}: morph {r[f'{p}_morph_ms']:.2f} skin {r[f'{p}_skin_ms']:.2f} shadow "
                         f"{r[f'{p}_shadow_ms']:.2f} forward {r[f'{p}_forward_ms']:.2f} ms GPU "
                         f"(frame {r[f'{p}_frame_cpu_ms']:.1f} ms CPU, {r[f'{p}_frame_wall_ms']:.1f} wall)")
        else:
            parts.append(f"{p}: skipped ({r.get(f'{p}_skipped', '')})")
    ratio = f"; vertex / compute (skin + shadow + forward) {r['vertex_over_compute']:.2f}" \
        if "vertex_over_compute" in r else ""
    return f"crowd passes {r['instances']:>6,}: " + "; ".join(parts) + ratio + f"; model picks {r['model_choice']}"


def pass_markdown(rows: list[dict]) -> list[str]:
    if not rows:
        return []
    out = ["", f"GPU ms per pass, both skinning paths in the same window ({MODEL} x N, one runtime drawn by two "
           f"renderers, frames interleaved, every instance changing every frame, culling off, "
           f"{PASS_SIZE[0]}x{PASS_SIZE[1]} no MSAA, shadow map 512; median of {rows[0].get('frames', 0)} frames; "
           "the morph pass is the same for both; frame CPU = thread time of update + record + submit + wait, "
           "wall beside it):", "",
           "| instances | path | morph ms | skinning ms | shadow ms | forward ms | skin+shadow+forward ms | "
           "frame CPU ms (wall) | vertex / compute | model picks (bytes per vertex: compute, vertex) |",
           "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        if "skipped" in r:
            out.append(f"| {r['instances']:,} | skipped: {r['skipped']} | | | | | | | | |")
            continue
        for p in ("compute", "vertex"):
            if f"{p}_forward_ms" not in r:
                out.append(f"| {r['instances']:,} | {p}: skipped ({r.get(f'{p}_skipped', '')}) | | | | | | | | |")
                continue
            ratio = f"{r['vertex_over_compute']:.2f}" if p == "vertex" and "vertex_over_compute" in r else ""
            mb = r.get("model_bytes") or {}
            pick = f"{r['model_choice']} ({mb.get('compute')}, {mb.get('vertex')})" if p == "compute" else ""
            out.append(f"| {r['instances']:,} | {p} | {r[f'{p}_morph_ms']:.2f} | {r[f'{p}_skin_ms']:.2f} | "
                       f"{r[f'{p}_shadow_ms']:.2f} | {r[f'{p}_forward_ms']:.2f} | {r[f'{p}_deform_draw_ms']:.2f} | "
                       f"{r[f'{p}_frame_cpu_ms']:.1f} ({r[f'{p}_frame_wall_ms']:.1f}) | {ratio} | {pick} |")
    return out


def main(argv=None) -> int:
    from ..gpu.context import Context
    from .bench import WindowTimer, driver_string

    ap = argparse.ArgumentParser(prog="python -m vkmorph.app.crowd_bench")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--json")
    ap.add_argument("--markdown")
    ap.add_argument("--only-changed", action="store_true", help="only the k-of-N changed rows")
    ap.add_argument("--passes", action="store_true",
                    help="only GPU ms per pass of both skinning paths side by side (pass_rows)")
    ap.add_argument("--counts", help="with --passes: instance counts, comma-separated (default 1,100,1000,10000)")
    ap.add_argument("--note", help="a line for the markdown (e.g. the host's load)")
    args = ap.parse_args(argv)
    ctx = Context.create(echo_messages=True)
    try:
        timer = WindowTimer(ctx)
        report = {"device": ctx.info.name, "driver": driver_string(ctx), "date": time.strftime("%Y-%m-%d %H:%M"),
                  "crowd": []}
        if args.passes:
            report["passes"] = []
            counts = [int(x) for x in args.counts.split(",")] if args.counts else (
                PASS_COUNTS_QUICK if args.quick else PASS_COUNTS)
            for N in counts:
                report["passes"] += pass_rows(ctx, (N,))
                print(pass_line(report["passes"][-1]), flush=True)
                _write(report, args)      # after every row: a later size that crashes the driver keeps these
        for N in () if args.passes else (COUNTS_QUICK if args.quick else COUNTS):
            rows = [] if args.only_changed else crowd_costs(ctx, timer, (N,))
            report["crowd"] += rows
            for c in rows:
                print(crowd_line(c), flush=True)
        report["changed_scaling"] = [] if args.passes else changed_scaling(
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
                               + pass_markdown(report.get("passes", []))) + "\n")


if __name__ == "__main__":
    raise SystemExit(main())
