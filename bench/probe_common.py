"""What the probes in bench/ (xfb_probe, bake_raster_probe, store_probe, raster_probe, bake_kernel) share: a row's
medians, the child's teardown (its validation messages and leak count into the result) and writing the report."""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np


def median_row(row: dict) -> dict:
    """A variant's row with each list of timings replaced by its median (its command buffer left out)."""
    return {k: (float(np.median(x)) if isinstance(x, list) else x) for k, x in row.items() if k != "cb"}


def close_probe(ctx, probe, res: dict) -> None:
    """In a probe child's ``finally``: destroy what is left (after the device is idle), then record the validation
    messages and the live children (leaks) in ``res``, destroy the context, and note the host's load."""
    if probe is not None:
        ctx.wait_idle()
        probe.destroy()
    res["messages"] = [str(m) for m in ctx.messages]
    res["leaks"] = ctx.live_children
    ctx.destroy()
    res["load"] = os.getloadavg()[0]


def emit(lines: list[str], out: str | None) -> None:
    """Print the report and write it to ``out`` (if given), one trailing newline."""
    text = "\n".join(lines)
    print(text)
    if out:
        Path(out).write_text(text + "\n")
