"""The source files each job runs: the import closure that Snakemake cannot see.

Snakemake reruns a job when one of its inputs changes, and Python imports are invisible to it. So every rule lists as
code inputs ``job_code(script, *entries)``: the import closure of its workflow script plus the modules the job
dispatches to at run time (a run's architecture, a measurement family, a figure module). Closures are computed from
the sources, never written by hand, so an edit reruns exactly the jobs whose code imports the edited file.

Every import statement is followed, wherever it stands (a function may import lazily to keep a module light), with
every package ``__init__`` on the way; except in a dispatcher, a module whose choice of what to import depends on
the job (the architecture of a run, a measurement family, an experiment kind). A dispatcher keeps its choices in a
table, ``DISPATCH`` (choice -> module) or ``KINDS`` (choice -> {"module": …}), read here without importing
it (the kinds' table is found from their modules' literal flags and imports light), so planning never imports
torch; only its import-time imports are followed, and a job names its choice as an entry. A smoke-build test checks
every job's loaded modules against its computed code, so a missed import fails CI.

What a job lists is not the source files themselves but one stamp per file, ``results/code/<path>.ast``, holding a
fingerprint of what the file does: a hash of its syntax tree without docstrings, so a comment, a docstring or a
reformatting leaves the stamp untouched and reruns nothing, while a real edit rewrites it and reruns every job that
runs the file. Stamps are written while Snakemake plans the DAG, the same for every scale (code is code).

A dispatcher's fingerprint leaves out the entries of its literal table: a job reads only the entry it chooses, so
each job choosing one lists that entry's own stamp, ``results/code/dispatch/<dispatcher path>/<choice>.ast`` (a hash
of the entry's literal; ``job_code(..., choices=...)``). Adding a line to a table then rewrites no stamp and reruns
no existing job, and changing one reruns only the jobs choosing it. A dispatcher's code may therefore read its
table only through the job's choice (a lookup, a membership test, an error message listing the choices): a choice
that depends on the whole table (``data.prepare.choice``) is made while planning, so a job whose choice a new line
changes lists another entry stamp and reruns.

A few modules every job loads cannot change what it computes (``INERT``, each with the reason); they are no code
input, so an edit to them reruns nothing. Everything else a job loads is one, and nothing it does not load is: a
smoke-build test checks that each job's computed code equals the modules it loaded, less ``INERT``.

``python -m featlearn.pipeline.deps`` prints each workflow script's closure and, for every dispatcher, what picks its
choices (the comment above its table), each entry's target, its stamp and the files it adds to a job.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import importlib
import os
from collections.abc import Iterable
from pathlib import Path

from featlearn import config as fc
from featlearn.pipeline.literals import assigned, literal_in

PACKAGE = "featlearn"
SRC = Path(__file__).resolve().parents[2]  # the folder holding the featlearn package
ROOT = SRC.parent
SCRIPTS = ROOT / "workflow" / "scripts"
STAMPS = "results/code"  # one stamp per source file, repository-relative, shared by every scale
WRITE_STAMPS = True  # False in a dry run (`snakemake -n`), which writes nothing: stamps are computed, not written
UNWRITTEN: set[str] = set()  # the stamps (absolute paths) a dry run would have written, new or changed


def module_file(module: str) -> Path | None:
    """The source file of a ``featlearn`` module or package (its ``__init__.py``); None if there is none."""
    base = SRC.joinpath(*module.split("."))
    for path in (base.with_suffix(".py"), base / "__init__.py"):
        if path.is_file():
            return path
    return None


def _executed(body: list[ast.stmt]) -> list[ast.stmt]:
    """The statements of ``body`` that run at import time: nested blocks yes, function bodies no."""
    found = []
    for node in body:
        found.append(node)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        for field in ("body", "orelse", "finalbody", "handlers"):
            block = getattr(node, field, None)
            if isinstance(block, list):
                found += _executed([n for n in block if isinstance(n, ast.stmt | ast.excepthandler)])
    return found


TABLES = ("DISPATCH", "KINDS")

# Loaded by every job, never a code input: what they do cannot change a result, only whether the job runs or what is
# recorded about it, so an edit to them must not redo GPU-hours. A job glue module that can change a result stays an
# input: ``jobs`` (the job's device, how tensors are saved and loaded) and ``integrity`` (the digest every output
# carries: files written under an old digest would fail every later load as corrupted).
INERT = {
    "featlearn.pipeline.gpus": "which free GPU of a workstation a job claims (its lock); the device is job_device's",
    "featlearn.pipeline.usage": "what a job spent (seconds, memory), recorded for the projection, not a result",
    "featlearn.pipeline.memory": "checks that stop a job before memory or disk runs out, naming the fix; no result",
}


def _table(tree: ast.Module) -> ast.expr | None:
    """The value of a module-level ``DISPATCH`` or ``KINDS`` assignment, if the module has one."""
    return assigned(tree, TABLES)


def _literal_table(tree: ast.Module) -> ast.Dict | None:
    """A dispatcher's table when it is a dict literal keyed by strings, whose entries each have a stamp of their own;
    None for a module without one, or whose table is computed (the kinds': a new kind is a new module)."""
    table = _table(tree)
    if isinstance(table, ast.Dict) and all(isinstance(k, ast.Constant) and isinstance(k.value, str)
                                           for k in table.keys):
        return table
    return None


def literal(module: str, name: str) -> object:
    """The literal value a module assigns to ``name``, read without importing it (planning the DAG must stay free of
    matplotlib, xarray and torch); a ValueError names the file when there is none."""
    path = _entry_file(module)
    value = literal_in(path, name)
    if value is None:
        raise ValueError(f"{path} defines no literal {name}")
    return value


def _reached(tree: ast.Module, functions: frozenset[str]) -> list[ast.AST]:
    """The import-time statements of a module, the bodies of ``functions`` and of every module-level function they
    name, transitively: what a job calling only those functions of the module can execute."""
    defined = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)}
    nodes: list[ast.AST] = list(_executed(tree.body))
    todo, seen = list(functions), set()
    while todo:
        name = todo.pop()
        if name in seen or name not in defined:
            continue
        seen.add(name)
        body = list(ast.walk(defined[name]))
        nodes += body
        todo += [n.id for n in body if isinstance(n, ast.Name) and n.id in defined]
    return nodes


