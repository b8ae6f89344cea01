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


def test_every_import_deps_cannot_follow_is_a_declared_dispatch():
    """An import inside a function, or importlib, reaches modules no closure lists: only dispatchers (a literal
    DISPATCH naming every target) may do it, else an edit there would leave stale results."""
    for path in sorted((deps.SRC / "featlearn").rglob("*.py")):
        text = path.read_text()
        lazy = _lazy_imports(ast.parse(text))
        dynamic = "importlib.import_module" in text
        if not lazy and not dynamic:
            continue
        module = str(path.relative_to(deps.SRC).with_suffix("")).replace("/", ".").removesuffix(".__init__")
        targets = set(deps.dispatch(module).values())
        for name in lazy:
            assert name in targets, f"{path}: imports {name} inside a function; name it in {module}.DISPATCH"
