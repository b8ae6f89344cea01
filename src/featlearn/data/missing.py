"""The error of a dataset absent from disk, in a module of its own: the text corpus raises it too, and importing it
from the image loaders would make every corpus job depend on torchvision's code (``featlearn.pipeline.deps``)."""

from __future__ import annotations

from pathlib import Path


class DatasetMissingError(FileNotFoundError):
    """A dataset the run needs is not on disk (or failed torchvision's check), raised before anything is written."""

    def __init__(self, title: str, path: Path, problem: str, layout: str, note: str = "",
                 downloaded: bool = False) -> None:
        self.dataset, self.path = title, path
        fix = (f"put the files under {path} by hand" if downloaded
               else f"run with `--config download=true`, or put the files under {path}")
        super().__init__(f"{title} {problem}. Fix: {fix} (expected layout: {layout}).{note}")