@functools.cache
def direct_imports(path: Path, functions: frozenset[str] | None = None) -> frozenset[str]:
    """The ``featlearn`` modules a file imports, with the packages on the way: every import statement, wherever it
    stands; a dispatcher's at import time only; with ``functions``, those that calling only them can execute."""
    tree = ast.parse(path.read_text(), filename=str(path))
    if functions is not None:
        statements = _reached(tree, functions)
    else:
        statements = _executed(tree.body) if _table(tree) is not None else list(ast.walk(tree))
    names = set()
    for node in statements:
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
            # `from featlearn.metrics import nfa` imports the submodule featlearn.metrics.nfa
            names |= {f"{node.module}.{alias.name}" for alias in node.names
                      if module_file(f"{node.module}.{alias.name}") is not None}
    modules = set()
    for name in names:
        if name == PACKAGE or name.startswith(PACKAGE + "."):
            parts = name.split(".")
            modules |= {".".join(parts[:i]) for i in range(1, len(parts) + 1)}
    return frozenset(m for m in modules if module_file(m) is not None)


def _entry_file(entry: str | Path) -> Path:
    path = ROOT / entry if str(entry).endswith(".py") else module_file(str(entry))
    if path is None or not path.is_file():
        raise ValueError(f"deps: no source file for {entry!r}")
    return path.resolve()


@functools.cache
def _closure(entries: tuple[str, ...]) -> tuple[str, ...]:
    files: set[Path] = set()
    partial: set[Path] = set()  # entries of which a job calls only some functions
    todo: list[Path | None] = []
    for entry in entries:
        module, _, function = entry.partition(":")
        path = _entry_file(module)
        if function:
            partial.add(path)
            todo += [module_file(m) for m in direct_imports(path, frozenset(function.split(","))) if m not in INERT]
        else:
            todo.append(path)
        if not module.endswith(".py"):  # importing a module runs its packages' __init__ first
            parts = module.split(".")
            todo += [f for f in (module_file(".".join(parts[:i])) for i in range(1, len(parts))) if f]
    while todo:
        path = todo.pop()
        if path is None or path in files:
            continue
        files.add(path)
        todo += [module_file(m) for m in direct_imports(path) if m not in INERT]
    return tuple(sorted(str(f.relative_to(ROOT)) for f in files | partial if f.is_relative_to(SRC)))


