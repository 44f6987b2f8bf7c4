"""Runs one hostile case in a child process with a time limit and reports its exit status, seconds and peak RSS.

``run_child(argv, timeout, env)`` starts ``argv`` in its own session, waits for it with ``os.wait4`` (whose
``ru_maxrss`` covers the child and every descendant it waited for, i.e. the importer's forked child too) and kills
the whole session when the time limit passes. ``python -m tests.asset.hostile_run textures FILE`` imports FILE
and decodes every material image the way ``vkmorph render`` does (without a GPU), printing each material
warning as one line on stderr; exit 0, or 2 with one line for a ``VkmorphError``.

``python -m tests.asset.hostile_run measure DIR [CASE ...]`` builds the cases into DIR and prints a table row per
case (exit, seconds, peak MB, the last stderr line): the figures in the issue's table. ``HOSTILE_TIMEOUT`` sets
the time limit (120 s), ``HOSTILE_RENDER=1`` runs the image cases through ``vkmorph render`` instead."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


@dataclass
class Outcome:
    status: int | None          # None: killed at the time limit
    seconds: float
    peak_mb: float
    stdout: str
    stderr: str


# A fresh small interpreter runs the command and reports resource.getrusage(RUSAGE_CHILDREN).ru_maxrss: the
# peak of the command and of every descendant it waited for (the importer's forked child too). It has to be a
# fresh process: Linux carries the forking process's high-water RSS over exec into the child's ru_maxrss, so a
# command started straight from a big test process would report at least that process's peak.
LAUNCHER = ("import resource, subprocess, sys\n"
            "code = subprocess.call(sys.argv[2:])\n"
            "open(sys.argv[1], 'w').write(str(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss))\n"
            "sys.exit(code if code >= 0 else 128 - code)\n")


def run_child(argv: list[str], timeout: float, env: dict | None = None) -> Outcome:
    """Run ``argv`` (its own session, killed as a whole after ``timeout`` s): status, seconds, peak RSS."""
    with tempfile.TemporaryDirectory() as tmp:
        out, err, peak = (Path(tmp) / n for n in ("out", "err", "peak"))
        with open(out, "wb") as o, open(err, "wb") as e:
            start = time.monotonic()
            proc = subprocess.Popen([sys.executable, "-S", "-c", LAUNCHER, str(peak), *argv], stdout=o, stderr=e,
                                    stdin=subprocess.DEVNULL, cwd=ROOT, env={**os.environ, **(env or {})},
                                    start_new_session=True)
            try:
                status = proc.wait(timeout)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
                status = None
            seconds = time.monotonic() - start
        kib = int(peak.read_text()) if peak.exists() and peak.read_text() else 0
        return Outcome(status, seconds, kib / 1024, out.read_text(errors="replace"),
                       err.read_text(errors="replace"))


def command(case, path: Path) -> list[str]:
    if case.command == "info":
        return [sys.executable, "-m", "vkmorph", "info", str(path)]
    if case.command == "render":   # through the GPU (lavapipe here; the validation layer when the env asks)
        return [sys.executable, "-m", "vkmorph", "render", str(path), "--size", "64x48", "--out",
                str(path.parent / "out.png")]
    return [sys.executable, "-m", "tests.asset.hostile_run", "textures", str(path)]


def textures(file: str) -> int:
    import warnings

    from vkmorph.asset.importer import load_scene
    from vkmorph.asset.materials import MaterialDataError
    from vkmorph.errors import VkmorphError

    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            scene = load_scene(file)
    except VkmorphError as exc:
        print(f"vkmorph: {exc}", file=sys.stderr)
        return 2
    for w in caught:
        print(f"warning: {w.message}", file=sys.stderr)
    seen = set()
    for mesh in scene.meshes:
        for prim in mesh.primitives:
            m = prim.material
            if m is None:
                continue
            for p in m.problems:
                print(f"warning: {p}", file=sys.stderr)
            for slot in m.TEXTURE_SLOTS:
                ref = getattr(m, slot)
                if ref is None or ref.image.key in seen:
                    continue
                seen.add(ref.image.key)
                try:
                    rgba = ref.image.decode()
                except MaterialDataError as exc:
                    print(f"warning: material {m.name!r} image {ref.image.name!r}: {exc}; rendered without it",
                          file=sys.stderr)
                else:
                    print(f"{ref.image.name}: {rgba.shape[1]}x{rgba.shape[0]}")
    return 0


def measure(folder: Path, names: list[str], timeout: float) -> None:
    from tests.asset.hostile_files import CASES

    for name in names or list(CASES):
        case = CASES[name]
        sub = folder / name
        sub.mkdir(parents=True, exist_ok=True)
        path = case.build(sub)
        argv = command(case, path)
        if case.command in ("textures", "render") and os.environ.get("HOSTILE_RENDER"):   # the real thing, on a GPU
            argv = [sys.executable, "-m", "vkmorph", "render", str(path), "--size", "64x48", "--out",
                    str(sub / "out.png")]
        o = run_child(argv, timeout, case.env)
        last = (o.stderr.strip().splitlines() or [""])[-1][:150]
        lines = len(o.stderr.strip().splitlines())
        exit_ = "killed" if o.status is None else str(o.status)
        print(f"| {name} | {exit_} | {o.seconds:.1f} | {o.peak_mb:.0f} | {lines} | {last} |", flush=True)


if __name__ == "__main__":
    if sys.argv[1] == "textures":
        sys.exit(textures(sys.argv[2]))
    if sys.argv[1] == "measure":
        t = float(os.environ.get("HOSTILE_TIMEOUT", "120"))
        measure(Path(sys.argv[2]), sys.argv[3:], t)
