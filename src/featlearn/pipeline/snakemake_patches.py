"""Every place the build reaches into Snakemake's internals, in one module: why Snakemake is pinned to one version.

Each function here leans on something Snakemake does not document as an API (a private class's method, a folder
layout, a setting read at one moment). ``INTERNALS`` names, per patch, exactly what it relies on;
``tests/pipeline/test_snakemake_patches.py`` checks each of them against the installed Snakemake and fails naming
the patch when an upgrade changes one. ``docs/design.md`` ("Snakemake's internals, fenced") lists each patch with
the public mechanism that would replace it if Snakemake had one. Only the Snakefile (and the tests) import this.
"""

from __future__ import annotations

import base64
import contextlib
import os
import shutil
import signal
import sys
import tempfile
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from featlearn.pipeline.integrity import file_problem

CHECKED = (".pt", ".nc", ".json")  # outputs whose content can be checked (a digest; a usage record parses)
CHECKSUM_BYTES = 1 << 34  # 16 GiB: every dataset and run is compared by content, not only by date

# What each patch relies on: (patch, dotted name in snakemake, what about it). The fence test checks each.
INTERNALS = [
    ("guard_cache", "snakemake.caching.local.OutputFileCache.fetch", "async method (self, job)"),
    ("guard_cache", "snakemake.caching.local.OutputFileCache.store", "async method (self, job)"),
    ("guard_cache", "snakemake.caching.local.OutputFileCache.set_permissions", "method (self, entry)"),
    ("guard_cache", "snakemake.caching.local.OutputFileCache.get_outputfiles_and_cachefiles",
     "async method (self, job) -> [(output, entry)]"),
    ("guard_cache", "snakemake.caching.local.OutputFileCache.path", "attribute: the cache folder"),
    ("guard_cache", "snakemake.exceptions.CacheMissException", "raised by fetch: the job computes instead"),
    ("check_cache_location", "snakemake.settings.types.WorkflowSettings.cache",
     "a setting: the rules --cache names (None without --cache)"),
    ("incomplete_markers", "snakemake.persistence.file.FilePersistence._record_path",
     "method (self, subject, id): .snakemake/incomplete/<urlsafe base64 of the path, cut with '@'>"),
    ("dry_run", "snakemake.cli.get_argument_parser", "its parser's dest 'dryrun' for -n/--dry-run"),
    ("plan_unwritten", "snakemake.io._IOFile.exists_local", "async method (self), cached by the IOCache"),
    ("plan_unwritten", "snakemake.io._IOFile.mtime_uncached", "async method (self, skip_storage=False) -> Mtime"),
    ("plan_unwritten", "snakemake.io._IOFile.size_local", "async method (self)"),
    ("plan_unwritten", "snakemake.io._IOFile.is_checksum_eligible", "async method (self, threshold)"),
    ("plan_unwritten", "snakemake.io.Mtime", "class: Mtime(local=<seconds>)"),
    ("before_planning", "snakemake.workflow.Workflow._prepare_dag",
     "method: makes the DAG from self.dag_settings, which the API sets after the Snakefile is parsed"),
    ("compare_by_content", "snakemake.settings.types.DAGSettings.max_checksum_file_size",
     "a DAG setting read when the DAG and the persistence are made"),
    ("damaged_inputs", "snakemake.dag.DAG.needrun_jobs", "method (self, exclude_finished=True)"),
    ("damaged_inputs", "snakemake.dag.DAG.reason", "method (self, job) -> a reason with updated_input"),
    ("force", "snakemake.settings.types.DAGSettings.forcerun", "a DAG setting read when the DAG is planned"),
    ("note_sigterm", "snakemake.scheduling.job_scheduler.JobScheduler.exit_gracefully",
     "the SIGTERM handler the scheduler installs before onstart"),
]


