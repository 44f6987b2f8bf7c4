"""Compare a folder of `vkmorph render` PNGs from another GPU with the same renders made on lavapipe, by the
suite's own image rule for other GPUs (tests/render/scenes.py ``compare_reference``: per-pixel tolerance, then a
3x3-neighbourhood allowance at edges for a device other than the reference one, and a mean-difference cap).

    python3 bench/render_compare.py REFERENCE_DIR RENDER_DIR "NVIDIA H200" [ARTIFACTS_DIR]

Prints one line per image and a total; exit status 1 when any image differs or is missing. The lavapipe renders
for bench/h200_session.sh's render phase (the folder .rendref/, carried to the device) come from, at the same commit:

    for m in $(find tests/assets -name '*.gltf' -o -name '*.glb' -o -name '*.fbx' | sort); do
      python -m vkmorph.app.cli render "$m" --out .rendref/$(basename "$(dirname "$m")")-$(basename "${m%.*}").png
    done
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
from PIL import Image

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))      # the repository root: tests/ is a package there
from tests.render import scenes  # noqa: E402


def main(argv: list[str]) -> int:
    ref_dir, got_dir, device = Path(argv[0]), Path(argv[1]), argv[2]
    scenes.REF = ref_dir
    scenes.ARTIFACTS = Path(argv[3]) if len(argv) > 3 else got_dir / "artifacts"
    refs = sorted(ref_dir.glob("*.png"))
    bad = 0
    for ref in refs:
        got = got_dir / ref.name
        if not got.exists():
            print(f"MISSING {ref.stem}: no render from {device}")
            bad += 1
            continue
        img = np.asarray(Image.open(got).convert("RGBA"))
        problem = scenes.compare_reference(ref.stem, img, device)
        print(f"{'DIFFERS' if problem else 'matches'} {ref.stem}" + (f": {problem}" if problem else ""))
        bad += problem is not None
    print(f"{len(refs) - bad} of {len(refs)} renders from {device} match the lavapipe renders "
          f"(rule: tests/render/scenes.py compare_reference)")
    return 1 if bad or not refs else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
