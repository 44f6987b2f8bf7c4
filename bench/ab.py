"""Same-window A/B of the two morph kernel families, and where a frame's time goes (not part of vkmorph).

Per case and format, two runtimes of the same scene are built: the workgroup kernel with its block layout (what
GPUs with subgroup ballots get) and the per-vertex kernel with its vertex records (what CPU devices get). One
command buffer per try holds F frames of each segment, back to back, in an order that rotates per try:

  wg        the shipped frame of the workgroup runtime (every weight changed: guard, upload, transfer -> compute,
            dispatch, final barrier)
  vx        the same frame of the per-vertex runtime
  wg_kern   the workgroup dispatch alone + one compute -> compute barrier (weights as last uploaded)
  wg_upl    the workgroup frame without its dispatch (guard, upload, barrier, final barrier)
  copy      the grid-stride copy of the floor's bytes + one barrier (the floor)

Printed: median us per frame of each segment and its fraction of the floor (median of per-try copy/segment
ratios), and vx/wg (median of per-try ratios: < 1 means the per-vertex kernel is faster in the same window).

    python bench/ab.py [--quick] [--cases 0,3] [--formats full,compact] [--tries 5]
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def upload_only(rt, w):
    """A frame of ``rt`` without its dispatch: guard, weight upload (weights changed), barriers."""
    from vkmorph.gpu import barriers

    flip = [0]
    scaled = (w * 0.9).astype(np.float32)
    n = len(rt.morphing)

    def rec(cb):
        flip[0] ^= 1
        rt.pose.set_flat(scaled if flip[0] else w)
        barriers.record(cb, barriers.PREVIOUS_FRAME_TO_MORPH)
        rt.batch.record_uploads(cb, range(n))
        barriers.record(cb, barriers.TRANSFER_TO_COMPUTE)
        barriers.record(cb, barriers.COMPUTE_TO_VERTEX)
    return rec


def kernel_only(rt):
    """The dispatch of ``rt`` alone (weights as last uploaded) + one compute -> compute barrier."""
    from vkmorph.gpu import barriers

    n = len(rt.morphing)

    def rec(cb):
        rt.batch.record_dispatches(cb, range(n), 0)
        barriers.record(cb, barriers.COMPUTE_TO_COMPUTE)
    return rec


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--formats", default="full,compact")
    ap.add_argument("--tries", type=int, default=5)
    ap.add_argument("--cases", help="indices into the case list")
    ap.add_argument("--try-ms", type=float, default=3.0)
    ap.add_argument("--warm-s", type=float, default=0.4)
    args = ap.parse_args()
    from vkmorph.app import bench as B
    from vkmorph.gpu.context import Context
    from vkmorph.morph.gpu_data import nonzero_vertices
    from vkmorph.morph.reference import morph_reference
    from vkmorph.render.morph_pass import MorphRuntime

    ctx = Context.create()
    print("device", ctx.info.name, B.driver_string(ctx), flush=True)
    timer = B.WindowTimer(ctx)
    cases = B.standard_cases(args.quick, ctx.info.device_type == "discrete")
    cases.append(B.Case(14_000, 50, 0.1, 5, "heads", 256))
    if args.cases:
        cases = [cases[int(i)] for i in args.cases.split(",")]
    def build(scene, fmt, family):
        return MorphRuntime(ctx, scene, delta_format=fmt, kernel=family)

    for case in cases:
        t0 = time.perf_counter()
        if case.pattern == "heads":
            prims = [B.synthetic_primitive(14_000, 50, 0.1, "clustered", seed=3)] * case.instances
        elif case.instances > 1:
            model = B.model_primitives(case.pattern)
            prims = [p for _ in range(case.instances) for p in model]
        else:
            prims = [B.synthetic_primitive(case.vertices, case.targets, case.coverage, case.pattern)]
        gen = time.perf_counter() - t0
        scene = B.synthetic_scene(prims)
        for fmt in args.formats.split(","):
            rts = {}
            try:
                rts["wg"] = build(scene, fmt, "workgroup")
                rts["vx"] = build(scene, fmt, "per-vertex")
                wg = rts["wg"]
                w = np.zeros(len(wg.pose.flat), np.float32)
                active_deltas, counted = 0, {}
                act = case.active if case.instances == 1 or case.pattern == "heads" else None
                for node, prim in enumerate(prims):
                    sl = wg.pose.slice_of(node)
                    a = act if act is not None else len(prim.morph_targets)
                    w[sl.start:sl.start + a] = np.linspace(0.3, 0.9, a)
                    if id(prim) not in counted:
                        counted[id(prim)] = sum(len(nonzero_vertices(prim, t)) for t in range(a))
                    active_deltas += counted[id(prim)]
                V = wg.total_vertices
                floor = B.floor_bytes_of(V, active_deltas)
                cp = B.CopyFrames(ctx, floor)
                segs = {"wg": B._changing_record(wg, w), "vx": B._changing_record(rts["vx"], w),
                        "wg_kern": kernel_only(wg), "wg_upl": upload_only(wg, w), "copy": cp.frame}
                names = list(segs)
                probe = timer.run([segs[k] for k in names], 2)
                start = timer.gpu_s
                while timer.gpu_s - start < args.warm_s:
                    probe = timer.run([segs[k] for k in names], int(np.clip(20.0 / max(sum(probe), 1e-6), 2, 800)))
                frames = int(np.clip(args.try_ms / max(probe), 2, 400))
                res = {k: [] for k in names}
                for t in range(args.tries):
                    order = names[t % len(names):] + names[:t % len(names)]
                    for k, ms in zip(order, timer.run([segs[k] for k in order], frames)):
                        res[k].append(ms)
                errs = {}
                for k in ("wg", "vx"):
                    rt = rts[k]
                    out = rt.read_vertices(rt.morphing[0])
                    p, _, _ = morph_reference(prims[0], rt.pose.flat[rt.pose.slice_of(0)].astype(np.float64))
                    errs[k] = float(np.abs(out["position"] - p).max())
                copy = np.array(res["copy"])
                parts = []
                for k in names[:-1]:
                    fr = copy / np.array(res[k])
                    parts.append(f"{k} {np.median(res[k]) * 1e3:7.1f}us f={np.median(fr):.2f}")
                ratio = np.array(res["vx"]) / np.array(res["wg"])
                name = f"{case.vertices // 1000:,}k x{case.targets} {case.coverage:.0%} {case.pattern} a{case.active}"
                if case.instances > 1:
                    name = f"{case.pattern} x{case.instances} ({V:,} v)"
                print(f"{name:<34} {fmt:>7} floor {floor / 1e6:6.1f}MB copy {np.median(copy) * 1e3:6.1f}us | "
                      + " | ".join(parts)
                      + f" | vx/wg {np.median(ratio):.2f} [{ratio.min():.2f}-{ratio.max():.2f}] F={frames}"
                      + f" err {max(errs.values()):.0e} (gen {gen:.1f}s)", flush=True)
                cp.destroy()
            finally:
                for rt in rts.values():
                    rt.destroy()
        del prims, scene
    timer.destroy()
    ctx.destroy()


if __name__ == "__main__":
    main()
