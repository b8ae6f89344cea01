import ast
import os
import shutil
from pathlib import Path

import pytest
import yaml

from featlearn.data import prepare
from featlearn.pipeline import deps, planning

ROOT = Path(__file__).resolve().parents[3]


def test_closure_follows_module_level_imports_and_packages():
    code = deps.closure("featlearn.metrics.collapse_measure")
    for path in ("featlearn/__init__.py", "featlearn/metrics/__init__.py", "featlearn/metrics/collapse_measure.py",
                 "featlearn/metrics/collapse.py", "featlearn/metrics/nfa.py", "featlearn/models/collapse_nets.py"):
        assert f"src/{path}" in code, path
    assert "src/featlearn/models/vgg.py" not in code


def test_a_dispatcher_does_not_pull_in_what_it_dispatches_to():
    code = deps.closure("featlearn.models")
    assert "src/featlearn/models/__init__.py" in code
    assert not {"src/featlearn/models/vgg.py", "src/featlearn/models/gpt.py"} & set(code)
    assert deps.dispatch("featlearn.models")["vgg11"] == "featlearn.models.vgg"
    assert "src/featlearn/models/vgg.py" in deps.closure("featlearn.models", "featlearn.models.vgg")


def test_job_code_starts_from_the_workflow_script():
    code = deps.job_sources("train", "featlearn.models.mlp")
    assert code[0] == "workflow/scripts/train.py"
    assert {"src/featlearn/train.py", "src/featlearn/pipeline/jobs.py", "src/featlearn/models/mlp.py"} <= set(code)


def _lazy_imports(tree: ast.Module) -> set[str]:
    executed = set(deps._executed(tree.body))
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import | ast.ImportFrom) and node not in executed:
            names = [node.module] if isinstance(node, ast.ImportFrom) else [a.name for a in node.names]
            found |= {n for n in names if n and n.startswith("featlearn")}
    return found


def test_lazy_imports_are_followed_except_at_declared_dispatch_points():
    """A function-level import is part of its module's closure; a dispatcher's are not (the job names its choice),
    so each must be reachable from its table. importlib is only allowed in a dispatcher."""
    # imported lazily
    assert "src/featlearn/metrics/measure.py" in deps.closure("featlearn.pipeline.experiments.training")
    for path in sorted((deps.SRC / "featlearn").rglob("*.py")):
        text = path.read_text()
        tree = ast.parse(text)
        if deps._table(tree) is None:
            if path.name == "deps.py":  # the planner: it imports the light kinds table, and no job runs it
                continue
            if path.relative_to(deps.SRC).as_posix() == "featlearn/claims/registry.py":
                # imports a paper's figure modules by file name; the claims job names them (Plan.claims_code)
                continue
            assert "importlib.import_module" not in text, f"{path} imports dynamically but declares no DISPATCH"
            continue
        module = str(path.relative_to(deps.SRC).with_suffix("")).replace("/", ".").removesuffix(".__init__")
        reachable = set(deps.closure(*deps.dispatch(module).values()))
        for name in _lazy_imports(tree):
            assert str(deps.module_file(name).relative_to(deps.ROOT)) in reachable, (
                f"{path}: imports {name} inside a function; name it (or a module importing it) in its table")


CODE = '''"""A module."""

LIMIT = 3  # the limit


def f(x):
    """Double it."""
    return x * LIMIT
'''


def test_comments_docstrings_and_formatting_leave_the_stamp_untouched(tmp_path):
    source, stamp = tmp_path / "m.py", tmp_path / "code" / "m.py.ast"
    source.write_text(CODE)
    deps.write_stamp(source, stamp)
    before = stamp.read_text(), stamp.stat().st_mtime_ns
    for edit in (CODE.replace("Double it.", "Triple it, once."), CODE.replace("# the limit", "# the bound\n# of x"),
                 CODE.replace("x * LIMIT", "(x\n            * LIMIT)"), CODE.replace('"""A module."""\n', "")):
        source.write_text(edit)
        assert deps.fingerprint(source) == before[0].strip(), edit
        deps.write_stamp(source, stamp)
        assert (stamp.read_text(), stamp.stat().st_mtime_ns) == before, edit


