"""Outputs all or nothing: paths checked before work, one atomic writer, permissions, special files, signals."""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
import time

import numpy as np
import pytest

from tests.helpers import ROOT, assert_one_line_error, asset, vkmorph
from vkmorph.errors import UsageError
from vkmorph.outputs import atomic_write, check_output, check_output_dir, printable

CUBE = ("AnimatedMorphCube", "AnimatedMorphCube.gltf")


def _write(data: bytes):
    return lambda f: f.write(data)


def test_atomic_write_respects_umask_and_existing_mode(tmp_path):
    old = os.umask(0o022)
    try:
        p = atomic_write(tmp_path / "a.bin", _write(b"x"))
        assert stat.S_IMODE(os.stat(p).st_mode) == 0o644
        os.chmod(p, 0o640)
        atomic_write(p, _write(b"yy"))
        assert stat.S_IMODE(os.stat(p).st_mode) == 0o640 and p.read_bytes() == b"yy"
    finally:
        os.umask(old)
    assert sorted(os.listdir(tmp_path)) == ["a.bin"]  # no temporaries left


def test_atomic_write_leaves_nothing_on_error_and_keeps_the_old_file(tmp_path):
    p = tmp_path / "keep.bin"
    p.write_bytes(b"old")

    def boom(f):
        f.write(b"partial")
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        atomic_write(p, boom)
    assert p.read_bytes() == b"old" and os.listdir(tmp_path) == ["keep.bin"]


def test_fifo_written_in_place_and_symlink_followed(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    reader = subprocess.Popen(["cat", str(fifo)], stdout=subprocess.PIPE)
    atomic_write(fifo, _write(b"through the pipe"))
    assert reader.communicate(timeout=300)[0] == b"through the pipe"
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)                   # still a FIFO
    target = tmp_path / "real.bin"
    target.write_bytes(b"old")
    link = tmp_path / "link.bin"
    link.symlink_to(target)
    atomic_write(link, _write(b"new"))
    assert link.is_symlink() and target.read_bytes() == b"new"    # followed: the link stays a link


@pytest.mark.parametrize("path,needle", [("", "is empty"), ("{d}", "is a folder"),
                                         ("{d}/missing/o.npz", "does not exist"), ("{d}/o.png", "must end with")])
def test_check_output_refuses(tmp_path, path, needle):
    with pytest.raises(UsageError, match=needle):
        check_output(path.format(d=tmp_path), suffixes=(".npz",))


def test_check_output_refuses_read_only_folder_and_file_as_out_dir(tmp_path):
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o555)
    try:
        if os.access(ro, os.W_OK):
            pytest.skip("running as root: permission bits do not stop writes")
        with pytest.raises(UsageError, match="not writable"):
            check_output(ro / "o.npz")
    finally:
        ro.chmod(0o755)
    f = tmp_path / "file"
    f.write_text("x")
    with pytest.raises(UsageError, match="not a folder"):
        check_output_dir(f)


def test_non_utf8_path_and_control_characters_are_escaped(tmp_path):
    bad = os.fsdecode(bytes(tmp_path) + b"/\xff.npz")
    with pytest.raises(UsageError, match="not valid UTF-8") as e:
        check_output(bad)
    e.value.args[0].encode("utf-8")  # printable on any terminal
    assert printable("a\x1b[31mb\n") == "a\\x1b[31mb\\x0a"


