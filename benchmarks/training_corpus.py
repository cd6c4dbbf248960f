"""Corpora of training-heavy PyTorch code and per-rule finding counts on them: `--set issue9`
(the default; the 24 repositories of issue 9: tutorials, training loops, notebooks, DDP
launchers), `--set heldout-2026-12` (54 projects the rules were never tuned on, pinned in
heldout_corpus.py, for issue 18's triage) or `--set ddp-2026-12` (30 held-out DDP training
projects, pinned in ddp_corpus.py, for TL308 and TL5xx). Model zoos (corpus.py) have few training loops.
Nothing here is committed: `prepare` assembles a set under --root.

    python benchmarks/training_corpus.py prepare --root /work/corpus --mirrors /work/.mirror
    python benchmarks/training_corpus.py report  --root /work/corpus [--per-project] [--json-dir DIR]
    python benchmarks/training_corpus.py prepare --set heldout-2026-12 --root /work/corpus2 --mirrors /work/.mirror
    python benchmarks/training_corpus.py report  --set heldout-2026-12 --root /work/corpus2 --json-dir DIR
    python benchmarks/training_corpus.py prepare --set ddp-2026-12 --root /work/corpus3 --mirrors /work/.mirror

`--json-dir` also writes report.json (the set, the torchlint commit, each project's pin and
category, files linted, lint wall and CPU time, TL000/TL020 findings, files `prepare` could not
bring, listed in `<project>/.corpus-skipped.json`): benchmarks/triage_packets.py reads it.

Sources, pinned in PROJECTS below:
- PyPI: pip downloads the sdist (the wheel where an sdist is absent or cannot be prepared),
  checks its sha256, and unpacks the listed subdirectories.
- GitHub: a snapshot at a pinned commit, extracted with `git archive` from a local git
  directory (bare or not) that you provide under --mirrors as `<owner>+<name>/repo`,
  `<owner>+<name>` or `<name>`. This script never clones: get one with
      git clone https://github.com/<owner>/<name> MIRRORS/<owner>+<name>
  (any clone that contains the pinned commit will do).

Layout under --root: `<project>/` holds exactly the linted subtree plus `.corpus-source.json`
(where it came from); notebooks are converted to `<project>/_nb/<path, / as __, other unsafe characters as _>.py`
(code cells concatenated, IPython magics and shell escapes commented out) so the linter,
which reads only .py, sees them. `report` runs the torchlint CLI found on sys.path (run it with
PYTHONPATH=<worktree> to measure a branch) twice: default rules and --select ALL, one job, on
one copy of each notebook (`--notebooks converted`, the default for `issue9`, or `native`, the
default for the held-out sets). Run it from the worktree: `-m` also finds a torchlint/ in the cwd.
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import json
import re
import resource
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import zipfile
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path

from ddp_corpus import DDP
from ddp_corpus import NAME as DDP_NAME
from heldout_corpus import HELDOUT
from heldout_corpus import NAME as HELDOUT_NAME

SOURCE_MARKER = ".corpus-source.json"
SKIPPED_MARKER = ".corpus-skipped.json"  # files `prepare` could not bring: blobs absent, broken notebooks
NOTEBOOK_DIR = "_nb"
SOURCE_SUFFIXES = (".py", ".ipynb")  # all the corpus keeps: the linter reads nothing else


@dataclass(frozen=True)
class PyPISource:
    requirement: str  # name==version
    filename: str  # the exact file pip fetches: an sdist, or a wheel where no sdist prepares
    sha256: str

    def describe(self) -> str:
        return f"pypi:{self.filename}"


@dataclass(frozen=True)
class GitHubSource:
    repo: str  # owner/name
    commit: str

    def describe(self) -> str:
        return f"github:{self.repo}@{self.commit}"


@dataclass(frozen=True)
class Project:
    name: str
    source: PyPISource | GitHubSource
    subdirs: tuple[str, ...] = ()  # paths inside the archive to keep; () keeps everything
    category: str = ""  # vision, llm, tutorial, rl, ... (the held-out set records it)


def _gh(name: str, repo: str, commit: str, *subdirs: str) -> Project:
    return Project(name, GitHubSource(repo, commit), subdirs)


PROJECTS: tuple[Project, ...] = (
    _gh("pytorch-examples", "pytorch/examples", "77f55b912142e11fcfdf5b530231fb9c52f181e8"),
    _gh("pytorch-gan", "eriklindernoren/PyTorch-GAN", "36d3c77e5ff20ebe0aeefd322326a134a279b93e"),
    _gh("yunjey-pytorch-tutorial", "yunjey/pytorch-tutorial", "0500d3df5a2a8080ccfccbc00aca0eacc21818db"),
    _gh("morvan-pytorch-tutorial", "MorvanZhou/PyTorch-Tutorial", "dbe154a9e56635e51c6b0c2ccea8ae36cfb585a7"),
    _gh("pytorch-zero-to-all", "hunkim/PyTorchZeroToAll", "e5a260fac0b4ff1e2ec434fc6f0d962ac97fc289"),
    _gh("pytorch-cifar", "kuangliu/pytorch-cifar", "49b7aa97b0c12fe0d4054e670403a16b6b834ddd"),
    _gh("pytorch-seq2seq", "bentrevett/pytorch-seq2seq", "b3cd54c72cd6e4e63f672d334c795b4fe744ef92"),
    _gh("pytorch-sentiment-analysis", "bentrevett/pytorch-sentiment-analysis",
        "329f654b2cfaed22fee432569ebd7a2674584f79"),
    _gh("udacity-deep-learning-v2", "udacity/deep-learning-v2-pytorch", "c9404fc86181fc3f0906b368697268257f348535"),
    _gh("rasbt-deeplearning-models", "rasbt/deeplearning-models", "18e046926551378cd691fd871dda0f21dcd272ab"),
    _gh("pytorch-book", "chenyuntc/pytorch-book", "688951721d11cd3f92440801e1b68b65ae2e439f"),
    _gh("rl-adventure", "higgsfield/RL-Adventure", "0f82b6922e8a1a8515fc4c84c28702e7caa226f1"),
    _gh("practical-pytorch", "spro/practical-pytorch", "c520c52e68e945d88fff563dba1c028b6ec0197b"),
    _gh("nanogpt", "karpathy/nanoGPT", "3adf61e154c3fe3fca428ad6bc3818b27a3b8291"),
    _gh("mingpt", "karpathy/minGPT", "37baab71b9abea1b76ab957409a1cc2fbfba8a26"),
    _gh("mae", "facebookresearch/mae", "efb2a8062c206524e35e47d04501ed4f544c0ae8"),
    _gh("dino", "facebookresearch/dino", "7c446df5b9f45747937fb0d72314eb9f7b66930a"),
    _gh("yolov5", "ultralytics/yolov5", "5081342f04fb287fc2e5f2b5a4e06752b7937b1c"),
    _gh("accelerate-examples", "huggingface/accelerate", "16cb6eb80dd9aa8b4df1a63ef57863e455d53b83", "examples"),
    _gh("lightning-examples", "Lightning-AI/pytorch-lightning", "7f0c3436cd3f6ad3753125672024fc415cbcb414",
        "examples"),
    # torchtune publishes wheels only; its recipes ship inside the wheel as a top-level package.
    Project("torchtune-recipes", PyPISource(
        "torchtune==0.6.1", "torchtune-0.6.1-py3-none-any.whl",
        "bcbc4ee9774b5c5829a5ff13df851e0b0e32416c018af8db53faa3472ac256e7"), ("recipes",)),
    # Library code only: tests/, docs/, dev/ and configs/ are not training code.
    _gh("detectron2", "facebookresearch/detectron2", "02b5c4e295e990042a714712c21dc79b731e8833",
        "detectron2", "tools", "projects", "demo"),
    # pip fails on mmengine's sdist while getting its build requirements: use the wheel.
    Project("mmengine", PyPISource(
        "mmengine==0.10.7", "mmengine-0.10.7-py3-none-any.whl",
        "262ac976a925562f78cd5fd14dd1bc9b680ed0aa81f0d85b723ef782f99c54ee"), ("mmengine",)),
    Project("fairseq", PyPISource(
        "fairseq==0.12.2", "fairseq-0.12.2.tar.gz",
        "34f1b18426bf3844714534162f065ab733e049597476daa35fffb4d06a92b524"),
        ("fairseq-0.12.2/fairseq", "fairseq-0.12.2/fairseq_cli")),
)
HELDOUT_PROJECTS = tuple(Project(name, GitHubSource(repo, commit), subdirs, category)
                         for name, repo, commit, category, subdirs in HELDOUT)
DDP_PROJECTS = tuple(Project(name, GitHubSource(repo, commit), subdirs, category)
                     for name, repo, commit, category, subdirs in DDP)
# set name -> (projects, how `report` lints notebooks by default)
SETS: dict[str, tuple[tuple[Project, ...], str]] = {
    "issue9": (PROJECTS, "converted"),
    HELDOUT_NAME: (HELDOUT_PROJECTS, "native"),
    DDP_NAME: (DDP_PROJECTS, "native"),
}


# --------------------------------------------------------------------------- notebooks

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")
_MAGIC = re.compile(r"[%!][A-Za-z_]")  # `%timeit`, `!pip`, not `% (a, b)` continuing a format


def _cell_to_python(lines: list[str]) -> tuple[list[str], bool]:
    """One code cell as Python lines (same count, so rows map back), and whether it parses.

    Column-0 lines starting with `%` or `!` are IPython escapes: commented out. An indented
    escape (inside an `if`) becomes `pass` so its block stays valid. A `%%` cell magic's body
    is not Python at all. A cell that still does not parse (exercise blanks, Python 2 prints)
    is commented out whole, so that one cell does not hide the rest of the notebook."""
    if lines and lines[0].startswith("%%"):
        return [f"# {line}" for line in lines], True
    out = []
    for line in lines:
        body = line.lstrip()
        indent = line[: len(line) - len(body)]
        if not indent and body.startswith(("%", "!")):
            out.append(f"# {line}")
        elif indent and _MAGIC.match(body):
            out.append(f"{indent}pass  # {body}")
        else:
            out.append(line)
    try:
        ast.parse("\n".join(out))
    except SyntaxError:
        return [f"# {line}" for line in lines], False
    return out, True


def notebook_to_python(raw: str) -> tuple[str, int]:
    """Concatenate a notebook's code cells into one module; return it and the number of cells
    commented out because they do not parse."""
    notebook = json.loads(raw)
    if "worksheets" in notebook:  # nbformat 3
        cells = [c for ws in notebook["worksheets"] for c in ws.get("cells", [])]
        key = "input"
    else:
        cells = notebook.get("cells", [])
        key = "source"
    chunks, dropped = [], 0
    for index, cell in enumerate(cells):
        if cell.get("cell_type") != "code":
            continue
        source = cell.get(key, "")
        text = "".join(source) if isinstance(source, list) else str(source)
        lines, parses = _cell_to_python(text.splitlines())
        dropped += not parses
        header = f"# %% [cell {index}]" + ("" if parses else " does not parse: commented out")
        chunks.append("\n".join([header, *lines]))
    return "\n\n".join(chunks) + "\n", dropped


def convert_notebooks(project_dir: Path) -> tuple[int, int, list[str]]:
    """Write <project>/_nb/*.py for every notebook; return (notebooks, cells commented out
    because they do not parse, notebooks that could not be read)."""
    target = project_dir / NOTEBOOK_DIR
    shutil.rmtree(target, ignore_errors=True)
    notebooks = sorted(p for p in project_dir.rglob("*.ipynb") if ".ipynb_checkpoints" not in p.parts)
    dropped_cells, unreadable = 0, []
    for nb in notebooks:
        # Flat, shell-safe names: notebook titles are full of spaces and parentheses.
        rel = _UNSAFE.sub("_", nb.relative_to(project_dir).with_suffix("").as_posix().replace("/", "__")) + ".py"
        try:
            code, dropped = notebook_to_python(nb.read_text(encoding="utf-8"))
        except (ValueError, UnicodeDecodeError) as exc:  # broken JSON: keep going, say so
            unreadable.append(f"{nb.relative_to(project_dir)} ({exc})")
            continue
        dropped_cells += dropped
        target.mkdir(exist_ok=True)
        (target / rel).write_text(code, encoding="utf-8")
    return len(notebooks), dropped_cells, unreadable


# --------------------------------------------------------------------------- fetching

def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _keep(member: str, prefixes: tuple[str, ...]) -> str | None:
    """The path of `member` below its kept prefix (the prefix's last part is kept), or None."""
    if not prefixes:
        return member
    for prefix in prefixes:
        if member == prefix or member.startswith(prefix + "/"):
            return prefix.rsplit("/", 1)[-1] + member[len(prefix):]
    return None


def _unpack_pypi(source: PyPISource, subdirs: tuple[str, ...], downloads: Path, dest: Path) -> None:
    archive = downloads / source.filename
    if not archive.is_file():
        downloads.mkdir(parents=True, exist_ok=True)
        binary = ["--only-binary", ":all:"] if source.filename.endswith(".whl") else ["--no-binary", ":all:"]
        # --no-build-isolation: pip prepares the sdist's metadata with what is installed instead
        # of installing its build dependencies (fairseq's fail to install, and include torch).
        subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--no-build-isolation", "-q",
                        *binary, "-d", str(downloads), source.requirement], check=True)
    digest = _sha256(archive)
    if digest != source.sha256:
        raise SystemExit(f"{archive}: sha256 {digest}, expected {source.sha256} (pinned in PROJECTS)")
    if source.filename.endswith(".whl"):
        with zipfile.ZipFile(archive) as zf:
            for info in zf.infolist():
                rel = _keep(info.filename, subdirs)
                if rel and not info.is_dir() and rel.endswith(SOURCE_SUFFIXES):
                    _write(dest / rel, zf.read(info))
    else:
        with tarfile.open(archive) as tf:
            for member in tf.getmembers():
                rel = _keep(member.name, subdirs)
                fileobj = tf.extractfile(member) if member.isfile() else None
                if rel and fileobj is not None and rel.endswith(SOURCE_SUFFIXES):
                    _write(dest / rel, fileobj.read())


def _write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


def _find_mirror(mirrors: Path, repo: str) -> Path | None:
    owner, name = repo.split("/")
    for candidate in (mirrors / f"{owner}+{name}" / "repo", mirrors / f"{owner}+{name}", mirrors / name):
        if candidate.is_dir():
            return candidate
    return None


def _git(git_dir: Path, *args: str, check: bool = False, stdin: bytes | None = None) -> subprocess.CompletedProcess:
    """Run git on a bare or a working-tree repository; capture bytes."""
    bare = not (git_dir / ".git").exists()
    prefix = ["git", f"--git-dir={git_dir}"] if bare else ["git", "-C", str(git_dir)]
    return subprocess.run([*prefix, *args], capture_output=True, check=check, input=stdin)


def _unpack_github(source: GitHubSource, subdirs: tuple[str, ...], mirrors: Path, dest: Path) -> list[str]:
    """Extract the source files; return the paths whose blobs the mirror lacks."""
    mirror = _find_mirror(mirrors, source.repo)
    if mirror is None:
        raise SystemExit(f"no git directory for {source.repo} under {mirrors}: clone it with\n"
                         f"  git clone https://github.com/{source.repo} {mirrors}/{source.repo.replace('/', '+')}")
    if _git(mirror, "cat-file", "-e", f"{source.commit}^{{commit}}").returncode != 0:
        raise SystemExit(f"{mirror} does not contain commit {source.commit} of {source.repo}")
    # Blob by blob rather than `git archive`: a partial snapshot may lack its largest blobs
    # (notebooks with big outputs); those are skipped and reported, not fatal.
    listing = _git(mirror, "ls-tree", "-r", "-z", source.commit, "--", *subdirs, check=True).stdout
    wanted: dict[str, str] = {}
    for entry in listing.split(b"\0"):
        if not entry:
            continue
        meta, path = entry.decode("utf-8", "surrogateescape").split("\t", 1)
        mode, kind, oid = meta.split()
        # A symlink (mode 120000) is a blob holding its target's path, not source: skip it.
        if kind == "blob" and mode != "120000" and path.endswith(SOURCE_SUFFIXES):
            wanted[path] = oid
    batch = _git(mirror, "cat-file", "--batch", stdin="".join(f"{oid}\n" for oid in wanted.values()).encode(),
                 check=True).stdout
    offset, missing = 0, []
    for path in wanted:
        header_end = batch.index(b"\n", offset)
        header = batch[offset:header_end].split()
        if header[-1] == b"missing":
            missing.append(path)
            offset = header_end + 1
            continue
        size = int(header[2])
        _write(dest / path, batch[header_end + 1:header_end + 1 + size])
        offset = header_end + 1 + size + 1
    return missing


def prepare(root: Path, mirrors: Path, only: list[str], projects: tuple[Project, ...]) -> None:
    for project in projects:
        if only and project.name not in only:
            continue
        dest = root / project.name
        marker = dest / SOURCE_MARKER
        wanted = {"source": project.source.describe(), "subdirs": list(project.subdirs)}
        if marker.is_file() and json.loads(marker.read_text()) == wanted:
            print(f"{project.name}: present ({wanted['source']})")
            continue
        with tempfile.TemporaryDirectory(dir=root) as tmp:
            staging = Path(tmp) / project.name
            staging.mkdir()
            missing: list[str] = []
            if isinstance(project.source, PyPISource):
                _unpack_pypi(project.source, project.subdirs, root / "_downloads", staging)
            else:
                missing = _unpack_github(project.source, project.subdirs, mirrors, staging)
            notebooks, dropped_cells, unreadable = convert_notebooks(staging)
            (staging / SOURCE_MARKER).write_text(json.dumps(wanted, indent=1) + "\n")
            skipped = [f"{name} (not in the mirror)" for name in missing] + unreadable
            (staging / SKIPPED_MARKER).write_text(json.dumps(skipped, indent=1) + "\n")
            shutil.rmtree(dest, ignore_errors=True)
            staging.rename(dest)
        files = sum(1 for _ in dest.rglob("*.py"))
        print(f"{project.name}: {files} .py files, {notebooks} notebooks"
              f"{f' ({dropped_cells} cells do not parse)' if dropped_cells else ''} ({wanted['source']})")
        for name in missing:
            print(f"  not in the mirror, skipped: {name}")
        for name in unreadable:
            print(f"  notebook not readable: {name}")


def check_root(root: Path, projects: tuple[Project, ...]) -> list[Project]:
    """Every project directory must exist and come from the pinned source."""
    problems = []
    for project in projects:
        marker = root / project.name / SOURCE_MARKER
        if not marker.is_file():
            problems.append(f"{project.name}: missing (run `prepare`)")
        elif json.loads(marker.read_text())["source"] != project.source.describe():
            problems.append(f"{project.name}: {marker} does not match {project.source.describe()} (re-run `prepare`)")
    if problems:
        raise SystemExit("corpus not ready under " + str(root) + ":\n  " + "\n  ".join(problems))
    return list(projects)


# --------------------------------------------------------------------------- linting

def _torchlint(args: list[str]) -> str:
    """Run the torchlint CLI importable from this interpreter (one job, no cache, and blind to
    the projects' own pyproject.toml and .gitignore, so every branch sees the same files)."""
    cmd = [sys.executable, "-m", "torchlint", "check", "--isolated", "--no-respect-gitignore", *args]
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"torchlint exited {done.returncode}: {done.stderr.strip()[-2000:]}")
    return done.stdout


def notebook_exclusion(notebooks: str) -> list[str]:
    """Each notebook is in the corpus twice (the .ipynb and its _nb/ conversion): lint one copy.
    'converted' works with every torchlint (one without notebook support skips .ipynb anyway)."""
    return ["--extend-exclude", "*.ipynb" if notebooks == "converted" else NOTEBOOK_DIR]


def lint(paths: list[Path], select: str | None, notebooks: str) -> tuple[list[dict], dict[str, float]]:
    """Findings as JSON objects, with the default rules (select=None) or the given selection,
    and the run's wall and CPU (user + system) seconds."""
    selection = ["--select", select] if select else []
    before, start = resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter()
    out = _torchlint([*selection, *notebook_exclusion(notebooks), "--output-format", "json",
                      "--no-cache", "--jobs", "1", "--exit-zero", *map(str, paths)])
    wall, after = time.perf_counter() - start, resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    return json.loads(out), {"wall_s": round(wall, 2), "cpu_s": round(cpu, 2)}


def linted_files(paths: list[Path], notebooks: str) -> set[Path]:
    listing = _torchlint(["--show-files", *notebook_exclusion(notebooks), *map(str, paths)])
    return {Path(line).resolve() for line in listing.splitlines() if line}


def torchlint_revision() -> str:
    """The version and checkout commit of the torchlint that `_torchlint` runs (a child, like it)."""
    code = "import torchlint, pathlib; print(torchlint.__version__, pathlib.Path(torchlint.__file__).parent)"
    version, where = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout.split()
    commit = subprocess.run(["git", "-C", where, "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    return f"{version} ({commit.stdout.strip() or 'not a git checkout'})"


def project_of(filename: str, root: Path) -> str:
    return Path(filename).resolve().relative_to(root.resolve()).parts[0]


def report(root: Path, set_name: str, per_project: bool, json_dir: Path | None, notebooks: str) -> None:
    projects = check_root(root, SETS[set_name][0])
    dirs = [root / p.name for p in projects]
    linted = linted_files(dirs, notebooks)
    suffix = ".py" if notebooks == "converted" else (".py", ".ipynb")
    on_disk = {p.resolve() for d in dirs for p in d.rglob("*") if p.name.endswith(suffix)
               and (NOTEBOOK_DIR if notebooks == "native" else ".ipynb_checkpoints") not in p.parts}
    py_files = Counter(project_of(str(p), root) for p in linted)
    from_notebooks = sum(1 for p in linted if p.parent.name == NOTEBOOK_DIR or p.suffix == ".ipynb")
    print(f"{len(projects)} projects, {len(linted)} files linted ({from_notebooks} notebooks, {notebooks})")
    not_linted = sorted(str(p.relative_to(root.resolve())) for p in on_disk - linted)
    for skipped in not_linted:  # torchlint's default excludes (`dist`, `build`, ...)
        print(f"  not linted (default excludes): {skipped}")
    print()
    runs, timing = {}, {}
    for label, select in (("default", None), ("ALL", "ALL")):
        runs[label], timing[label] = lint(dirs, select, notebooks)
        print(f"lint {label}: {timing[label]['wall_s']:.1f} s wall, {timing[label]['cpu_s']:.1f} s CPU (1 job)")
    # A file torchlint could not read or parse, and a crash inside a rule, are findings too.
    unread = [f for f in runs["ALL"] if f["code"] in ("TL000", "TL020")]
    by_file = Counter((f["code"], str(Path(f["filename"]).resolve().relative_to(root.resolve()))) for f in unread)
    for (code, name), n in sorted(by_file.items()):
        print(f"  {code} {name}{f' ({n} cells)' if n > 1 else ''}")
    print()
    if json_dir:
        json_dir.mkdir(parents=True, exist_ok=True)
        for label, findings in runs.items():
            (json_dir / f"findings-{label}.json").write_text(json.dumps(findings, indent=1))
        meta = {"set": set_name, "root": str(root.resolve()), "torchlint": torchlint_revision(),
                "notebooks": notebooks, "timing": timing,
                "not_linted": not_linted, "unreadable": unread, "not_prepared": {
                    p.name: json.loads(m.read_text()) for p in projects
                    if (m := root / p.name / SKIPPED_MARKER).is_file() and json.loads(m.read_text())},
                "projects": [{"name": p.name, "source": p.source.describe(), "category": p.category,
                              "subdirs": list(p.subdirs), "files": py_files[p.name]} for p in projects]}
        (json_dir / "report.json").write_text(json.dumps(meta, indent=1))
    names = {f["code"]: f["name"] for findings in runs.values() for f in findings}
    counts = {label: Counter(f["code"] for f in findings) for label, findings in runs.items()}
    files_hit: dict[str, defaultdict[str, set[str]]] = {label: defaultdict(set) for label in runs}
    for label, findings in runs.items():
        for f in findings:
            files_hit[label][f["code"]].add(f["filename"])
    print(f"{'code':<7}{'name':<42}{'default':>9}{'ALL':>7}{'files':>7}{'projects':>10}")
    for code in sorted(names):
        spread = {project_of(f, root) for f in files_hit["ALL"][code]}
        print(f"{code:<7}{names[code]:<42}{counts['default'][code]:>9}{counts['ALL'][code]:>7}"
              f"{len(files_hit['ALL'][code]):>7}{len(spread):>10}")
    print(f"{'total':<49}{sum(counts['default'].values()):>9}{sum(counts['ALL'].values()):>7}")
    if per_project:
        by_project: dict[str, Counter] = defaultdict(Counter)
        for f in runs["ALL"]:
            by_project[project_of(f["filename"], root)][f["code"]] += 1
        print("\n--select ALL per project:")
        for p in projects:
            found = by_project[p.name]
            detail = ", ".join(f"{c} {n}" for c, n in sorted(found.items()))
            print(f"  {p.name:<28}{p.category:<10}{py_files[p.name]:>5} files {sum(found.values()):>5}  {detail}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--set", dest="set_name", choices=sorted(SETS), default="issue9",
                        help="which corpus (default issue9); may also follow the subcommand")
    sub = parser.add_subparsers(dest="command", required=True)
    prep = sub.add_parser("prepare", help="assemble the corpus under --root")
    prep.add_argument("--root", type=Path, required=True)
    prep.add_argument("--mirrors", type=Path, help="directory holding git clones of the GitHub projects")
    prep.add_argument("--only", default="", help="comma-separated project names")
    for subparser in (prep, rep := sub.add_parser("report", help="per-rule counts over the corpus"),
                      sub.add_parser("list", help="print the pinned projects")):
        subparser.add_argument("--set", dest="set_name", choices=sorted(SETS), default=argparse.SUPPRESS)
    rep.add_argument("--root", type=Path, required=True)
    rep.add_argument("--per-project", action="store_true")
    rep.add_argument("--json-dir", type=Path, help="also write the raw JSON findings and report.json here")
    rep.add_argument("--notebooks", choices=("converted", "native"), help="lint the _nb/ conversions (any "
                     "torchlint) or the .ipynb files (default: converted for issue9, native for the held-out sets)")
    args = parser.parse_args()
    projects, notebooks = SETS[args.set_name]
    if args.command == "list":
        for p in projects:
            print(f"{p.name:<32}{p.category:<10}{p.source.describe()}  {' '.join(p.subdirs) or '(whole tree)'}")
    elif args.command == "prepare":
        args.root.mkdir(parents=True, exist_ok=True)
        prepare(args.root, args.mirrors or args.root / "_mirrors", [n for n in args.only.split(",") if n], projects)
    else:
        report(args.root, args.set_name, args.per_project, args.json_dir, args.notebooks or notebooks)


if __name__ == "__main__":
    main()
