"""Every pipeline barrier vkmorph records is a named value of gpu/barriers.py: no other module calls
vkCmdPipelineBarrier (buffer dependencies are ``Barrier``s, image layout transitions ``ImageBarrier``s)."""

from __future__ import annotations

import ast

from tests.helpers import ROOT
from vkmorph.gpu import barriers


def test_only_barriers_py_records_pipeline_barriers():
    offenders = []
    for path in sorted((ROOT / "vkmorph").rglob("*.py")):
        if path.relative_to(ROOT).as_posix() == "vkmorph/gpu/barriers.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Attribute) and node.attr in ("vkCmdPipelineBarrier", "vkCmdPipelineBarrier2",
                                                                 "VkImageMemoryBarrier", "VkMemoryBarrier"):
                offenders.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.attr}")
    assert not offenders, offenders


def test_named_values_are_complete():
    """Each named barrier has a name and real stages; an image transition changes the layout or says why not."""
    values = [v for v in vars(barriers).values() if isinstance(v, (barriers.Barrier, barriers.ImageBarrier))]
    assert len({v.name for v in values}) == len(values)
    for v in values:
        assert v.src_stage and v.dst_stage, v.name
        if isinstance(v, barriers.ImageBarrier):
            assert v.old_layout != v.new_layout, v.name
