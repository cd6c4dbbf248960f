"""Start-up imports only what a run needs (issue 23): selection and settings read the generated
rule index (torchlint/rules/index.py) instead of importing every rule, the walk imports a rule
only when the file's text can wake it, and a cache hit imports none. Timings live in
benchmarks/startup.py; these tests check what is imported, which does not depend on load."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
import textwrap

from torchlint import catalog
from torchlint.linter import rule_classes_for
from torchlint.rules import lazy
from torchlint.selection import STATIC


def test_the_index_describes_every_static_rule_as_its_class_does():
    rules = catalog.static_rules()
    assert sorted(lazy.by_code()) == [r.code for r in rules]
    texts = ["", "import torch\nloss.backward()\n", "from torch.utils.data import DataLoader\nx.data.zero_()\n"]
    for rule in rules:
        entry = lazy.by_code()[rule.code]
        assert entry.load() is rule
        assert (entry.name, entry.default_enabled, entry.option_keys) == (rule.name, rule.default_enabled,
                                                                         tuple(sorted(rule.options)))
        assert (entry.summary, entry.severity, entry.tags, entry.precision, entry.security_severity) == (
            rule.summary, rule.severity, tuple(rule.tags), rule.precision, rule.security_severity)
        assert [entry.applies_to(t) for t in texts] == [rule.applies_to(t) for t in texts], rule.code
    assert STATIC.default == frozenset(r.code for r in rules if r.default_enabled)
    assert lazy.runtime_codes() == catalog.runtime_codes()


def test_sarif_describes_a_rule_from_the_index_as_from_its_class(monkeypatch):
    from torchlint.output import sarif

    from_index = {rule.code: sarif._rule_descriptor(rule.code) for rule in catalog.static_rules()}
    monkeypatch.setattr(sarif, "_described", lambda code: catalog.by_code()[code])
    assert from_index == {rule.code: sarif._rule_descriptor(rule.code) for rule in catalog.static_rules()}
    assert sarif._rule_descriptor("TL020")["id"] == "TL020"  # a runtime check's, from the catalog


def test_the_walk_gets_stand_ins_that_build_the_real_rule():
    classes = rule_classes_for(frozenset({"TL000", "TL101"}))
    assert [c.code for c in classes] == ["TL101"]  # TL000 is the parser's, not a walk rule's
    assert isinstance(classes[0], lazy.LazyRule) and classes[0].load() is catalog.static_rule("TL101")


_PROBE = textwrap.dedent("""
    import json, sys
    from pathlib import Path
    from torchlint import api

    def rule_modules():
        return sorted(m for m in sys.modules if m.startswith("torchlint.rules.") and m.count(".") >= 3)

    root = Path(sys.argv[1])
    hit = api.check(api.CheckRequest([str(root / "hit.py")], isolated=True, cwd=root, cache_dir=root / "cache"))
    after_hit = rule_modules()
    cold = api.check(api.CheckRequest([str(root / "cold.py")], isolated=True, cwd=root, no_cache=True))
    print(json.dumps([after_hit, rule_modules(), [f.code for f in hit.findings], [f.code for f in cold.findings]]))
""")


def test_a_cache_hit_imports_no_rule_and_a_cold_file_only_the_rules_its_text_wakes(tmp_path):
    from torchlint import api

    hit_text = "import torch\n\nnet = torch.nn.Linear(4, 2)\nwith torch.no_grad():\n    loss = net(x).mean()\n    loss.backward()\n"
    cold_text = "import torch\nimport torch.nn.functional as F\n\nloss = F.cross_entropy(out, y.float())\n"
    (tmp_path / "hit.py").write_text(hit_text)
    (tmp_path / "cold.py").write_text(cold_text)
    warm = api.check(api.CheckRequest([str(tmp_path / "hit.py")], isolated=True, cwd=tmp_path,
                                      cache_dir=tmp_path / "cache"))  # fills the cache
    assert [f.code for f in warm.findings] == ["TL101"]
    done = subprocess.run([sys.executable, "-c", _PROBE, str(tmp_path)], capture_output=True, text=True, check=True)
    after_hit, after_cold, hit_codes, cold_codes = json.loads(done.stdout)
    assert hit_codes == ["TL101"] and after_hit == []  # served from the cache, no rule imported
    woken = {r.module for r in lazy.by_code().values()
             if r.default_enabled and r.code != "TL000" and r.applies_to(cold_text)}
    assert "TL201" in cold_codes and set(after_cold) == woken
    assert len(woken) < len(STATIC.default) / 4  # the bite: most rules stay unimported


_CLI_PROBE = textwrap.dedent("""
    import sys
    sys.argv = ["torchlint", "check", "a.py", "--no-cache"]
    from torchlint.entry import main
    try:
        main()
    finally:  # what the console script had imported when it exited
        with open("modules.txt", "w") as out:  # not json: the probe must not import it
            out.write("\\n".join(sorted(sys.modules)))
