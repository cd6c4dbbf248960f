"""The console script imports torchlint's modules from one file (torchlint/code_bundle.py): a
run after the first is served from it, with the same report; an edited module is imported
from its source and the bundle catches up; a damaged, foreign or unwritable bundle changes
nothing but speed. Each test runs a copy of the package, so the bundle it writes is its own."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import torchlint

# Runs the console script's main() and then says, on stderr, which torchlint modules the
# bundle served and what `inspect` and `importlib.resources` see of one of them.
_DRIVER = textwrap.dedent("""
    import atexit, json, sys

    def report():
        import importlib.resources, inspect
        served = sorted(n for n, m in sys.modules.items() if n.startswith("torchlint")
                        and type(getattr(m, "__loader__", None)).__name__ == "_BundledLoader")
        checker = sys.modules.get("torchlint.checker")
        sys.stderr.write("REPORT " + json.dumps({
            "served": served,
            "checker_file": getattr(checker, "__file__", None),
            "source_of_awake": "def awake" in inspect.getsource(checker.awake) if checker else None,
            "data_readable": importlib.resources.files("torchlint").joinpath("__init__.py").is_file(),
            "marker": getattr(sys.modules.get("torchlint.safe_io"), "MARKER", None),
        }) + "\\n")

    atexit.register(report)
    sys.argv = ["torchlint", *sys.argv[1:]]
    import os
    import torchlint.code_bundle as bundle
    # Sources a test just wrote are "racy" for 2 s; a test sets the window (0: none) to go on.
    bundle._RACY_NS = int(os.environ.get("TEST_BUNDLE_RACY_NS", bundle._RACY_NS))
    from torchlint.entry import main
    main()
