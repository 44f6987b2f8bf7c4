"""A wheel built from this tree works installed outside it: SPIR-V and the default scene ship in the package.

Offline and fast: the wheel is built without build isolation (setuptools from the dev extras), installed with
``--no-deps --no-index`` into a fresh venv whose only other path is the dev venv's site-packages (for numpy,
vulkan, ...; the installed copy comes first on sys.path, which the test checks), and run from a folder outside
the repository.
"""

from __future__ import annotations

import os
import site
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from tests.helpers import ROOT, asset


def _run(cmd, **kw):
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=900, **kw)
    assert r.returncode == 0, f"{cmd}\n{r.stdout}\n{r.stderr}"
    return r


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("wheel")
    _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index", "-q",
          "--disable-pip-version-check", "-w", str(tmp / "dist"), str(ROOT)])
    (wheel,) = (tmp / "dist").glob("vkmorph-*.whl")
    venv = tmp / "venv"
    _run([sys.executable, "-m", "venv", "--without-pip", str(venv)])
    py = venv / "bin" / "python"
    purelib = _run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"]).stdout.strip()
    # (and the PYTHONPATH entries other than this tree: where a machine without an index brings its wheels)
    extra = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p and Path(p).resolve() != ROOT]
    deps = [p for p in {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"],
                        *site.getsitepackages(), *extra} if Path(p).is_dir()]
    # addsitedir also runs the .pth files there (setuptools' distutils shim, which pyassimp needs on 3.12+);
    # the editable vkmorph finder it installs comes after the venv's own copy, which the test checks
    Path(purelib, "dev_deps.pth").write_text("".join(f"import site; site.addsitedir({d!r})\n" for d in deps))
    # without PYTHONPATH: with this tree on it, pip would take the vkmorph.egg-info the wheel build just wrote
    # here for an installed vkmorph and install nothing (seen on the H200, whose wheels come via PYTHONPATH)
    clean = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    _run([sys.executable, "-m", "pip", "--python", str(py), "install", "--no-deps", "--no-index", "-q",
          "--disable-pip-version-check", str(wheel)], env=clean)
    work = tmp / "elsewhere"
    work.mkdir()
    return venv, work, wheel


def test_wheel_contains_spirv_data_and_license(installed):
    import zipfile

    names = zipfile.ZipFile(installed[2]).namelist()
    assert {"vkmorph/spirv/morph.comp.spv", "vkmorph/spirv/skin.vert.spv", "vkmorph/data/default_scene.gltf"} \
        <= set(names)
    assert any(n.endswith("LICENSE") for n in names)
    # the top-level spirv/ ships whole, mapped into the package (pyproject.toml's package-dir), not beside it
    assert {f"vkmorph/spirv/{p.name}" for p in (ROOT / "spirv").glob("*.spv")} <= set(names)
    assert not [n for n in names if n.startswith("spirv/")]
    # pyproject.toml lists the packages by hand (a mapped package is invisible to packages.find): every module
    # of the source tree must be in the wheel
    missing = [str(p.relative_to(ROOT)) for p in sorted((ROOT / "vkmorph").rglob("*.py"))
               if "__pycache__" not in p.parts and p.relative_to(ROOT).as_posix() not in names]
    assert not missing, f"not in the wheel (add the package to [tool.setuptools] packages): {missing}"


@pytest.mark.gpu
def test_installed_cli_runs_outside_the_repo(installed):
    venv, work, _ = installed
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "DISPLAY", "WAYLAND_DISPLAY")}
    env["VKMORPH_VALIDATION"] = "1"
    exe = str(venv / "bin" / "vkmorph")
    where = _run([str(venv / "bin" / "python"), "-c", "import vkmorph; print(vkmorph.__file__)"], cwd=work, env=env)
    assert where.stdout.startswith(str(venv)), where.stdout       # not the source tree
    assert _run([exe, "--version"], cwd=work, env=env).stdout.strip().startswith("vkmorph ")
    cube = asset("AnimatedMorphCube", "AnimatedMorphCube.gltf")
    r = _run([exe, "info", str(cube)], cwd=work, env=env)
    assert "2 targets" in r.stdout and not r.stderr
    _run([exe, "morph", str(cube), "--weights", "1,0", "--out", "o.npz"], cwd=work, env=env)
    _run([exe, "render", "--size", "64x48", "--out", "r.png", str(asset("SimpleSkin", "SimpleSkin.gltf"))],
         cwd=work, env=env)
    _run([str(venv / "bin" / "python"), "-m", "vkmorph", "demo", "--headless", "--frames", "1", "--out-dir", "f"],
         cwd=work, env=env)                                         # the default scene ships too
    assert (work / "o.npz").stat().st_size > 0 and (work / "r.png").stat().st_size > 0
    assert (work / "f" / "frame_000.png").exists()
