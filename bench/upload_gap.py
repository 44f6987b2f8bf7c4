"""The crowd weight uploads' gap bridging (``CROWD_UPLOAD_GAP_BYTES``, vkmorph/render/morph_batch.py), measured
(not part of vkmorph).

Part A, what the rule trades: one ``vkCmdUpdateBuffer`` call against the bytes it carries. Per payload size,
CALLS calls into one command buffer (disjoint ranges of one buffer), recorded from Python as the morph pass does
(numpy slice -> cffi pointer -> call): thread CPU and wall time per call while recording, and wall time per call
of executing the command buffer (submit + fence wait, an empty submit subtracted). Break-even: the bytes whose
extra cost equals one more call.

Part B, the rule in place: ``MorphBatch.record_crowd_uploads`` (weight_writes="transfer") for a crowd of
RobotExpressives with k changed instances spread evenly, with the bridged gap set to several sizes (0: no
bridging; 65536: the shipped value), FRAMES uploads per command buffer: record thread CPU and wall per upload,
vkCmdUpdateBuffer calls, bytes written, and execution wall per upload. Tries alternate the order of the gap sizes;
medians (min-max) over tries. Ratios are within one run (the host is shared).

    VKMORPH_VALIDATION=0 python bench/upload_gap.py [--instances 10000] [--tries 5] [--out bench/NAME]
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

SIZES = (16, 256, 1024, 4096, 16384, 65536)
CALLS = 400
GAPS = (0, 4096, 16384, 65536, 262144)
FRAMES = 10
# k changed of 10,000: gaps of 142 KB (bridged by none but 256 KiB), 63.9 KB (just under 64 KiB: the shipped
# rule's worst case), 25.4 KB, 12.7 KB, 1.3 KB (bridged by all but 0; 4 KiB bridges only this one)
KS = (10, 21, 50, 100, 1000)


def med(xs):
    return statistics.median(xs), min(xs), max(xs)


def fmt(m, scale=1.0, nd=1):
    a, lo, hi = (x * scale for x in m)
    return f"{a:.{nd}f} ({lo:.{nd}f}-{hi:.{nd}f})"


def execute(ctx, cb, fence):
    from vkmorph.gpu.vk import vk

    t = time.perf_counter()
    ctx.submit([cb], fence=fence)
    ctx.wait_fence(fence)
    dt = time.perf_counter() - t
    vk.vkResetCommandBuffer(cb, 0)
    return dt


def part_a(ctx, tries):
    from vkmorph.gpu import memory as M
    from vkmorph.gpu.vk import call, vk

    buf = M.device_buffer(ctx, None, M.STORAGE, size=CALLS * max(SIZES), name="bench update target")
    fence = call("vkCreateFence", ctx.device, vk.VkFenceCreateInfo(), None)
    cb = ctx.allocate_command_buffer()
    src = np.arange(max(SIZES) // 4, dtype=np.uint32)
    rows = {s: {"rec_cpu": [], "rec_wall": [], "exec": []} for s in SIZES}
    empty = []
    try:
        for t in range(tries):
            ctx.begin(cb)
            ctx.end(cb)
            empty.append(execute(ctx, cb, fence))
            order = SIZES if t % 2 == 0 else SIZES[::-1]
            for size in order:
                words = src[:size // 4]
                ctx.begin(cb)
                w, c = time.perf_counter(), time.thread_time()
                for k in range(CALLS):
                    chunk = words.view(np.uint8)
                    vk.vkCmdUpdateBuffer(cb, buf.handle, k * size, chunk.nbytes, M.cffi_pointer(chunk))
                c1, w1 = time.thread_time(), time.perf_counter()
                ctx.end(cb)
                r = rows[size]
                r["rec_cpu"].append((c1 - c) / CALLS)
                r["rec_wall"].append((w1 - w) / CALLS)
                r["exec"].append(execute(ctx, cb, fence))
        base = statistics.median(empty)
        for size in SIZES:
            r = rows[size]
            r["exec"] = [max(0.0, e - base) / CALLS for e in r["exec"]]
    finally:
        ctx.free_command_buffer(cb)
        vk.vkDestroyFence(ctx.device, fence, None)
        buf.destroy()
    return rows, base


def part_b(ctx, n, tries):
    from vkmorph import load_scene
    from vkmorph.app.bench import find_model
    from vkmorph.gpu.vk import call, vk
    from vkmorph.render.morph_batch import MorphBatch
    from vkmorph.render.morph_pass import MorphRuntime

    scene = load_scene(str(find_model("RobotExpressive")))
    rt = MorphRuntime(ctx, scene, instances=n, weight_writes="transfer")
    b = rt.batch
    row = 4 * b.instance_slots * b.weight_words
    fence = call("vkCreateFence", ctx.device, vk.VkFenceCreateInfo(), None)
    cb = ctx.allocate_command_buffer()
    shipped = MorphBatch.crowd_upload_gap
    out = {}
    rng = np.random.default_rng(5)
    weights = rng.random(rt.crowd.weights.shape).astype(np.float32)
    try:
        for k in KS:
            rows = np.unique(np.linspace(0, n - 1, k).round().astype(np.int64))
            res = {g: {"rec_cpu": [], "rec_wall": [], "exec": [], "calls": 0, "bytes": 0} for g in GAPS}
            for t in range(tries):
                for g in (GAPS if t % 2 == 0 else GAPS[::-1]):
                    MorphBatch.crowd_upload_gap = property(lambda self, g=g: g // row)
                    ctx.begin(cb)
                    calls = b.update_calls
                    w, c = time.perf_counter(), time.thread_time()
                    nbytes = 0
                    for _ in range(FRAMES):
                        nbytes += b.record_crowd_uploads(cb, rows, weights, 0)
                    c1, w1 = time.thread_time(), time.perf_counter()
                    ctx.end(cb)
                    r = res[g]
                    r["calls"], r["bytes"] = (b.update_calls - calls) // FRAMES, nbytes // FRAMES
                    r["rec_cpu"].append((c1 - c) / FRAMES)
                    r["rec_wall"].append((w1 - w) / FRAMES)
                    r["exec"].append(execute(ctx, cb, fence) / FRAMES)
            out[k] = res
    finally:
        MorphBatch.crowd_upload_gap = shipped
        ctx.free_command_buffer(cb)
        vk.vkDestroyFence(ctx.device, fence, None)
        rt.destroy()
    return out, row


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--instances", type=int, default=10000)
    ap.add_argument("--tries", type=int, default=5)
    ap.add_argument("--out", default=None, help="write OUT.md and OUT.json")
    args = ap.parse_args()
    from vkmorph.gpu.context import Context

    ctx = Context.create(validation=False)
    try:
        device = ctx.info.name
        a, empty = part_a(ctx, args.tries)
        b, row = part_b(ctx, args.instances, args.tries)
    finally:
        ctx.destroy()
    lines = [f"# vkmorph upload-gap bench, {time.strftime('%Y-%m-%d %H:%M')}, {device}", "",
             f"`bench/upload_gap.py --instances {args.instances} --tries {args.tries}`, host {platform.node()} "
             f"({os.cpu_count()} cores, shared with other jobs); medians (min-max) over tries", "",
             f"## A: one vkCmdUpdateBuffer against its bytes ({CALLS} calls per command buffer, empty submit "
             f"{empty * 1e3:.2f} ms subtracted)", "",
             "| bytes per call | record CPU us/call | record wall us/call | execute wall us/call |",
             "|---|---|---|---|"]
    for s in SIZES:
        r = a[s]
        lines.append(f"| {s:,} | {fmt(med(r['rec_cpu']), 1e6)} | {fmt(med(r['rec_wall']), 1e6)} | "
                     f"{fmt(med(r['exec']), 1e6)} |")
    small, big = a[SIZES[0]], a[SIZES[-1]]
    per_call = statistics.median(small["rec_cpu"]) + statistics.median(small["exec"])
    per_byte = ((statistics.median(big["rec_cpu"]) + statistics.median(big["exec"])) - per_call) / (SIZES[-1]
                                                                                                     - SIZES[0])
    even = per_call / per_byte if per_byte > 0 else float("inf")
    lines += ["", f"One call ({SIZES[0]} B, record CPU + execute): {per_call * 1e6:.1f} us; each byte more: "
              f"{per_byte * 1e9:.3f} ns (from the {SIZES[-1]:,} B row); break-even: one call = {even / 1024:.0f} KiB "
              "carried.", "",
              f"## B: record_crowd_uploads, {args.instances:,} RobotExpressives ({row} B of weights per instance), "
              f"k changed spread evenly, per upload ({FRAMES} per command buffer)", "",
              "| k | gap bridged (B) | vkCmdUpdateBuffer | bytes | record CPU us | record wall us | execute wall us |",
              "|---|---|---|---|---|---|---|"]
    for k, res in b.items():
        for g in GAPS:
            r = res[g]
            lines.append(f"| {k:,} | {g:,}{' (shipped)' if g == 65536 else ''} | {r['calls']} | {r['bytes']:,} | "
                         f"{fmt(med(r['rec_cpu']), 1e6, 0)} | {fmt(med(r['rec_wall']), 1e6, 0)} | "
                         f"{fmt(med(r['exec']), 1e6, 0)} |")
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        Path(args.out + ".md").write_text(text)
        Path(args.out + ".json").write_text(json.dumps(
            {"device": device, "instances": args.instances, "tries": args.tries, "row_bytes": row,
             "empty_submit_s": empty, "calls_per_cb": CALLS, "frames_per_cb": FRAMES,
             "a": {str(s): a[s] for s in SIZES},
             "b": {str(k): {str(g): v for g, v in res.items()} for k, res in b.items()}}, indent=1))


if __name__ == "__main__":
    main()