""")

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "train_ddp.py"  # five findings


@pytest.fixture
def package(tmp_path: Path) -> Path:
    """A copy of the torchlint package with no compiled files, and a file to check."""
    shutil.copytree(Path(torchlint.__file__).parent, tmp_path / "site" / "torchlint",
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    (tmp_path / "work").mkdir()
    shutil.copy(EXAMPLE, tmp_path / "work" / "example.py")
    (tmp_path / "driver.py").write_text(_DRIVER)
    return tmp_path


def run(root: Path, *, write_bytecode: bool = True, site: Path | None = None, racy_ns: int = 0) -> tuple[str, dict]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["TEST_BUNDLE_RACY_NS"] = str(racy_ns)
    env.update(PYTHONPATH=str(site or root / "site"), XDG_CACHE_HOME=str(root / "xdg"), TORCHLINT_BENCH_RUN=os.urandom(4).hex())
    if not write_bytecode:
        env["PYTHONDONTWRITEBYTECODE"] = "1"
    done = subprocess.run([sys.executable, str(root / "driver.py"), "check", "example.py", "--no-cache"],
                          cwd=root / "work", env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 1, done.stderr  # the example has a finding
    report = [line for line in done.stderr.splitlines() if line.startswith("REPORT ")]
    assert report, done.stderr
    return done.stdout, json.loads(report[-1][len("REPORT "):])


def bundle_of(root: Path) -> Path:
    return root / "site" / "torchlint" / "__pycache__" / f"bundle.{sys.implementation.cache_tag}.bin"


def test_a_second_run_is_served_from_the_bundle_with_the_same_report(package):
    first, seen = run(package)
    assert seen["served"] == [] and bundle_of(package).is_file()
    second, seen = run(package)
    assert second == first and "TL" in second
    assert "torchlint.checker" in seen["served"] and "torchlint.config" in seen["served"]
    assert len(seen["served"]) > 30
    assert seen["checker_file"] == str(package / "site" / "torchlint" / "checker.py")
    assert seen["source_of_awake"] and seen["data_readable"]  # the generator and resources still work


def test_an_edited_module_is_imported_from_its_source_and_the_bundle_catches_up(package):
    run(package)
    safe_io = package / "site" / "torchlint" / "safe_io.py"
    safe_io.write_text(safe_io.read_text() + "\nMARKER = 'edited'\n")
    os.utime(safe_io, ns=(safe_io.stat().st_atime_ns, safe_io.stat().st_mtime_ns + 2_000_000_000))
    _, seen = run(package)
    assert seen["marker"] == "edited" and "torchlint.safe_io" not in seen["served"]
    _, seen = run(package)
    assert seen["marker"] == "edited" and "torchlint.safe_io" in seen["served"]


@pytest.mark.parametrize("damage", ["truncated", "garbage", "empty"])
def test_a_damaged_bundle_is_ignored(package, damage):
    expected, _ = run(package)
    bundle = bundle_of(package)
    data = bundle.read_bytes()
    bundle.write_bytes({"truncated": data[:len(data) // 2], "garbage": data[:4] + b"\xff" * 2000,
                        "empty": b""}[damage])
    report, seen = run(package, write_bytecode=False)
    assert report == expected and seen["served"] == []


def test_a_bundle_of_another_directory_is_not_served(package, tmp_path):
    expected, _ = run(package)
    moved = tmp_path / "moved"
    shutil.copytree(package, moved)  # the bundle records the directory it was made for
    report, seen = run(moved, write_bytecode=False)
    assert report == expected and seen["served"] == []
    assert seen["checker_file"] == str(moved / "site" / "torchlint" / "checker.py")


def test_an_optimized_run_keeps_its_own_bundle(package):
    """Under -O the .pyc files drop asserts: their bodies must never serve a plain run."""
    run(package)
    plain = bundle_of(package).read_bytes()
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env.update(PYTHONPATH=str(package / "site"), XDG_CACHE_HOME=str(package / "xdg"), TEST_BUNDLE_RACY_NS="0")
    for _ in range(2):
        subprocess.run([sys.executable, "-O", str(package / "driver.py"), "check", "example.py", "--no-cache"],
                       cwd=package / "work", env=env, capture_output=True, timeout=120)
    assert bundle_of(package).read_bytes() == plain
    assert bundle_of(package).with_name(bundle_of(package).name.replace(".bin", ".opt-1.bin")).is_file()


def test_no_bundle_is_written_where_bytecode_is_not(package):
    run(package, write_bytecode=False)
    assert not bundle_of(package).exists()


def _set_marker(package: Path, value: str) -> Path:
    """`MARKER = value` at the end of safe_io.py (imported after the bundle is installed)."""
    safe_io = package / "site" / "torchlint" / "safe_io.py"
    text = safe_io.read_text()
    text = text[:text.index("\nMARKER = ")] if "\nMARKER = " in text else text
    safe_io.write_text(text + f"\nMARKER = {value!r}\n")
    return safe_io


def test_a_same_size_edit_under_the_old_mtime_is_seen_once_the_pyc_is_gone(package):
    """`cp -p` or `touch -r` over an edit keeps size and mtime: the ctime still moves."""
    safe_io = _set_marker(package, "aaaa")
    run(package)
    _, seen = run(package)
    assert seen["marker"] == "aaaa" and "torchlint.safe_io" in seen["served"]
    before = safe_io.stat()
    _set_marker(package, "bbbb")
    os.utime(safe_io, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert safe_io.stat().st_size == before.st_size
    for pyc in (package / "site").rglob("safe_io.*.pyc"):
        pyc.unlink()
    _, seen = run(package)
    assert seen["marker"] == "bbbb" and "torchlint.safe_io" not in seen["served"]


def test_a_package_directory_beside_a_served_module_takes_precedence(package):
    """As in a plain import, `text/__init__.py` wins over `text.py` once it appears."""
    run(package)
    _, seen = run(package)
    assert "torchlint.output.text" in seen["served"]
    text = package / "site" / "torchlint" / "output" / "text.py"
    (text.parent / "text").mkdir()
    (text.parent / "text" / "__init__.py").write_text(text.read_text().replace("note: `torchlint rule", "NOTE: `torchlint rule"))
    report, seen = run(package)
    assert "NOTE: `torchlint rule" in report and "torchlint.output.text" not in seen["served"]


def test_hash_based_pycs_fill_the_bundle(package):
    """Distro builds and pip under SOURCE_DATE_EPOCH write checked-hash .pyc files."""
    subprocess.run([sys.executable, "-m", "compileall", "-q", "--invalidation-mode", "checked-hash",
                    str(package / "site" / "torchlint")], check=True)
    run(package)
    _, seen = run(package)
    assert len(seen["served"]) > 30


def _craft(package: Path, change) -> None:
    """Rewrite the bundle's index through `change(index) -> index`, keeping its bodies."""
    import marshal

    bundle = bundle_of(package)
    data = bundle.read_bytes()
    start = 8 + int.from_bytes(data[4:8], "little")
    magic, root, length = marshal.loads(data[8:start])
    index = change(marshal.loads(data[start:start + length]))
    packed = marshal.dumps(index)
    head = marshal.dumps((magic, root, len(packed)))
    bundle.write_bytes(data[:4] + len(head).to_bytes(4, "little") + head + packed + data[start + length:])


@pytest.mark.parametrize("damage", ["short entry", "path not a string", "body not code"])
def test_a_bundle_whose_entries_are_damaged_is_ignored(package, damage):
    import marshal

    expected, _ = run(package)
    if damage == "body not code":  # a body that unmarshals to a number, in place of checker's
        def change(index):
            offset, length, *rest = index["torchlint.checker"]
            data = bundle_of(package).read_bytes()
            body = marshal.dumps(12345)
            start = len(data) - sum(e[1] for e in index.values())  # the bodies end the file
            bundle_of(package).write_bytes(data[:start + offset] + body + b"\0" * (length - len(body))
                                           + data[start + offset + length:])
            return index
    else:
        def change(index):
            entry = index["torchlint.checker"]
            index["torchlint.checker"] = entry[:4] if damage == "short entry" else (*entry[:3], 7, entry[4])
            return index
    _craft(package, change)
    report, seen = run(package, write_bytecode=False)
    assert report == expected  # no traceback: the module comes from its .pyc
    assert damage == "body not code" or "torchlint.checker" not in seen["served"]