def guard_cache() -> None:
    """Make Snakemake's local output cache safe to share and unable to cost a result.

    Entries are stored read-only (Snakemake makes them writable by everyone), and an entry is checked
    (``file_problem``) before it is linked: a corrupt one is moved aside (``<entry>.corrupt``) and the job computes
    its outputs again, with a warning naming the entry; where it cannot be moved, the build stops naming it and the
    fix. A cache that cannot take a new entry (full, gone, not writable) is a warning: the job's outputs stay in
    results/ (Snakemake's own store moved them out first and, failing, deleted them as a failed job's). Patched on
    Snakemake's class (its instance exists only once planning starts; a cluster job's Snakemake fetches and stores
    itself, and parses the Snakefile too)."""
    from snakemake.caching.local import OutputFileCache

    if getattr(OutputFileCache, "featlearn_guarded", False):
        return
    OutputFileCache.set_permissions = _read_only
    OutputFileCache.fetch = _checked_fetch(OutputFileCache.fetch)
    OutputFileCache.store = _tolerant_store
    OutputFileCache.featlearn_guarded = True


def _read_only(self: Any, entry: Path) -> None:
    os.chmod(entry, 0o555 if Path(entry).is_dir() else 0o444)


def _checked_fetch(fetch: Callable) -> Callable:
    """Snakemake's fetch, after every entry of the job is checked; a corrupt one is moved aside, a cache miss."""
    from snakemake.exceptions import CacheMissException, WorkflowError

    async def checked_fetch(self: Any, job: Any) -> None:
        pairs = await self.get_outputfiles_and_cachefiles(job)
        for output, entry in pairs:
            problem = file_problem(entry) if entry.suffix in CHECKED and entry.is_file() else None
            if problem is None:
                continue
            try:
                for _, other in pairs:
                    if other.exists():
                        os.replace(other, other.with_name(f"{other.name}.corrupt"))
            except OSError as err:
                raise WorkflowError(f"{entry}, Snakemake's output-cache entry for {output} (shared by every clone "
                                    f"using $SNAKEMAKE_OUTPUT_CACHE), is {problem}, and it cannot be moved aside "
                                    f"({err}): delete it (rm '{entry}', or ask its owner), then rerun snakemake; "
                                    "or run without --cache") from None
            print(f"featlearn: {entry}, Snakemake's output-cache entry for {output}, is {problem}: moved aside to "
                  f"{entry}.corrupt (with its siblings); computing {output} again", file=sys.stderr)
            raise CacheMissException(f"{entry} is {problem}")
        await fetch(self, job)

    return checked_fetch


async def _tolerant_store(self: Any, job: Any) -> None:
    """Copy (or hard-link) each output into the cache, read-only, then replace the output by a link to its entry.

    Snakemake's own store moves the outputs out first, so a cache that fails half-way (full, gone, not writable)
    made the job fail and its outputs deleted: here nothing in results/ changes until every entry is in place, and
    a failure is a warning naming the cache and the fix; the build goes on with the local result."""
    from snakemake.logging import logger

    pairs = await self.get_outputfiles_and_cachefiles(job)
    stored: list[Path] = []
    try:
        with tempfile.TemporaryDirectory(dir=self.path) as tmpdir:
            for output, entry in pairs:
                logger.info(f"Moving output file {output} to cache.")
                tmp = Path(tmpdir) / entry.name
                try:
                    os.link(output, tmp)
                except OSError:  # another filesystem, or links refused
                    shutil.copyfile(output, tmp)
                self.set_permissions(tmp)
                os.replace(tmp, entry)
                stored.append(entry)
    except OSError as err:
        for entry in stored:
            with contextlib.suppress(OSError):
                entry.unlink()
        outputs = ", ".join(str(o) for o, _ in pairs)
        print(f"featlearn: Snakemake's output cache ($SNAKEMAKE_OUTPUT_CACHE={self.path}) could not take {outputs} "
              f"({type(err).__name__}: {err}); they stay in results/ only and the build goes on. Make room there "
              f"(or create the folder, or point $SNAKEMAKE_OUTPUT_CACHE at a writable one) so that other clones can "
              f"take them, or run without --cache", file=sys.stderr)
        return
    for output, entry in pairs:
        link = Path(output).with_name(f".{Path(output).name}.{os.getpid()}.link")
        os.symlink(entry, link)
        os.replace(link, output)
        logger.info(f"Symlinking output file {output} from cache.")