def closure(*entries: str | Path) -> list[str]:
    """Repository-relative paths of every ``featlearn`` source file that importing ``entries`` executes.

    An entry is a dotted module name (``featlearn.models.vgg``), a script path (``workflow/scripts/train.py``), or a
    module and the functions of it a job calls (``featlearn.pipeline.experiments.network:combine``): then only the
    imports
    those functions (and the module's functions they name) can reach count, so a kind module's measurement code is
    no code input of its combine jobs.
    """
    return list(_closure(tuple(str(e) for e in entries)))


def job_sources(script: str, *modules: str) -> list[str]:
    """The source files a job running ``workflow/scripts/<script>.py`` that dispatches to ``modules`` executes: the
    script itself, then its closure (repository-relative)."""
    path = SCRIPTS / f"{script}.py"
    return [str(path.relative_to(ROOT)), *closure(path, *modules)]


_DEFINITIONS = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)


@functools.cache
def _fingerprint(text: str, filename: str, whole: bool = False) -> str:
    """The hash of a source's syntax tree without docstrings and, unless ``whole``, its literal table's entries."""
    tree = ast.parse(text, filename=filename)
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if (isinstance(node, _DEFINITIONS) and body and isinstance(body[0], ast.Expr)
                and isinstance(body[0].value, ast.Constant) and isinstance(body[0].value.value, str)):
            node.body = body[1:]
    table = _literal_table(tree)
    if table is not None and not whole:
        table.keys, table.values = [], []
    return hashlib.sha256(ast.dump(tree).encode()).hexdigest()


def fingerprint(path: Path) -> str:
    """A hash of what a source file does: its syntax tree without module, class and function docstrings (the tree
    holds no comments, formatting or line numbers), so only an edit that can change a result changes it; a
    dispatcher's without its table's entries, which the jobs choosing them list apart (``entry_fingerprint``)."""
    return _fingerprint(path.read_text(), str(path))


def entry_fingerprint(path: Path, choice: str) -> str:
    """A hash of one entry of a dispatcher's literal table (the choice's value as written, comments aside): what a
    job choosing it reads of the table."""
    table = _literal_table(ast.parse(path.read_text(), filename=str(path)))
    values = {} if table is None else {k.value: v for k, v in zip(table.keys, table.values, strict=True)}
    if choice not in values:
        raise ValueError(f"deps: {path} has no dispatch entry {choice!r}; its choices: {sorted(values)}")
    return hashlib.sha256(ast.dump(values[choice]).encode()).hexdigest()


def write_stamp(source: Path, stamp: Path, digest: str | None = None) -> None:
    """Write ``digest`` (by default ``source``'s fingerprint) to ``stamp``, leaving the file (and its time) untouched
    when it is unchanged.

    A new stamp takes its source's time, not now: what it records changed no later than that, so adopting stamps (a
    build from before them, a removed ``results/code/``) reruns only the jobs that the source's time says are stale.
    A dispatcher's stamp written before its table's entries were left out (the whole tree's hash) keeps its time: the
    source it recorded has not changed, so adopting entry stamps recomputes nothing."""
    text = (fingerprint(source) if digest is None else digest) + "\n"
    old = stamp.read_text() if stamp.exists() else None
    if old == text:
        return
    if not WRITE_STAMPS:
        UNWRITTEN.add(str(stamp.absolute()))
        return
    if old is None:
        kept = source.stat()
    elif digest is None and old.strip() == _fingerprint(source.read_text(), str(source), whole=True):
        kept = stamp.stat()
    else:
        kept = None
    fc.write_if_changed(stamp, text)
    if kept is not None:
        os.utime(stamp, ns=(kept.st_atime_ns, kept.st_mtime_ns))


@functools.cache
def code_stamp(source: str) -> str:
    """The stamp standing for a repository-relative source file, brought up to date once per process (per Snakemake
    call): the file a job lists as its code input so that only a real edit reruns it."""
    stamp = f"{STAMPS}/{source}.ast"
    write_stamp(ROOT / source, ROOT / stamp)
    return stamp


