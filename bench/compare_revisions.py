"""Same-session comparison of the morph pass of two revisions on one device (for "no case slower than before").

    python bench/compare_revisions.py --old fe5b97d [--rounds 2] [--cases 0,3] [--formats compact]

Each case runs in a fresh process per revision, alternating old/new, so both see the same machine load
(lavapipe on a shared 2-core host is noisy). Each process builds the same synthetic primitive (seeded numpy,
identical in both), builds that revision's MorphRuntime and times F changing frames recorded into one command
buffer (timestamps). Prints per case the median ms per frame of each revision and new/old. With
COMPARE_WINDOW=1 (both revisions must have vkmorph.app.bench's WindowTimer) each figure is instead morph time /
same-window copy-kernel time, in which the machine's speed of the moment cancels. Not part of vkmorph.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
CASES = [(50_000, 52, 0.25, 5), (50_000, 52, 0.05, 52), (500_000, 52, 0.25, 5), (500_000, 52, 0.05, 52),
         (500_000, 200, 0.05, 1), (500_000, 8, 1.0, 8)]


def child(root: str, V: int, T: int, cov: float, act: int, fmt: str, frames: int) -> None:
    sys.path.insert(0, root)
    from vkmorph.asset.model import (
        STATIC_VERTEX,
        MeshAsset,
        MeshPrimitiveAsset,
        MorphTargetAsset,
        NodeAsset,
        SceneAsset,
    )
    from vkmorph.gpu.context import Context
    from vkmorph.gpu.vk import vk
    from vkmorph.render.morph_pass import MorphRuntime

    rng = np.random.default_rng(0)
    v = np.zeros(V, STATIC_VERTEX)
    v["position"] = rng.random((V, 3), np.float32)
    v["normal"] = (0.0, 0.0, 1.0)
    v["tangent"] = (1.0, 0.0, 0.0, 1.0)
    targets = []
    for k in range(T):
        idx = np.flatnonzero(rng.random(V) < cov)
        d = np.zeros((V, 3), np.float32)
        d[idx] = rng.normal(0, 0.01, (len(idx), 3))
        nd = np.zeros((V, 3), np.float32)
        nd[idx] = rng.normal(0, 0.05, (len(idx), 3))
        targets.append(MorphTargetAsset(f"t{k}", d, nd, None))
    prim = MeshPrimitiveAsset(vertices=v, indices=np.zeros(0, np.uint32), morph_targets=targets)
    scene = SceneAsset(nodes=[NodeAsset("n", mesh=0)], meshes=[MeshAsset("m", [prim])], skins=[], animations=[],
                       roots=[0])
    ctx = Context.create(validation=False)
    rt = MorphRuntime(ctx, scene, delta_format=fmt)
    w = np.zeros(T, np.float32)
    w[:act] = np.linspace(0.3, 0.9, act)
    if os.environ.get("COMPARE_WINDOW"):     # same-window ratio to a copy kernel (both revisions need the bench)
        from vkmorph.app import bench as B
        timer = B.WindowTimer(ctx)
        cp = B.CopyFrames(ctx, V * 84)
        _, res = timer.same_window(B._changing_record(rt, w), cp.frame, 2 * frames, 0.0, 1.0)
        out = [m / c for m, c in res]          # morph time in copy-kernel units (machine speed cancels)
        cp.destroy()
        timer.destroy()
        rt.destroy()
        ctx.destroy()
        print(json.dumps({"ms": float(np.median(out))}))
        return
    pool = vk.vkCreateQueryPool(ctx.device, vk.VkQueryPoolCreateInfo(queryType=vk.VK_QUERY_TYPE_TIMESTAMP,
                                                                      queryCount=2), None)
    out = []
    for rep in range(3):
        def rec(cb):
            vk.vkCmdResetQueryPool(cb, pool, 0, 2)
            vk.vkCmdWriteTimestamp(cb, vk.VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, pool, 0)
            for f in range(frames):
                rt.pose.set_flat(w * (0.9 if f % 2 else 1.0))
                rt.record(cb)
            vk.vkCmdWriteTimestamp(cb, vk.VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, pool, 1)
        ctx.submit_and_wait(rec, 600.0)
        data = np.zeros(2, np.uint64)
        vk.vkGetQueryPoolResults(ctx.device, pool, 0, 2, 16, vk.ffi.from_buffer(data), 8,
                                 vk.VK_QUERY_RESULT_64_BIT | vk.VK_QUERY_RESULT_WAIT_BIT)
        if rep:
            out.append(float(data[1] - data[0]) * ctx.info.timestamp_period_ns * 1e-6 / frames)
    vk.vkDestroyQueryPool(ctx.device, pool, None)
    rt.destroy()
    ctx.destroy()
    print(json.dumps({"ms": float(np.median(out))}))


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--old", default="fe5b97d")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--frames", type=int, default=4)
    ap.add_argument("--cases", default="", help="comma-separated indices into CASES (default: all)")
    ap.add_argument("--formats", default="full,compact")
    ap.add_argument("--child", nargs=7)
    a = ap.parse_args()
    if a.child:
        root, V, T, cov, act, fmt, frames = a.child
        child(root, int(V), int(T), float(cov), int(act), fmt, int(frames))
        return 0
    tmp = Path(tempfile.mkdtemp())
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", a.old], capture_output=True, check=True).stdout
    with tarfile.open(fileobj=__import__("io").BytesIO(archive)) as tf:
        tf.extractall(tmp)
    print(f"old = {a.old}, new = working tree; ms per changing frame, median; {a.rounds} alternating rounds")
    picked = [CASES[int(i)] for i in a.cases.split(",")] if a.cases else CASES
    for V, T, cov, act in picked:
        for fmt in a.formats.split(","):
            res = {"old": [], "new": []}
            for _ in range(a.rounds):
                for name, root in (("old", tmp), ("new", ROOT)):
                    r = subprocess.run([sys.executable, __file__, "--child", str(root), str(V), str(T), str(cov),
                                        str(act), fmt, str(a.frames)], capture_output=True, text=True)
                    if r.returncode:
                        print(r.stderr[-2000:])
                        return 1
                    res[name].append(json.loads(r.stdout.strip().splitlines()[-1])["ms"])
            o, n = np.median(res["old"]), np.median(res["new"])
            print(f"{V:>9,} x {T:>3}, {cov:4.0%} random, {act:>2} active, {fmt:>7}: old {o:9.2f} ms, new {n:9.2f} ms,"
                  f" new/old {n / o:5.2f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