@pytest.mark.parametrize("args,needle", [
    (["--out", ""], "is empty"),
    (["--out", "{d}"], "is a folder"),
    (["--out", "{d}/e.png"], "must end with .npz"),
    (["--out", "{d}/no/o.npz"], "does not exist"),
    (["--time", "1", "--out", "{d}/o.npz"], "--time needs --clip"),
    (["--weight", "Nope=1", "--out", "{d}/o.npz"], "unknown morph target"),
    (["--weight", "target_0", "--out", "{d}/o.npz"], "NAME=W"),
])
def test_morph_cli_refuses_before_work(tmp_path, args, needle):
    r = vkmorph("morph", asset(*CUBE), *[a.format(d=tmp_path) for a in args])
    assert_one_line_error(r, needle)
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_demo_refuses_outputs_before_rendering(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY")}
    f = tmp_path / "file"
    f.write_text("x")
    for args, needle in ((["--out-dir", f], "not a folder"),
                         (["--out-dir", tmp_path / "frames", "--screenshot", tmp_path / "no" / "s.png"],
                          "does not exist")):
        r = subprocess.run([sys.executable, "-m", "vkmorph", "demo", "--frames", "1", *map(str, args)],
                           capture_output=True, text=True, cwd=ROOT, env=env, timeout=900)
        assert_one_line_error(r, needle)
    assert not (tmp_path / "frames").exists()


def test_bench_refuses_json_into_missing_folder(tmp_path):
    r = vkmorph("bench", "--quick", "--json", tmp_path / "no" / "b.json")
    assert_one_line_error(r, "does not exist")


@pytest.mark.gpu
def test_morph_cli_named_weights_world_and_indices(tmp_path):
    import vkmorph as vm
    from vkmorph.morph.reference import morph_reference

    out = tmp_path / "o.npz"
    r = vkmorph("morph", asset(*CUBE), "--weight", "target_1=0.5", "--world", "--names", "--out", out)
    assert r.returncode == 0, r.stderr
    scene = vm.load_scene(asset(*CUBE))
    (prim,) = scene.primitives
    node = next(i for i, n in enumerate(scene.nodes) if n.mesh == 0)
    w = np.zeros(2)
    w[1] = 0.5
    p, _, _ = morph_reference(prim, w)
    from vkmorph.anim.skeleton import Skeleton

    world = Skeleton(scene).world_matrices()[node]
    with np.load(out) as z:
        key = f"{scene.nodes[node].name}/0"
        np.testing.assert_allclose(z[f"{key}/position"], p @ world[:3, :3].T + world[:3, 3], atol=1e-5)
        np.testing.assert_array_equal(z[f"{key}/indices"], prim.indices)


def _wait_until_it_catches_sigterm(proc, patience: float = 900.0) -> None:
    """Until the child's SIGTERM handler is installed (bit 15 of SigCgt in /proc/PID/status): before that the
    signal would kill it by default (exit -15), which is not what the test is about."""
    end = time.monotonic() + patience
    while time.monotonic() < end and proc.poll() is None:
        try:
            with open(f"/proc/{proc.pid}/status") as f:
                caught = next(int(line.split()[1], 16) for line in f if line.startswith("SigCgt:"))
        except (OSError, StopIteration):
            caught = 0
        if caught & (1 << (signal.SIGTERM - 1)):
            return
        time.sleep(0.02)


@pytest.mark.gpu
def test_sigterm_during_render_leaves_no_temporary(tmp_path):
    """SIGTERM is handled like Ctrl-C: exit 143, one line, no tmp file, no partial output."""
    out = tmp_path / "big.png"
    proc = subprocess.Popen([sys.executable, "-m", "vkmorph", "render", str(asset(*CUBE)), "--size", "4096x4096",
                             "--out", str(out)], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env={**os.environ, "VKMORPH_VALIDATION": "0"})
    _wait_until_it_catches_sigterm(proc)   # an event, not a fixed sleep: a loaded machine may take seconds
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=900)
    if proc.returncode == 0:
        pytest.skip("render finished before the signal")
    assert proc.returncode == 143 and err.strip().splitlines() == ["vkmorph render: terminated"], err
    assert os.listdir(tmp_path) == []


def test_warnings_are_one_line_and_held_back_on_error(capsys, monkeypatch):
    """A RuntimeWarning before an error does not make stderr two lines; on success it is one line."""
    import warnings

    from vkmorph.app import cli

    def fails(args):
        warnings.warn("overflow encountered in cast", RuntimeWarning, stacklevel=1)
        raise UsageError("bad input")

    def works(args):
        warnings.warn("overflow encountered in cast", RuntimeWarning, stacklevel=1)
        warnings.warn("overflow encountered in cast", RuntimeWarning, stacklevel=1)
        return 0

    for fn, status, lines in ((fails, 2, ["vkmorph info: bad input"]),
                              (works, 0, ["vkmorph: warning: overflow encountered in cast"])):
        monkeypatch.setattr(cli, "cmd_info", fn)
        with warnings.catch_warnings():
            warnings.simplefilter("always")
            assert cli.main(["info", "x.glb"]) == status
        assert capsys.readouterr().err.strip().splitlines() == lines


def test_info_escapes_control_characters_from_the_file(tmp_path):
    """Names from a file (mesh, clip, targets) cannot drive the terminal: ESC and newlines come out escaped."""
    import json
    import shutil

    src = asset(*CUBE)
    doc = json.loads(src.read_text())
    doc["meshes"][0]["name"] = "Cube\x1b[31mRED"
    doc["meshes"][0]["extras"] = {"targetNames": ["smile\x1b]0;pwned\x07", "frown\nfake line"]}
    doc["animations"][0]["name"] = "Sq\x1b[2Juare"
    shutil.copy(src.parent / doc["buffers"][0]["uri"], tmp_path / doc["buffers"][0]["uri"])
    (tmp_path / "evil.gltf").write_text(json.dumps(doc))
    r = vkmorph("info", tmp_path / "evil.gltf")
    assert r.returncode == 0, r.stderr
    assert "\x1b" not in r.stdout and "\x07" not in r.stdout and "fake line" not in r.stdout.splitlines()[-1]
    assert "\\x1b[31mRED" in r.stdout
    assert not any(line.startswith("fake line") for line in r.stdout.splitlines())