def test_a_real_code_edit_rewrites_the_stamp(tmp_path):
    source, stamp = tmp_path / "m.py", tmp_path / "m.py.ast"
    source.write_text(CODE)
    deps.write_stamp(source, stamp)
    before = stamp.read_text()
    source.write_text(CODE.replace("LIMIT = 3", "LIMIT = 4"))
    deps.write_stamp(source, stamp)
    assert stamp.read_text() != before


def test_a_new_stamp_dates_from_its_source_so_adopting_stamps_reruns_nothing_built_since(tmp_path):
    source, stamp = tmp_path / "m.py", tmp_path / "m.py.ast"
    source.write_text(CODE)
    os.utime(source, ns=(10**18, 10**18))
    deps.write_stamp(source, stamp)
    assert stamp.stat().st_mtime_ns == 10**18


DISPATCHER = '''"""A dispatcher."""

import importlib

# name -> the module doing it
DISPATCH = {
    "a": "pkg.a",
    "b": "pkg.b",  # b's module
}


def run(name):
    return importlib.import_module(DISPATCH[name]).run()
'''


def test_a_dispatchers_fingerprint_leaves_out_its_tables_entries_which_have_their_own(tmp_path):
    source = tmp_path / "d.py"
    source.write_text(DISPATCHER)
    code, a, b = deps.fingerprint(source), deps.entry_fingerprint(source, "a"), deps.entry_fingerprint(source, "b")
    source.write_text(DISPATCHER.replace('    "b": "pkg.b",', '    "b": "pkg.b",\n    "c": "pkg.c",'))
    assert (deps.fingerprint(source), deps.entry_fingerprint(source, "a"), deps.entry_fingerprint(source, "b")) == (
        code, a, b), "adding an entry"
    source.write_text(DISPATCHER.replace('"pkg.b",  # b\'s module', '"pkg.b2",'))
    assert (deps.fingerprint(source), deps.entry_fingerprint(source, "a")) == (code, a)
    assert deps.entry_fingerprint(source, "b") != b, "changing an entry"
    source.write_text(DISPATCHER.replace(".run()", ".run(1)"))
    assert deps.fingerprint(source) != code, "the rest of a dispatcher is its code"
    with pytest.raises(ValueError, match="no dispatch entry 'z'"):
        deps.entry_fingerprint(source, "z")


def test_a_stamp_from_before_entry_stamps_keeps_its_time(tmp_path):
    """Adopting entry stamps rewrites each dispatcher's stamp (its table left out) without making it newer than the
    jobs built from the same source, so `--rerun-triggers mtime` finds nothing to redo; any other rewrite is new."""
    source, stamp = tmp_path / "d.py", tmp_path / "d.py.ast"
    source.write_text(DISPATCHER)
    stamp.write_text(deps._fingerprint(DISPATCHER, str(source), whole=True) + "\n")
    os.utime(stamp, ns=(10**18, 10**18))
    deps.write_stamp(source, stamp)
    assert stamp.read_text().strip() == deps.fingerprint(source)
    assert stamp.stat().st_mtime_ns == 10**18
    stamp.write_text("an older edit's fingerprint\n")
    os.utime(stamp, ns=(10**18, 10**18))
    deps.write_stamp(source, stamp)
    assert stamp.stat().st_mtime_ns > 10**18


# The dispatchers with literal tables: the package's library names, the architectures, optimizers (with the metric
# steering one), measurement families and data blocks.
DISPATCHERS = ("featlearn", "featlearn.models", "featlearn.optim", "featlearn.metrics.measure",
               "featlearn.data.prepare")


def _clear_caches() -> None:
    for cached in (deps.direct_imports, deps._closure, deps.code_stamp, deps.entry_stamp, deps.dispatch):
        cached.cache_clear()