def check_cache_location(caching: bool) -> None:
    """Stop before any job when ``--cache`` is on and $SNAKEMAKE_OUTPUT_CACHE is no writable folder: Snakemake would
    compute every cached job and then fail to store it ("Cannot access cache location")."""
    from featlearn.config import ConfigError

    location = os.environ.get("SNAKEMAKE_OUTPUT_CACHE")
    if not caching or not location:
        return
    if not Path(location).is_dir():
        raise ConfigError(f"--cache: $SNAKEMAKE_OUTPUT_CACHE={location} is not a folder, so no result could be "
                          f"cached there; create it (mkdir -p '{location}'), point the variable at the shared cache, "
                          "or run without --cache")
    if not os.access(location, os.W_OK | os.X_OK):
        raise ConfigError(f"--cache: $SNAKEMAKE_OUTPUT_CACHE={location} is not writable by this user, so no new "
                          "result could be cached there; fix its permissions, point the variable at a writable "
                          "folder, or run without --cache")


def incomplete_markers(snakemake_dir: Path = Path(".snakemake")) -> dict[str, Path]:
    """Each output Snakemake marked incomplete (a job started, never seen finishing), with its marker file: the
    output's path, base64-encoded and cut into folder names of at most NAME_MAX characters ('@' before each cut)."""
    found = {}
    root = snakemake_dir / "incomplete"
    for marker in root.rglob("*") if root.is_dir() else ():
        parts = marker.relative_to(root).parts
        if not marker.is_file() or any(not p.startswith("@") for p in parts[:-1]):
            continue
        try:
            found[base64.urlsafe_b64decode("".join(p.removeprefix("@") for p in parts)).decode()] = marker
        except ValueError:  # migration_underway, or anything else Snakemake keeps there
            continue
    return found


def dry_run(argv: list[str] | None = None) -> bool:
    """Whether this Snakemake call is a dry run (-n, --dry-run): Snakemake says so only once it executes, after the
    Snakefile is parsed (``workflow.dryrun`` reads False while planning), so its own parser reads the command line.
    False outside the snakemake command (a job, the API, a test)."""
    argv = sys.argv if argv is None else argv
    if not argv or "snakemake" not in (Path(argv[0]).name, Path(argv[0]).parent.name):  # `python -m snakemake`
        return False
    if not any(a in ("--dry-run", "--dryrun") or (a[:1] == "-" != a[1:2] and "n" in a) for a in argv[1:]):
        return False  # building the parser takes a second
    from snakemake.cli import get_argument_parser

    known, _ = get_argument_parser().parse_known_args(argv[1:])
    return bool(known.dryrun)


def plan_unwritten(unwritten: set[str]) -> None:
    """Have Snakemake plan as if each file of ``unwritten`` (absolute paths, a live set) were written just now: it
    exists, is newer than everything, and its content is new. A dry run writes no stamp (a real build writes them
    while planning, before Snakemake looks), so without this its plan missed every edit and failed in a fresh clone.
    Patched on Snakemake's file class, whose existence, date, size and checksum checks all go through these four
    methods."""
    from snakemake.io import Mtime, _IOFile

    if getattr(_IOFile, "featlearn_unwritten", None) is unwritten:
        return
    exists_local, mtime_uncached = _IOFile.exists_local, _IOFile.mtime_uncached
    size_local, is_checksum_eligible = _IOFile.size_local, _IOFile.is_checksum_eligible
    now = time.time()

    def unwritten_file(f: Any) -> bool:
        return os.path.abspath(f.file) in unwritten

    async def exists(self: Any) -> bool:
        return unwritten_file(self) or await exists_local(self)

    async def mtime(self: Any, skip_storage: bool = False) -> Any:
        return Mtime(local=now) if unwritten_file(self) else await mtime_uncached(self, skip_storage)

    async def size(self: Any) -> int:
        return 0 if unwritten_file(self) else await size_local(self)

    async def eligible(self: Any, threshold: Any) -> bool:  # not eligible: never "the same checksum as recorded"
        return not unwritten_file(self) and await is_checksum_eligible(self, threshold)

    _IOFile.exists_local, _IOFile.mtime_uncached, _IOFile.size_local = exists, mtime, size
    _IOFile.is_checksum_eligible = eligible
    _IOFile.featlearn_unwritten = unwritten


