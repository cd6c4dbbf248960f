"""Packaging and release: the release workflow (tag -> build -> twine check -> trusted
publishing), the CI step that builds and checks the distributions, and the docs site."""

from __future__ import annotations

import importlib.util
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parent.parent
RELEASE = REPO / ".github" / "workflows" / "release.yml"
CI = (REPO / ".ci" / "run").read_text(encoding="utf-8")


def _pyproject() -> dict:
    if sys.version_info >= (3, 11):
        import tomllib
    else:
        import tomli as tomllib
    return tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))


def test_release_workflow_matches_githubs_schema():
    check_jsonschema = shutil.which("check-jsonschema")
    if check_jsonschema is None:
        pytest.skip("check-jsonschema is not installed")
    proc = subprocess.run([check_jsonschema, "--builtin-schema", "vendor.github-workflows", str(RELEASE)],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_release_builds_checks_and_publishes_with_trusted_publishing_on_a_version_tag():
    workflow = yaml.safe_load(RELEASE.read_text(encoding="utf-8"))
    trigger = workflow[True] if True in workflow else workflow["on"]  # YAML 1.1 reads `on` as true
    assert trigger == {"push": {"tags": ["v*"]}}
    assert workflow["permissions"] == {"contents": "read"}  # id-token only where it is needed
    build, publish = workflow["jobs"]["build"], workflow["jobs"]["publish"]
    runs = [step.get("run", "") for step in build["steps"]]
    assert any("python -m build" in run for run in runs)
    assert any("twine check" in run and "dist/*" in run for run in runs)
    assert publish["needs"] == "build"
    assert publish["environment"]["name"] == "pypi"
    assert publish["permissions"] == {"id-token": "write"}
    uses = [step.get("uses", "") for step in publish["steps"]]
    assert uses[-1].startswith("pypa/gh-action-pypi-publish@")
    assert not any("password" in (step.get("with") or {}) for step in publish["steps"])  # no API token


def test_ci_builds_the_distributions_once_and_checks_them_with_twine():
    assert "python -m build" in CI and 'twine check --strict "$TORCHLINT_TEST_DIST"/*' in CI
    # ...before the suite, whose wheel test installs that wheel instead of building another.
    assert CI.index("export TORCHLINT_TEST_DIST") < CI.index("bash scripts/test.sh")
    assert 'os.environ.get("TORCHLINT_TEST_DIST")' in (REPO / "tests" / "test_packaging.py").read_text()


def test_changelog_has_an_entry_for_the_release_workflow():
    text = (REPO / "CHANGELOG.md").read_text(encoding="utf-8")
    assert "release.yml" in text and "--watch" in text


def test_docs_site_is_built_strictly_in_ci_from_the_readme_and_the_rule_docs():
    config = yaml.safe_load((REPO / "mkdocs.yml").read_text(encoding="utf-8"))
    assert config["theme"]["name"] == "material"
    assert "--strict" in re.search(r"mkdocs build[^\n]*", CI).group(0)
    extras = _pyproject()["project"]["optional-dependencies"]
    assert any(dep.startswith("mkdocs-material") for dep in extras["docs"])
    pytest.importorskip("mkdocs")
    spec = importlib.util.spec_from_file_location("torchlint_docs_hooks", REPO / "docs" / "hooks.py")
    hooks = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hooks)
    pages = hooks.site_pages()
    assert pages[0] == "README.md"  # the home page
    assert {f"rules_docs/{p.name}" for p in (REPO / "rules_docs").glob("*.md")} <= set(pages)


def test_every_relative_link_of_the_site_points_at_a_file_of_the_repository():
    # mkdocs.yml leaves links to repository files that are not pages as they are: they must exist.
    for page in [REPO / "README.md", *sorted((REPO / "rules_docs").glob("*.md"))]:
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", page.read_text(encoding="utf-8")):
            if "://" in target or target.startswith("mailto:"):
                continue
            assert (page.parent / target).exists(), f"{page.name}: {target}"
