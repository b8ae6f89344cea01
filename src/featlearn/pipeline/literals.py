"""Tables read from a module's source without importing it: planning the DAG, and a job, must not import what a
table names (a figure module, a kind's torch code) just to learn a name or a flag."""

from __future__ import annotations

import ast
from pathlib import Path


def assigned(tree: ast.Module, names: tuple[str, ...]) -> ast.expr | None:
    """The value of the first module-level assignment to one of ``names``, if the module has one."""
    for node in tree.body:
        target = node.target if isinstance(node, ast.AnnAssign) else (node.targets[0] if isinstance(node, ast.Assign)
                                                                      else None)
        if getattr(target, "id", None) in names:
            return node.value
    return None


def literal_in(path: Path, name: str) -> object:
    """The literal value the file at ``path`` assigns to ``name`` at module level; None if it assigns none."""
    value = assigned(ast.parse(path.read_text(), filename=str(path)), (name,))
    return None if value is None else ast.literal_eval(value)