def before_planning(workflow: Any, change: Callable[[Any], None]) -> None:
    """Apply ``change`` to the DAG settings Snakemake plans with (``workflow.dag_settings``, what --forcerun and
    --max-checksum-file-size set). Snakemake's API hands the workflow those settings only after the Snakefile is
    parsed, replacing any change made while parsing, so the change runs when planning starts (``_prepare_dag``)."""
    prepare = workflow._prepare_dag

    def changed_then_prepared(*args: Any, **kwargs: Any) -> Any:
        change(workflow.dag_settings)
        return prepare(*args, **kwargs)

    workflow._prepare_dag = changed_then_prepared


def compare_by_content(workflow: Any, size: int = CHECKSUM_BYTES) -> None:
    """Let Snakemake compare an input newer than its job's outputs by content up to ``size`` bytes, not 1 MB: a
    dataset copied back identical, or rebuilt bit for bit, then reruns nothing (by date alone it retrained every
    run reading it). Snakemake records the checksums of a job's inputs when the job ends. A value given on the
    command line (--max-checksum-file-size) is kept."""
    from snakemake.settings.types import DAGSettings

    def raised(settings: Any) -> None:
        if settings.max_checksum_file_size == DAGSettings.max_checksum_file_size:
            settings.max_checksum_file_size = size

    before_planning(workflow, raised)


def force(workflow: Any, paths: Iterable[str]) -> None:
    """Have Snakemake rerun the jobs making ``paths``, and so every job of this call reading them, as
    ``--forcerun`` does (a forced file is also a target)."""
    paths = set(paths)

    def forced(settings: Any) -> None:
        settings.forcerun = frozenset(settings.forcerun) | paths

    if paths:
        before_planning(workflow, forced)


def rebuild_missing(workflow: Any, paths: Iterable[str]) -> list[str]:
    """Force the jobs of those of ``paths`` that are missing (a link into the cache whose entry is gone counts):
    Snakemake does not rebuild a missing intermediate file whose readers are up to date, so "delete it and rerun"
    rebuilt nothing. Returns the paths forced."""
    missing = [p for p in paths if not os.path.exists(p)]
    force(workflow, missing)
    return missing


def damaged_inputs(dag: Any) -> list[tuple[str, str, list[str]]]:
    """Each input that changed since the outputs of a job that would run were made (Snakemake's ``updated_input``)
    and whose content does not check out (``file_problem``), with its problem and the outputs that job would
    delete before reading it. Inputs another job of this build rewrites first are left to it."""
    jobs = list(dag.needrun_jobs())
    rewritten = {str(f) for job in jobs for f in job.output}
    found: dict[str, tuple[str, list[str]]] = {}
    for job in jobs:
        existing = [str(f) for f in job.output if os.path.exists(f)]
        for f in map(str, dag.reason(job).updated_input) if existing else ():
            if f in rewritten or Path(f).suffix not in (".pt", ".nc"):
                continue
            if f not in found and (problem := file_problem(f)) is not None:
                found[f] = (problem, [])
            if f in found:
                found[f][1].extend(existing)
    return [(f, problem, outputs) for f, (problem, outputs) in found.items()]


SIGTERM_SEEN: list[int] = []


def note_sigterm() -> None:
    """Remember a SIGTERM before Snakemake's own handler (its scheduler's, installed before onstart) lets the
    running jobs finish; ``sigterm_message`` then says what happened, where Snakemake says only that a job did not
    complete."""
    previous = signal.getsignal(signal.SIGTERM)

    def noted(signum: int, frame: Any) -> None:
        SIGTERM_SEEN.append(signum)
        if callable(previous):
            previous(signum, frame)

    signal.signal(signal.SIGTERM, noted)


def sigterm_message() -> str | None:
    """What a build stopped by SIGTERM tells its user, or None when none came."""
    if not SIGTERM_SEEN:
        return None
    return ("featlearn: snakemake was stopped by SIGTERM (a scheduler's time limit, `kill`, a closed session): it let "
            "the jobs already running finish (their results are kept) and started no new one; a training job that "
            "received the signal too wrote a checkpoint (results/<scale>/runs/…/*.ckpt) and resumes from it. Rerun "
            "the same command to build the rest")
