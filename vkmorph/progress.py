"""Progress for long steps (big imports, GPU data builds, bakes) with tqdm: shown on a terminal, silent when
stderr is not a TTY (pipes, CI logs, tests)."""

from __future__ import annotations

import sys
from contextlib import contextmanager


@contextmanager
def stages(names: list[str], enabled: bool | None = None, desc: str = "vkmorph"):
    """``with stages(["import", "GPU data"]) as step: step(); ...`` advances one bar through named stages."""
    from tqdm import tqdm

    show = sys.stderr.isatty() if enabled is None else enabled
    bar = tqdm(total=len(names), desc=desc, disable=not show, leave=False, bar_format="{desc}: {n}/{total} {postfix}")
    index = [0]

    def step() -> None:
        if index[0] < len(names):
            bar.set_postfix_str(names[index[0]])
        if index[0] > 0:
            bar.update(1)
        index[0] += 1

    step()
    try:
        yield step
    finally:
        bar.update(bar.total - bar.n)
        bar.close()
