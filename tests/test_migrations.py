"""The TL9xx migration rules: the `torch-version` setting, and every claim their messages and
the deprecated-API table make about torch, re-checked on the installed torch."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

from conftest import FIXTURES
from test_cli import write
from torchlint.analysis.torch_versions import deprecated_apis
from torchlint.linter import FileTask, lint_task


def _codes_at(path, code: str, version: str) -> list[int]:
    task = FileTask(path=str(path), display=str(path), codes=frozenset({code}),
                    options=((code, (("torch-version", version),)),))
    return [f.row for f in lint_task(task).findings]


def test_torch_version_decides_what_is_deprecated():
    fixture = FIXTURES / "TL901" / "torch_version.py"
    assert _codes_at(fixture, "TL901", "2.4") == [6, 7]
    assert _codes_at(fixture, "TL901", "2.2") == [6]  # sdp_kernel: deprecated in 2.3
    assert _codes_at(fixture, "TL901", "2.0") == []  # weight_norm: deprecated in 2.1
    amp = FIXTURES / "TL906" / "aliased.py"
    assert _codes_at(amp, "TL906", "2.4") and not _codes_at(amp, "TL906", "2.3")
    ckpt = FIXTURES / "TL903" / "aliased.py"
    assert _codes_at(ckpt, "TL903", "2.1") and not _codes_at(ckpt, "TL903", "2.0")


def test_rows_off_by_default_are_reported_with_all_deprecations(tmp_path, run_cli):
    fixture = FIXTURES / "TL901" / "derived.py"
    rows = [n for n, line in enumerate(fixture.read_text().splitlines(), 1) if "# all-deprecations: TL901" in line]
    [six] = [n for n, line in enumerate(fixture.read_text().splitlines(), 1) if "# expect: TL901" in line]
    assert len(rows) == 8
    assert _codes_at(fixture, "TL901", "2.4") == [six]
    task = FileTask(path=str(fixture), display=str(fixture), codes=frozenset({"TL901"}),
                    options=(("TL901", (("torch-version", "2.4"), ("all-deprecations", True))),))
    assert [f.row for f in lint_task(task).findings] == sorted([six, *rows])
    # From the config, as a user sets it; a wrong type is a config error (exit 2).
    write(tmp_path, "a.py", "import torch\ngx, gy = torch.meshgrid(a, b)\n")
    assert run_cli("check", "--no-cache", "--select", "TL901", "a.py")[0] == 0
    write(tmp_path, "pyproject.toml", '[tool.torchlint.options.TL901]\nall-deprecations = true\n')
    assert run_cli("check", "--no-cache", "--select", "TL901", "a.py")[0] == 1
    write(tmp_path, "pyproject.toml", '[tool.torchlint.options.TL901]\nall-deprecations = "yes"\n')
    assert run_cli("check", "--no-cache", "--select", "TL901", "a.py")[0] == 2


def test_torch_version_from_config_and_cli(tmp_path, run_cli):
    write(tmp_path, "a.py", "import torch\nw = torch.nn.utils.weight_norm(layer)\n")
    rc, out, _ = run_cli("check", "--no-cache", "--select", "TL901", "--output-format", "json", "a.py")
    assert rc == 1 and len(json.loads(out)) == 1  # the default, 2.4
    write(tmp_path, "pyproject.toml", '[tool.torchlint]\ntorch-version = "2.0"\n')
    assert run_cli("check", "--no-cache", "--select", "TL901", "a.py")[0] == 0
    assert run_cli("check", "--no-cache", "--select", "TL901", "--torch-version", "2.10", "a.py")[0] == 1


def test_every_table_row_is_complete():
    for api in deprecated_apis().values():
        assert api.deprecated and api.on_current and api.use and api.source, api.name
        assert api.fix in ("", "rename", "single-argument", "upsample-nearest", "upsample-bilinear",
                           "indexing-ij"), api.name
        assert api.fix or api.why, f"{api.name}: say why there is no drop-in replacement"
        assert api.on_current.startswith(("raises ", "warns ", "works; documented")), api.name
        assert api.kind in ("call", "module") and (api.kind == "call" or not api.unless_keyword), api.name
        assert bool(api.removed) == api.on_current.startswith("raises"), api.name


# -- the claims, on the installed torch ---------------------------------------------------

# -- the claims, on the installed torch (run in a child process: see migration_claims.py) --

_HAVE_TORCH = importlib.util.find_spec("torch") is not None


@pytest.fixture(scope="module")
def claims() -> dict:
    here = Path(__file__).resolve().parent
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(here.parent), str(here), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run([sys.executable, str(here / "migration_claims.py")], capture_output=True, text=True,
                          env=env, cwd=here, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.torch
@pytest.mark.skipif(not _HAVE_TORCH, reason="needs torch")
@pytest.mark.parametrize("name", sorted(deprecated_apis()))
def test_table_matches_the_installed_torch(name, claims):
    assert claims[name] is None, claims[name]


@pytest.mark.torch
@pytest.mark.skipif(not _HAVE_TORCH, reason="needs torch")
def test_the_table_tl901_reads_is_the_derivation_on_the_installed_torch():
    # A fresh process: some torch warnings fire once per process, so the derivation must be
    # the first to call each API.
    root = Path(__file__).resolve().parent.parent
    proc = subprocess.run([sys.executable, str(root / "scripts" / "derive_deprecations.py"), "--check"],
                          capture_output=True, text=True, cwd=root, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]


def test_the_table_is_generated_from_the_candidates():
    """Without torch: every row of the table comes from a candidate, with that candidate's
    hand-kept facts, and the table says it is generated (edits go to the candidates)."""
    root = Path(__file__).resolve().parent.parent
    table = (root / "torchlint" / "data" / "deprecated_api.toml").read_text(encoding="utf-8")
    assert "Generated by scripts/derive_deprecations.py" in table
    with open(root / "scripts" / "deprecation_candidates.toml", "rb") as fh:
        candidates = {row["name"]: row for row in tomllib.load(fh)["symbol"]}
    for api in deprecated_apis().values():
        row = candidates[api.name]
        assert (api.deprecated, api.removed, api.use, api.fix, api.why, api.source) == (
            row["deprecated"], row["removed"], row["use"], row["fix"], row["why"], row["source"]), api.name
    wanted = {"torch._six", "torch.set_default_tensor_type", "torch.meshgrid"}  # what torch 2.13 warns about
    assert wanted <= set(deprecated_apis())


@pytest.mark.torch
@pytest.mark.skipif(not _HAVE_TORCH, reason="needs torch")
def test_message_claims_of_the_other_migration_rules(claims):
    assert claims["other claims"] is None, claims["other claims"]