def test_version_and_python_m(tmp_path):
    r = subprocess.run([sys.executable, "-m", "vkmorph", "--version"], capture_output=True, text=True, cwd=ROOT)
    import vkmorph as vm

    assert r.returncode == 0 and r.stdout.strip() == f"vkmorph {vm.__version__}"


def test_make_demo_quotes_a_file_with_spaces():
    """``make demo FILE="my models/a b.glb"`` passes the path as ONE argument (dry run: the command only)."""
    import shutil

    if not shutil.which("make"):
        pytest.skip("make not installed")
    r = subprocess.run(["make", "-n", "demo", "FILE=my models/a b.glb", "ARGS=--frames 3"], capture_output=True,
                       text=True, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    line = next(s for s in r.stdout.splitlines() if "vkmorph demo" in s)
    import shlex

    assert shlex.split(line)[-3:] == ["my models/a b.glb", "--frames", "3"]


def test_sigterm_in_the_middle_of_a_write_removes_the_temporary(tmp_path):
    """Deterministic: the CLI's SIGTERM handler fires while atomic_write is writing; nothing is left behind."""
    code = """if True:
        import os, signal, sys
        from vkmorph.app import cli
        from vkmorph.outputs import atomic_write
        signal.signal(signal.SIGTERM, cli._on_sigterm)
        def write(f):
            f.write(b"partial" * 1000)
            os.kill(os.getpid(), signal.SIGTERM)
            f.write(b"never")
        try:
            atomic_write(sys.argv[1], write)
        except cli._Terminated:
            sys.exit(143)
    """
    r = subprocess.run([sys.executable, "-c", code, str(tmp_path / "out.png")], capture_output=True, text=True,
                       cwd=ROOT, timeout=900)
    assert r.returncode == 143, r.stderr
    assert os.listdir(tmp_path) == []


def test_bench_plot_without_matplotlib_refused_before_anything_runs(tmp_path):
    code = """if True:
        import sys
        sys.modules["matplotlib"] = None          # as if not installed
        from vkmorph.app import cli
        sys.exit(cli.main(["bench", "--quick", "--json", sys.argv[1] + "/b.json", "--plot", sys.argv[1] + "/p.png"]))
    """
    r = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, cwd=ROOT,
                       timeout=900)
    assert_one_line_error(r, "needs matplotlib")
    assert os.listdir(tmp_path) == []


def test_a_failing_command_prints_one_line_not_its_files_warnings_first(tmp_path):
    """A file's warnings (here: an unknown extension, warned when the load starts) are dropped when the load then
    fails (a node index out of range), and when the command fails after a good load (an unknown target)."""
    import json

    from tests.asset.gltf_build import write_gltf
    from tests.asset.twins import twin

    doc, binary = twin()
    doc["extensionsUsed"] = ["EXT_future"]
    good = write_gltf(tmp_path / "good.gltf", doc, binary, bin_name="m.bin")
    r = vkmorph("info", good)
    assert r.returncode == 0 and "extension EXT_future" in r.stderr, r.stderr   # on success: the warning
    bad = json.loads(good.read_text())
    bad["scenes"][0]["nodes"].append(99)
    (tmp_path / "bad.gltf").write_text(json.dumps(bad))
    assert_one_line_error(vkmorph("info", tmp_path / "bad.gltf"), "nodes")
    out = tmp_path / "o.npz"
    assert_one_line_error(vkmorph("morph", good, "--weight", "NoSuchTarget=1", "--out", out), "NoSuchTarget", out)


def test_sigterm_during_a_c_extension_import_is_still_terminated(capsys, monkeypatch):
    """SIGTERM while numpy's C extension imports: CPython replaces the handler's exception with "ImportError:
    PyCapsule_Import could not import module" (seen once under load as an "internal error", exit 1)."""
    from vkmorph.app import cli

    def imports(args):
        try:
            cli._on_sigterm(15, None)
        except BaseException:   # what PyCapsule_Import does with any failure of the import it runs
            raise ImportError('PyCapsule_Import could not import module "datetime"') from None
        return 0

    monkeypatch.setattr(cli, "cmd_info", imports)
    assert cli.main(["info", "x.glb"]) == 143
    assert capsys.readouterr().err.strip().splitlines() == ["vkmorph info: terminated"]
    monkeypatch.setattr(cli, "cmd_info", lambda args: 1 / 0)   # a real internal error stays one
    assert cli.main(["info", "x.glb"]) == 1
    assert "internal error: ZeroDivisionError" in capsys.readouterr().err
