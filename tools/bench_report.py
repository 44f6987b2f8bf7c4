#!/usr/bin/env python3
"""Turn a ``vkmorph bench --json`` report into its markdown table and PNG plot (needs matplotlib), e.g. for a
report produced on a machine without matplotlib:

    python tools/bench_report.py bench/2026-11-30-h200.json
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from vkmorph.app.bench_report import markdown, plot


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    src = Path(argv[0])
    report = json.loads(src.read_text())
    src.with_suffix(".md").write_text(markdown(report))
    plot(report, str(src.with_suffix(".png")))
    print(f"wrote {src.with_suffix('.md')} and {src.with_suffix('.png')}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
