"""The Khronos glTF-Validator (npm ``gltf-validator``) run on a file through Node.js: its report as a dict.

The package is installed once with npm into ``build/gltf-validator`` (ignored by git); tests skip, with the
reason, only where Node.js / npm is missing or the npm registry cannot be reached.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.helpers import ROOT

HOME = ROOT / "build" / "gltf-validator"
_SCRIPT = r"""
const fs = require('fs'), path = require('path');
const validator = require(path.join(process.argv[1], 'node_modules', 'gltf-validator'));
const file = process.argv[2];
validator.validateBytes(new Uint8Array(fs.readFileSync(file)), {
  uri: path.basename(file), maxIssues: 1000,
  externalResourceFunction: (uri) => new Promise((ok, fail) => {
    fs.readFile(path.resolve(path.dirname(file), decodeURIComponent(uri)),
                (err, data) => err ? fail(err.toString()) : ok(new Uint8Array(data)));
  }),
}).then((report) => process.stdout.write(JSON.stringify(report)))
  .catch((err) => { process.stderr.write(String(err) + '\n'); process.exit(2); });
"""


def _installed() -> bool:
    return (HOME / "node_modules" / "gltf-validator" / "package.json").exists()


def ensure_validator() -> None:
    """Skip (with why) where Node.js or npm is missing or the package cannot be installed."""
    if shutil.which("node") is None:
        pytest.skip("Node.js (node) is not installed: the Khronos glTF-Validator runs on it")
    if _installed():
        return
    if shutil.which("npm") is None:
        pytest.skip("npm is not installed: it installs the Khronos glTF-Validator (npm gltf-validator)")
    HOME.mkdir(parents=True, exist_ok=True)
    r = subprocess.run(["npm", "install", "--prefix", str(HOME), "--no-audit", "--no-fund", "gltf-validator"],
                       capture_output=True, text=True, timeout=600)
    if r.returncode != 0 or not _installed():
        pytest.skip(f"npm could not install gltf-validator: {(r.stderr or r.stdout).strip().splitlines()[-1:]}")


def validate(path: Path) -> dict:
    """The validator's report of ``path`` (``report["issues"]["numErrors"]``, ``["messages"]``)."""
    ensure_validator()
    r = subprocess.run(["node", "-e", _SCRIPT, str(HOME), str(path)], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, f"gltf-validator failed on {path}: {r.stderr.strip()}"
    return json.loads(r.stdout)


def errors(report: dict) -> list[str]:
    """``code pointer: message`` of every error in a report."""
    return [f"{m['code']} {m.get('pointer', '')}: {m['message']}" for m in report["issues"]["messages"]
            if m["severity"] == 0]
