"""The torch floor a project declares: its own `torch>=X.Y` requirement, used as
`torch-version` when that is unset, so a rule never names a hazard "before torch 2.6" in a
project that cannot run on it. Read from, in order: `pyproject.toml` (`[project]
dependencies`), `setup.cfg` (`[options] install_requires`), `requirements*.txt` at the root."""

from __future__ import annotations

import os
import re

from torchlint import settings_reads
from torchlint.safe_io import RefusedFile, read_regular_file

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Iterable, Optional

_REQUIREMENT = r"^\s*torch\s*(\[[^\]]*\])?\s*(?P<spec>[^;#]*)"  # compiled when first used (by `re`)
_FLOOR = r"(>=|==|~=)\s*(?P<major>[0-9]+)\.(?P<minor>[0-9]+)"
_MAX_BYTES = 1 << 20  # a requirements file or setup.cfg larger than this is not read


def floor_of(requirement: str) -> Optional[str]:
    """"2.7" for `torch>=2.7`, `torch==2.7.1`, `torch~=2.7`, `torch>=2.7,<3`; None otherwise."""
    m = re.match(_REQUIREMENT, requirement)
    if m is None:
        return None
    spec = m.group("spec").strip()
    if spec[:1].isalnum() or spec[:1] in ("-", "_", "."):
        return None  # `torchvision>=0.20`, `torch-geometric`: another package
    found = re.search(_FLOOR, spec)
    return f"{int(found.group('major'))}.{int(found.group('minor'))}" if found else None


def _first_floor(requirements: Iterable[object]) -> Optional[str]:
    floors = [f for f in (floor_of(r) for r in requirements if isinstance(r, str)) if f is not None]
    return floors[0] if floors else None


def _inside(path: str, root: str) -> bool:
    """A file of the project itself: a link out of it is never read (see config._config_in)."""
    return os.path.isfile(path) and (not os.path.islink(path)
                                     or os.path.dirname(os.path.realpath(path)) == os.path.realpath(root))


def _text(path: str) -> Optional[str]:
    try:
        data = read_regular_file(path, _MAX_BYTES)
        settings_reads.note_read(path, data)
        return data.decode("utf-8")
    except (RefusedFile, OSError, UnicodeDecodeError):
        return None


def _from_pyproject(root: str, load: Any) -> Optional[str]:
    path = os.path.join(root, "pyproject.toml")
    if not _inside(path, root):
        return None
    try:
        data = load(path)
    except Exception:  # a broken pyproject is reported by the config loader, not here
        return None
    project = data.get("project") if isinstance(data, dict) else None
    deps = project.get("dependencies") if isinstance(project, dict) else None
    return _first_floor(deps) if isinstance(deps, list) else None


def _from_setup_cfg(root: str) -> Optional[str]:
    path = os.path.join(root, "setup.cfg")
    text = _text(path) if _inside(path, root) else None
    if text is None:
        return None
    import configparser  # only for a project that has a setup.cfg

    parser = configparser.ConfigParser(interpolation=None)
    try:
        parser.read_string(text)
    except configparser.Error:
        return None
    return _first_floor(parser.get("options", "install_requires", fallback="").splitlines())


def _from_requirements(root: str) -> Optional[str]:
    try:
        names = settings_reads.requirements_names(root)
    except OSError:
        return None
    settings_reads.note_listing(root, names)
    for path in (os.path.join(root, name) for name in names):
        text = _text(path) if _inside(path, root) else None
        found = _first_floor(text.splitlines()) if text is not None else None
        if found is not None:
            return found
    return None


def project_torch_floor(root: str, load: Any) -> Optional[str]:
    """The floor from the project's own requirements under `root` (`load`: config.load_toml,
    bounded, regular files only); None when none names one or none can be read."""
    return _from_pyproject(root, load) or _from_setup_cfg(root) or _from_requirements(root)