""")


def test_a_plain_check_imports_no_click_and_only_the_rules_its_text_wakes(tmp_path):
    """The command line people run most (`check FILE`) imports neither click (the command's
    parser is check_command's), nor the cache with --no-cache, nor TOML without a config
    file, nor git for a file named plainly, nor hashing for a file importing no local module,
    nor dataclasses (and inspect), typing, pathlib (paths are strings and os.path), tokenize for a
    file without directives, threading, or the notebook reader for a .py file, nor a rule module
    its text cannot wake."""
    text = "import torch\n\nwith torch.no_grad():\n    loss = net(x).mean()\n    loss.backward()\n"
    (tmp_path / "a.py").write_text(text)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["XDG_CACHE_HOME"] = str(tmp_path / "user-cache")  # no recorded answer to replay
    done = subprocess.run([sys.executable, "-c", _CLI_PROBE], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert done.returncode == 1 and "TL101" in done.stdout, done.stderr[-2000:]
    imported = set((tmp_path / "modules.txt").read_text().split("\n"))
    assert "torchlint.api" in imported and "torchlint.checker" in imported  # the probe sees the run's imports
    unwanted = {"click", "torchlint.cli", "torchlint.cache", "tomllib", "subprocess", "json", "traceback", "hashlib",
                "dataclasses", "inspect", "tokenize", "threading", "torchlint.notebook", "typing", "pathlib"}
    assert imported & unwanted == set()
    rules = {m for m in imported if m.startswith("torchlint.rules.") and m.count(".") >= 3}
    woken = {r.module for r in lazy.by_code().values()
             if r.default_enabled and r.code != "TL000" and r.applies_to(text)}
    assert "torchlint.rules.autograd.backward_under_no_grad" in rules and rules <= woken


def test_a_lint_cache_hit_imports_neither_the_walk_nor_ast_pathlib_or_typing(tmp_path):
    """The run pre-commit and editors repeat: every file answered by the lint cache (no
    recorded answer applies: the environment differs) needs no rule, no walk, no parser."""
    project = tmp_path / "project"
    project.mkdir()
    (project / "a.py").write_text("import torch\n\nwith torch.no_grad():\n    loss = net(x).mean()\n    loss.backward()\n")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["XDG_CACHE_HOME"] = str(tmp_path / "user-cache")  # the cache's key, outside the project
    probe = _CLI_PROBE.replace(', "--no-cache"]', "]")
    for run in ("fill", "hit"):  # a new environment each time: the replay does not answer
        done = subprocess.run([sys.executable, "-c", probe], cwd=project, env={**env, "TORCHLINT_TEST_RUN": run},
                              capture_output=True, text=True)
        assert done.returncode == 1 and "TL101" in done.stdout, done.stderr[-2000:]
    imported = set((project / "modules.txt").read_text().split("\n"))
    assert "torchlint.cache" in imported  # the probe saw a cached run
    assert imported & {"torchlint.checker", "torchlint.analysis.project_index", "ast", "pathlib", "typing"} == set()


def test_a_file_that_wakes_every_rule_imports_no_typing_or_pathlib(tmp_path):
    """typing and pathlib cost a one-file run ~3 and ~4 ms: the modules a lint imports name its types for mypy
    only (`TYPE_CHECKING = False` then `if TYPE_CHECKING:`). A comment holding every rule's
    `requires_text` wakes them all (`--select ALL`: those off by default too), so every rule
    module and the analyses they import load. TL001 (woken by the word `noqa`) once imported the
    catalog, and with it every rule module, for each file holding a directive."""
    words = sorted({w for r in lazy.by_code().values() for w in r.requires_text})
    text = f"# {' '.join(words)}\nimport torch\n\nwith torch.no_grad():\n    loss = net(x).mean()\n    loss.backward()\n"
    (tmp_path / "a.py").write_text(text)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["XDG_CACHE_HOME"] = str(tmp_path / "user-cache")
    probe = _CLI_PROBE.replace('"--no-cache"]', '"--no-cache", "--select", "ALL"]')
    done = subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert done.returncode == 1 and "TL101" in done.stdout, done.stderr[-2000:]
    imported = set((tmp_path / "modules.txt").read_text().split("\n"))
    rules = {m for m in imported if m.startswith("torchlint.rules.") and m.count(".") >= 3}
    woken = {r.module for r in lazy.by_code().values() if r.code != "TL000"}
    assert rules >= woken - {"torchlint.rules.meta.syntax_error"}  # every enabled rule ran
    assert "typing" not in imported and "pathlib" not in imported
    assert "torchlint.catalog" not in imported  # TL001 reads the index, not the catalog of every rule


def _without_prefilter(rule: type) -> type:
    """`rule` woken by every text: what the walk would do if it imported every rule."""
    return type(rule.__name__, (rule,), {"requires_text": ()})


def test_skipping_the_rules_a_text_cannot_wake_changes_no_finding_on_any_fixture():
    """The prefilter is only a shortcut: every fixture gives the same findings through the
    lazy stand-ins (rules the text cannot wake neither imported nor built) as with every
    rule class imported and run on it."""
    from pathlib import Path

    from torchlint.checker import check_source

    codes = frozenset(lazy.static_codes())
    lazy_rules = rule_classes_for(codes)
    every_rule = [_without_prefilter(r) for r in catalog.static_rules() if r.code != "TL000"]
    fixtures = sorted((Path(__file__).parent / "fixtures").rglob("*.py"))
    skipped = total = 0
    for path in fixtures:
        data = path.read_bytes()
        text = data.decode("utf-8", errors="replace")
        skipped += sum(1 for r in lazy_rules if not r.applies_to(text))
        woken = check_source(str(path), data, lazy_rules, rule_errors=[])
        everything = check_source(str(path), data, every_rule, rule_errors=[])
        assert woken == everything, path
        total += len(woken)
    assert len(fixtures) > 100 and total > 100  # the fixtures do fire
    assert skipped > len(fixtures) * len(lazy_rules) / 2  # and most rules are skipped on most of them


def test_call_gates_change_no_finding_on_any_fixture(monkeypatch):
    """`calls_ending` only spares calls a handler would turn away at once: every fixture
    gives the same findings with the gates as with every Call handler called on every call.
    The gated handlers exist and spare most calls of the fixtures."""
    from pathlib import Path

    from torchlint import checker
    from torchlint.checker import check_source

    rules = [r for r in catalog.static_rules() if r.code != "TL000"]
    gated = [r.code for r in rules if getattr(getattr(r, "visit_Call", None), "call_attrs", None) is not None]
    assert {"TL204", "TL210", "TL405", "TL406", "TL602", "TL603", "TL901", "TL906"} <= set(gated)
    fixtures = sorted((Path(__file__).parent / "fixtures").rglob("*.py"))
    with_gates = {p: check_source(str(p), p.read_bytes(), rules, rule_errors=[]) for p in fixtures}
    spared = []
    original = checker.Walker.call_handlers

    def counting(self, func):
        found = original(self, func)
        spared.append(len(self.dispatch.get(ast.Call) or []) - len(found))
        return found

    monkeypatch.setattr(checker.Walker, "call_handlers", counting)
    for path in fixtures:
        check_source(str(path), path.read_bytes(), rules, rule_errors=[])
    assert sum(spared) > len(spared)  # more than one handler spared per call, on average
    monkeypatch.setattr(checker.Walker, "call_handlers", lambda self, func: self.dispatch.get(ast.Call) or [])
    for path in fixtures:
        assert check_source(str(path), path.read_bytes(), rules, rule_errors=[]) == with_gates[path], path
