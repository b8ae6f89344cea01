import ast

from featlearn import deps


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
    code = deps.job_code("train", "featlearn.models.mlp")
    assert {"src/featlearn/train.py", "src/featlearn/jobs.py", "src/featlearn/models/mlp.py"} <= set(code)


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
    assert "src/featlearn/metrics/measure.py" in deps.closure("featlearn.experiments.training")  # imported lazily
    for path in sorted((deps.SRC / "featlearn").rglob("*.py")):
        text = path.read_text()
        tree = ast.parse(text)
        if deps._table(tree) is None:
            assert "importlib.import_module" not in text, f"{path} imports dynamically but declares no DISPATCH"
            continue
        module = str(path.relative_to(deps.SRC).with_suffix("")).replace("/", ".").removesuffix(".__init__")
        reachable = set(deps.closure(*deps.dispatch(module).values()))
        for name in _lazy_imports(tree):
            assert str(deps.module_file(name).relative_to(deps.ROOT)) in reachable, (
                f"{path}: imports {name} inside a function; name it (or a module importing it) in its table")