def entry_stamp_path(dispatcher: str, choice: str) -> str:
    """Where the stamp of one entry of a dispatcher's table lies: ``results/code/dispatch/<its path>/<choice>.ast``
    (never under ``results/code/src/``, whose stamps each stand for a whole file)."""
    return f"{STAMPS}/dispatch/{_entry_file(dispatcher).relative_to(ROOT)}/{choice}.ast"


@functools.cache
def entry_stamp(dispatcher: str, choice: str) -> str:
    """The stamp standing for one entry of a dispatcher's literal table (``dispatch``), brought up to date once per
    process: listed by each job choosing it, beside its dispatcher's stamp, which leaves the entries out."""
    stamp = entry_stamp_path(dispatcher, choice)
    write_stamp(_entry_file(dispatcher), ROOT / stamp, entry_fingerprint(_entry_file(dispatcher), choice))
    return stamp


def source_of(stamp: str) -> str:
    """The source file a code stamp stands for (the inverse of ``code_stamp``)."""
    return stamp.removeprefix(f"{STAMPS}/").removesuffix(".ast")


def job_code(script: str, *modules: str, choices: Iterable[tuple[str, str]] = ()) -> list[str]:
    """The code inputs of a job running ``workflow/scripts/<script>.py`` that imports ``modules`` and chooses
    ``choices`` ((dispatcher, choice) pairs of literal tables, each reaching its target module): the stamps of
    ``job_sources``, so an edit reruns the job only when it changes what the code does, then each choice's
    ``entry_stamp``, so the table's other lines never rerun it."""
    choices = list(choices)
    targets = [dispatch(dispatcher)[choice] for dispatcher, choice in choices]
    return [*(code_stamp(path) for path in job_sources(script, *modules, *targets)),
            *(entry_stamp(dispatcher, choice) for dispatcher, choice in choices)]


@functools.cache
def dispatch(module: str) -> dict[str, str]:
    """A dispatcher's table (choice -> module name), read without importing it; ``module`` may be a script path."""
    path = _entry_file(module)
    tree = ast.parse(path.read_text())
    if _table(tree) is None:
        raise ValueError(f"deps: {path} defines no {' or '.join(TABLES)} table")
    name = next(n for n in TABLES if assigned(tree, (n,)) is not None)
    try:
        table = literal_in(path, name)
    except ValueError:  # found at import from the modules it names (the kinds): such a dispatcher imports light
        table = getattr(importlib.import_module(module), name)
    return {choice: target if isinstance(target, str) else target["module"] for choice, target in table.items()}


def _purpose(path: Path) -> str:
    """What a dispatcher's table says of itself: the comment right above it (what picks a choice, where it goes), else
    its module's docstring's first line."""
    lines = path.read_text().splitlines()
    tree = ast.parse("\n".join(lines))
    above = []
    for line in reversed(lines[:_table(tree).lineno - 1]):
        if not line.lstrip().startswith("#"):
            break
        above.insert(0, line.strip().lstrip("#").strip())
    return " ".join(above) or (ast.get_docstring(tree) or "").split("\n")[0]


def main() -> None:
    """Print each workflow script's code, then each dispatcher: what picks its choices, and each entry's target, its
    stamp and the files it adds to a job choosing it."""
    for script in sorted(SCRIPTS.glob("*.py")):
        print(f"{script.stem}:")
        for path in job_sources(script.stem):
            print(f"  {path}")
    dispatchers = sorted(str(p.relative_to(SRC).with_suffix("")).replace("/", ".").removesuffix(".__init__")
                         for p in (SRC / PACKAGE).rglob("*.py") if _table(ast.parse(p.read_text())) is not None)
    for module in dispatchers:
        path = _entry_file(module)
        literal_table = _literal_table(ast.parse(path.read_text())) is not None
        print(f"\n{module}: {_purpose(path)}")
        for choice, target in dispatch(module).items():
            stamp = f"entry stamp {entry_stamp_path(module, choice)}" if literal_table else "a computed table"
            print(f"  {choice!r} -> {target} ({stamp}), adds:")
            for added in sorted(set(closure(target)) - set(closure(module))):
                print(f"    {added}")


if __name__ == "__main__":
    main()