@pytest.fixture
def code_copy(tmp_path, monkeypatch):
    """The sources and workflow scripts copied under tmp_path, which deps reads and stamps instead of the checkout."""
    skip = shutil.ignore_patterns("__pycache__")
    shutil.copytree(deps.SRC / "featlearn", tmp_path / "src" / "featlearn", ignore=skip)
    shutil.copytree(deps.SCRIPTS, tmp_path / "workflow" / "scripts", ignore=skip)
    monkeypatch.setattr(deps, "ROOT", tmp_path)
    monkeypatch.setattr(deps, "SRC", tmp_path / "src")
    monkeypatch.setattr(deps, "SCRIPTS", tmp_path / "workflow" / "scripts")
    _clear_caches()
    yield tmp_path
    _clear_caches()


def _jobs_code(root: Path) -> dict[str, tuple[set, dict[str, str]]]:
    """Each quick job that dispatches (data, train, measure): the (dispatcher, choice) pairs its spec picks, and its
    code inputs with their stamps' contents, as planning computes them now."""
    _clear_caches()
    plan = planning.Plan(yaml.safe_load((ROOT / "config.yaml").read_text()) | {"scale": "quick"})
    jobs = {f"data {key}": ({("featlearn.data.prepare", prepare.choice(block))}, plan.data_code(block))
            for key, block in plan.real_data.items()}
    for e, units in plan.units.items():
        for uid, unit in units.items():
            if e in plan.trained:
                optimizer = unit["train"]["optimizer"]
                picks = {("featlearn.models", unit["model"].get("arch", "mlp")), ("featlearn.optim", optimizer)}
                jobs[f"train {e}/{uid}"] = (picks, plan.train_code(unit))
            jobs[f"measure {e}/{uid}"] = (set(plan.kind[e].entries(unit)), plan.measure_code(e, unit))
    return {job: (picks, {s: (root / s).read_text() for s in code}) for job, (picks, code) in jobs.items()}


def _entry(root: Path, dispatcher: str, choice: str) -> tuple[Path, str, ast.expr]:
    path = root / dispatcher if dispatcher.endswith(".py") else deps.module_file(dispatcher)
    table = deps._literal_table(ast.parse(path.read_text()))
    return path, path.read_text(), dict(zip([k.value for k in table.keys], table.values, strict=True))[choice]


def _offset(text: str, line: int, col: int) -> int:
    return sum(len(row) for row in text.splitlines(keepends=True)[:line - 1]) + col


@pytest.mark.parametrize("dispatcher", DISPATCHERS)
def test_a_new_dispatch_line_changes_no_existing_jobs_code(code_copy, dispatcher):
    before = _jobs_code(code_copy)
    path, text, last = _entry(code_copy, dispatcher, list(deps.dispatch(dispatcher))[-1])
    end = _offset(text, last.end_lineno, last.end_col_offset)
    path.write_text(f"{text[:end]}, \"added_choice\": {ast.get_source_segment(text, last)}{text[end:]}")
    _clear_caches()
    assert "added_choice" in deps.dispatch(dispatcher)
    assert _jobs_code(code_copy) == before


@pytest.mark.parametrize(("dispatcher", "choice", "donor"), [
    ("featlearn.optim", "adam", "adamw"), ("featlearn.models", "vgg11", "mlp"),
    ("featlearn.metrics.measure", "conv_nfa", "nfa"), ("featlearn.data.prepare", "shakespeare_char", "offline")])
def test_changing_a_dispatch_line_changes_only_the_code_of_the_jobs_choosing_it(code_copy, dispatcher, choice, donor):
    before = _jobs_code(code_copy)
    path, text, value = _entry(code_copy, dispatcher, choice)
    start, end = (_offset(text, value.lineno, value.col_offset), _offset(text, value.end_lineno, value.end_col_offset))
    path.write_text(text[:start] + ast.get_source_segment(text, _entry(code_copy, dispatcher, donor)[2]) + text[end:])
    after = _jobs_code(code_copy)
    choosing = {job for job, (picks, _) in before.items() if (dispatcher, choice) in picks}
    assert choosing and {job for job in before if after[job] != before[job]} == choosing