def test_a_fifo_at_the_bundle_path_is_not_waited_on(package):
    expected, _ = run(package)
    bundle_of(package).unlink()
    os.mkfifo(bundle_of(package))
    report, seen = run(package, write_bytecode=False)  # run() times out after 120 s
    assert report == expected and seen["served"] == []


def test_a_same_size_edit_within_the_second_is_never_bundled_from_the_old_pyc(package):
    """Python's own check (mtime seconds, size) passes a .pyc compiled before a same-size edit
    made within the same second (`cp -p`, two checkouts); bundled, that body would outlive the
    .pyc. The bundle compiles from the source instead."""
    safe_io = _set_marker(package, "aaaa")
    run(package)
    before = safe_io.stat()
    _set_marker(package, "bbbb")
    os.utime(safe_io, ns=(before.st_atime_ns, before.st_mtime_ns))  # the old .pyc still "matches"
    run(package)  # imported from that .pyc, as Python would
    for pyc in (package / "site").rglob("safe_io.*.pyc"):
        pyc.unlink()
    _, seen = run(package)
    assert seen["marker"] == "bbbb"
    _, seen = run(package)
    assert seen["marker"] == "bbbb" and "torchlint.safe_io" in seen["served"]


def test_a_package_made_in_two_steps_beside_a_module_is_seen(package):
    text = package / "site" / "torchlint" / "output" / "text.py"
    run(package)
    (text.parent / "text").mkdir()  # first the directory (a namespace package loses to text.py) ...
    run(package)
    run(package)
    (text.parent / "text" / "__init__.py").write_text(text.read_text().replace("note: `torchlint rule", "NOTE: `torchlint rule"))
    report, _ = run(package)  # ... then its __init__.py, which wins in a plain import
    assert "NOTE: `torchlint rule" in report


def test_a_nul_in_an_entrys_path_is_ignored(package):
    expected, _ = run(package)

    def change(index):
        entry = index["torchlint.checker"]
        index["torchlint.checker"] = (*entry[:3], "check\0er.py", entry[4])
        return index

    _craft(package, change)
    report, seen = run(package, write_bytecode=False)
    assert report == expected and "torchlint.checker" not in seen["served"]


def test_one_bundle_serves_every_spelling_of_the_install_path(package):
    linked = package / "linked-site"
    linked.symlink_to(package / "site")
    run(package)
    run(package)
    inode = bundle_of(package).stat().st_ino
    for site in (linked, package / "site", linked):
        _, seen = run(package, site=site)
        assert len(seen["served"]) > 30 and seen["checker_file"] == str(site / "torchlint" / "checker.py")
    assert bundle_of(package).stat().st_ino == inode  # never rewritten


def test_a_source_modified_in_the_last_seconds_waits_for_a_later_run(package):
    """An edit in the same timestamp tick as the last one would keep the stamp: a source this
    recent is imported the usual way and bundled by a later run (git's racy-clean rule)."""
    _set_marker(package, "recent")
    _, seen = run(package, racy_ns=2 * 10**9)
    _, seen = run(package, racy_ns=2 * 10**9)
    assert seen["marker"] == "recent" and "torchlint.safe_io" not in seen["served"]
    assert "torchlint.checker" not in seen["served"]  # the whole copy was made just now


def test_a_moved_tree_reports_its_own_paths_in_tracebacks(package, tmp_path):
    """Code objects carry the file they were compiled from: served from a bundle made before
    the move, they name the new place, as a .pyc's do (`_imp._fix_co_filename`)."""
    run(package)
    moved = tmp_path / "moved"
    shutil.copytree(package, moved)
    run(moved)  # the bundle records its directory: this run rebuilds it for the new place
    probe = moved / "probe.py"
    probe.write_text(textwrap.dedent("""
        import os
        import torchlint.code_bundle as bundle
        bundle.install(os.path.dirname(bundle.__file__))  # as the console script does
        import torchlint.safe_io as safe_io
        print(type(safe_io.__loader__).__name__, safe_io.is_within.__code__.co_filename)
    """))
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPATH"] = str(moved / "site")
    done = subprocess.run([sys.executable, str(probe)], capture_output=True, text=True, env=env, timeout=60)
    loader, filename = done.stdout.split()
    assert loader == "_BundledLoader" and filename == str(moved / "site" / "torchlint" / "safe_io.py"), done.stderr
