import ast
import os

from featlearn.pipeline import deps


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
