"""The torch floor a project declares: the `torch>=X.Y` requirement in its own
pyproject.toml (`[project] dependencies`), used as `torch-version` when that is unset, so a
rule never names a hazard "before torch 2.6" in a project that cannot run on it."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any, Optional

_REQUIREMENT = re.compile(r"^\s*torch\s*(\[[^\]]*\])?\s*(?P<spec>[^;]*)")
_FLOOR = re.compile(r"(>=|==|~=)\s*(?P<major>[0-9]+)\.(?P<minor>[0-9]+)")


def floor_of(requirement: str) -> Optional[str]:
    """"2.7" for `torch>=2.7`, `torch==2.7.1`, `torch~=2.7`, `torch>=2.7,<3`; None otherwise."""
    m = _REQUIREMENT.match(requirement)
    if m is None:
        return None
    spec = m.group("spec").strip()
    if spec[:1].isalnum() or spec[:1] in ("-", "_", "."):
        return None  # `torchvision>=0.20`, `torch-geometric`: another package
    found = _FLOOR.search(spec)
    return f"{int(found.group('major'))}.{int(found.group('minor'))}" if found else None


def project_torch_floor(root: Path, load: Any) -> Optional[str]:
    """The floor from `root/pyproject.toml`, read with `load` (config.load_toml: bounded,
    regular files only); None when there is none or the file cannot be read."""
    path = root / "pyproject.toml"
    if not path.is_file():
        return None
    if path.is_symlink() and os.path.dirname(os.path.realpath(path)) != os.path.realpath(root):
        return None  # a link out of the project is never read (see config._config_in)
    try:
        data = load(path)
    except Exception:  # a broken pyproject is reported by the config loader, not here
        return None
    project = data.get("project") if isinstance(data, dict) else None
    deps = project.get("dependencies") if isinstance(project, dict) else None
    if not isinstance(deps, list):
        return None
    floors = [f for f in (floor_of(d) for d in deps if isinstance(d, str)) if f is not None]
    return floors[0] if floors else None
