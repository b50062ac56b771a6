"""``grokaudit train CONFIG.toml -o OUT.parquet``: the command the core's CLI loads lazily.

Every :class:`~.config.TrainConfig` field is also a flag that overrides the sweep file (a flag
replaces the key in ``[base]`` and removes it from ``[grid]``). Parsing lives here; the work is
:func:`~.sweep.run_sweep`.
"""

from __future__ import annotations

import inspect
import os
import re
import shlex
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import MISSING, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
from grokaudit.errors import ConfigError, ErrorCode, MissingExtraError

from . import config as _config
from .config import TrainConfig

if TYPE_CHECKING:
    from .sweep import RunSpec


def _field_comments() -> dict[str, str]:
    """The comment after each field in config.py: one source for the docs and ``--help``."""
    src = inspect.getsource(_config.TrainConfig)
    return {m.group(1): m.group(2).strip()
            for m in re.finditer(r"^\s+(\w+): [^=]+=[^#\n]*#(.*)$", src, re.M)}


def _config_options(func: Any) -> Any:
    from .recipes import RECIPE_FIELDS, RECIPES

    comments = _field_comments()
    for f in reversed(fields(TrainConfig)):
        default = f.default if f.default is not MISSING else None
        flag = "--" + f.name.replace("_", "-")
        if f.name in RECIPE_FIELDS:
            help_ = f"{comments.get(f.name, '')} [default: from CONFIG, else the recipe's]"
        elif f.name == "recipe":
            help_ = (f"{comments.get(f.name, '')}: {', '.join(RECIPES)} "
                     f"[default: from CONFIG, else {default!r}]")
        else:
            help_ = f"{comments.get(f.name, '')} [default: from CONFIG, else {default!r}]"
        t = str(f.type)
        if t.startswith("bool"):
            opt = click.option(f"{flag}/--no-{f.name.replace('_', '-')}", f.name, default=None,
                               help=help_)
        else:
            typ = int if t.startswith("int") else float if t.startswith("float") else str
            opt = click.option(flag, f.name, type=typ, default=None, help=help_)
        func = opt(func)
    return func


@click.command(name="train", context_settings={"help_option_names": ["-h", "--help"],
                                                "max_content_width": 100})
@click.argument("config_file", metavar="CONFIG.toml", type=click.Path(dir_okay=False))
@click.option("-o", "--output", required=True, type=click.Path(),
              help="Parquet log to write (atomically). With --shard, a folder gets "
                   "shard-I-of-N.parquet, and '{shard}' in a file name is replaced by I-of-N.")
@click.option("--device", default="auto", show_default=True,
              type=click.Choice(["auto", "cpu", "cuda"]), help="Where to train.")
@click.option("--resume/--no-resume", default=False, show_default=True,
              help="Continue from the checkpoint when one exists.")
@click.option("--overwrite", is_flag=True, default=False,
              help="Start over even when a checkpoint or a partial log of this sweep exists "
                   "(they are replaced).  Without it (or --resume), that is refused.  "
                   "[default: off]")
@click.option("--checkpoint", "checkpoint_path", type=click.Path(), default=None,
              help="Checkpoint file; with --engine ray, the folder of the groups' checkpoints "
                   "and logs.  [default: OUT + '.ckpt'; with ray, OUT + '.ray']")
@click.option("--checkpoint-minutes", type=float, default=5.0, show_default=True,
              help="Wall minutes between checkpoints (checked at log points).")
@click.option("--max-minutes", type=float, default=None,
              help="Stop cleanly after this many wall minutes (checkpoint, partial log).  "
                   "[default: none, no limit]")
@click.option("--shard", default=None, metavar="I/N",
              help="Train only shard I of N (0 ≤ I < N) of the sweep's runs.  "
                   "[default: none, every run]")
@click.option("--threads", type=int, default=None,
              help="torch CPU threads; with --engine ray, per task (and the CPUs each task "
                   "asks Ray for).  [default: torch's choice; with ray, 1]")
@click.option("--engine", default="process", show_default=True,
              type=click.Choice(["process", "ray"]),
              help="process: the groups train here, one after another.  ray: one Ray task per "
                   "group (one GPU each when the cluster has GPUs) on the cluster RAY_ADDRESS "
                   "names, else on a local Ray instance; same log.")
@click.option("--max-retries", type=int, default=3, show_default=True,
              help="With --engine ray: how often a group whose worker is lost (killed, out of "
                   "memory, node gone) is retried, from its checkpoint.")
@click.option("--progress", default="auto", show_default=True,
              type=click.Choice(["auto", "bar", "lines", "none"]),
              help="Progress display: a bar on a terminal, plain lines otherwise.")
@click.option("--manifest/--no-manifest", default=True, show_default=True,
              help="Write OUT's MANIFEST.toml (config, command, versions, device, wall time).")
@_config_options
def train(config_file: str, output: str, device: str, resume: bool, overwrite: bool,
          checkpoint_path: str | None, checkpoint_minutes: float, max_minutes: float | None,
          shard: str | None, threads: int | None, engine: str, max_retries: int,
          progress: str, manifest: bool, **overrides: Any) -> None:
    """Train the sweep in CONFIG.toml and write the canonical log to OUT.

    Runs whose shapes match train together as one batched model. Flags named after config
    keys override CONFIG (and fix that key: it leaves the grid).
    """
    import importlib.util

    if importlib.util.find_spec("torch") is None:
        raise MissingExtraError("`grokaudit train` needs torch, which is not installed; fix: "
                                "pip install 'grokaudit[train]'")
    if engine == "ray":
        from .ray_engine import require_ray

        require_ray()
    _train(config_file, output, device, resume, checkpoint_path, checkpoint_minutes,
           max_minutes, shard, threads, progress, manifest,
           {k: v for k, v in overrides.items() if v is not None}, overwrite=overwrite,
           engine=engine, max_retries=max_retries)


def _refuse_discarding(out: Path, ckpt: Path, work: Path | None = None) -> None:
    """Refuse (exit 2) to start a sweep over a checkpoint or a partial log of it, over the
    groups' checkpoints and logs an unfinished ``--engine ray`` run left in ``work``, or over
    an existing log (a finished sweep's, this one's or another's): that would replace work a
    previous run saved. ``--resume`` continues unfinished work, ``--overwrite`` replaces it."""
    from .ray_engine import saved_work

    what, replaced = None, "the checkpoint and the partial log"
    if ckpt.exists():
        what = f"a checkpoint of an unfinished sweep exists ({ckpt})"
    elif work is not None and saved_work(work):
        what = (f"an unfinished --engine ray run of this sweep left its groups' checkpoints and "
                f"logs in {work}")
        replaced = "those files and any partial log"
    elif out.is_file() and _is_partial(out):
        what = f"{out} is a partial log (a sweep stopped before its end)"
    elif os.path.lexists(out):
        _refuse_existing_log(out)
    if what is not None:
        raise ConfigError(f"{what}: continue it with --resume, or start over with --overwrite "
                          f"({replaced} are replaced)",
                          code=ErrorCode.WORK_WOULD_BE_LOST, option="--resume")


def _refuse_existing_log(out: Path) -> None:
    """A finished log (or another file) at ``-o`` is never replaced without ``--overwrite``:
    it may hold hours of another sweep's training."""
    raise ConfigError(f"{out} already exists (a finished sweep's log, or another file), and "
                      "there is nothing of it to resume: choose another -o, or replace it with "
                      "--overwrite", code=ErrorCode.WORK_WOULD_BE_LOST, option="--overwrite")


def _is_partial(path: Path) -> bool:
    """Whether a Parquet log written by ``train`` says it is partial (provenance
    ``complete: false``); a file that is not such a log is not partial."""
    import json

    import pyarrow.parquet as pq
    from grokaudit.schema import PROVENANCE_KEY

    try:
        meta = pq.read_schema(path).metadata or {}
        prov = json.loads(meta.get(PROVENANCE_KEY, b"{}"))
    except Exception:  # noqa: BLE001 - not a readable log: nothing of ours to lose
        return False
    return isinstance(prov, dict) and prov.get("complete") is False


def _train(config_file: str, output: str, device: str, resume: bool,
           checkpoint_path: str | None, checkpoint_minutes: float, max_minutes: float | None,
           shard_text: str | None, threads: int | None, progress: str, manifest: bool,
           overrides: dict[str, Any], overwrite: bool = False, engine: str = "process",
           max_retries: int = 3) -> None:
    import torch

    from .manifest import recipe_echo
    from .sweep import check_fits, expand, load_sweep

    _check_options(threads=threads, max_retries=max_retries, engine=engine, device=device,
                   max_minutes=max_minutes, checkpoint_minutes=checkpoint_minutes)
    if threads is not None:
        torch.set_num_threads(threads)
    sw = load_sweep(config_file).with_overrides(overrides)
    specs, out = _shard(expand(sw), Path(output), shard_text)
    if out.suffix.lower() not in (".parquet", ".pq"):
        raise ConfigError(f"-o {output}: the log is Parquet; give a .parquet path",
                          code=ErrorCode.OUTPUT_EXTENSION)
    ray = engine == "ray"
    ckpt, work = _saved_state_paths(out, checkpoint_path, ray)
    # checked before any training: not the sweep file, not each other, not a device, a
    # folder or a link; then no saved work replaced, and every group fits the memory
    _check_paths(config_file, out, ckpt, work, ray=ray, manifest=manifest,
                 named=checkpoint_path is not None)
    _check_saved_state(out, ckpt, work, ray=ray, resume=resume, overwrite=overwrite,
                       manifest=_manifest_path(out) if manifest else None)
    if not ray:  # with ray, the groups train on the cluster's nodes, not this machine
        check_fits(specs, device)
    out.parent.mkdir(parents=True, exist_ok=True)
    command = "grokaudit train " + " ".join(shlex.quote(a) for a in sys.argv[2:]) \
        if len(sys.argv) > 2 and Path(sys.argv[0]).name.startswith("grokaudit") \
        else "grokaudit train " + shlex.quote(config_file) + " -o " + shlex.quote(output)
    echo = recipe_echo(sw, specs)
    prov = {"producer_detail": "grokaudit.reference_runs", "sweep": sw.name,
            "config_file": str(config_file), "runs": len(specs), "command": command,
            "recipe": echo["names"]}
    with _trainer_memory():
        table, complete, wall, dev = _run_engine(
            specs, ray=ray, device=device, resume=resume, ckpt=ckpt, work=work,
            checkpoint_minutes=checkpoint_minutes, max_minutes=max_minutes, threads=threads,
            progress=progress, max_retries=max_retries, provenance=prov)
    if table.empty:
        click.echo("stopped before the first log point; nothing written", err=True)
        return
    _write_log(table, out, {**prov, "complete": complete},
               manifest={"command": command, "sweep_file": str(config_file),
                         "sweep": {"name": sw.name, "base": sw.base,
                                   "grid": {k: list(v) for k, v in sw.grid.items()}},
                         "device": dev, "wall_seconds": wall, "n_runs": len(specs),
                         "n_rows": len(table), "complete": complete, "recipe": echo}
               if manifest else None)
    if complete:  # the log now holds everything the checkpoint (or the groups' files) did
        _clear_saved_state(ckpt, work, ray)
    state = "complete" if complete else "partial (resume with --resume)"
    click.echo(f"wrote {out} ({len(table)} rows, {len(specs)} runs, {state}, "
               f"{wall:.0f} s)", err=True)


def _run_engine(specs: list[RunSpec], *, ray: bool, device: str, resume: bool, ckpt: Path,
                work: Path, checkpoint_minutes: float, max_minutes: float | None,
                threads: int | None, progress: str, max_retries: int,
                provenance: dict[str, Any]) -> tuple[Any, bool, float, str]:
    """Train the runs on the chosen engine: the table, whether it is complete, the wall
    seconds and the device."""
    import torch

    if ray:
        from .ray_engine import run_ray

        rres = run_ray(specs, work=work, device=device, resume=resume,
                       checkpoint_minutes=checkpoint_minutes, max_minutes=max_minutes,
                       threads=threads, progress=progress, max_retries=max_retries,
                       provenance=provenance)
        return rres.table, rres.complete, rres.wall_seconds, rres.device
    from .sweep import run_sweep

    res = run_sweep(specs, device=device, checkpoint=ckpt, resume=resume,
                    checkpoint_minutes=checkpoint_minutes, max_minutes=max_minutes,
                    progress=progress)
    dev = str(torch.device("cuda" if device == "auto" and torch.cuda.is_available()
                           else ("cpu" if device == "auto" else device)))
    return res.table, res.complete, res.wall_seconds, dev


@contextmanager
def _trainer_memory() -> Iterator[None]:
    """Memory that runs out while training (Python's or numpy's ``MemoryError``, a torch
    allocation that fails on the CPU or on CUDA) is ``OUT_OF_MEMORY`` with the trainer's
    advice: the command line's own handler speaks of auditing fewer files."""
    import torch

    advice = ("out of memory while training; train a smaller model or task (p, d_emb, hidden, "
              "d_model, parity_samples), fewer steps or log points, or fewer runs together "
              "(split the grid, or --shard), or use --device with more memory")
    try:
        yield
    except MemoryError:
        raise ConfigError(advice, code=ErrorCode.OUT_OF_MEMORY) from None
    except RuntimeError as exc:
        # torch's CPU allocator raises a plain RuntimeError ("can't allocate memory")
        if isinstance(exc, torch.cuda.OutOfMemoryError) or "allocate" in str(exc):
            raise ConfigError(advice, code=ErrorCode.OUT_OF_MEMORY) from None
        raise


def _check_options(*, threads: int | None, max_retries: int, engine: str, device: str,
                   max_minutes: float | None, checkpoint_minutes: float) -> None:
    """The options' ranges (:func:`~.config.check_run_options`), and a CUDA device for
    ``--device cuda`` (process engine)."""
    import torch

    from .config import check_run_options

    check_run_options(threads=threads, max_retries=max_retries, engine=engine,
                      max_minutes=max_minutes, checkpoint_minutes=checkpoint_minutes)
    # with Ray the GPUs are the cluster's, not this machine's: checked once connected
    if engine == "process" and device == "cuda" and not torch.cuda.is_available():
        raise ConfigError("--device cuda: no CUDA device is visible; use --device cpu or auto", code=ErrorCode.INVALID_OPTION)


def _shard(specs: list[RunSpec], out: Path, shard_text: str | None
           ) -> tuple[list[RunSpec], Path]:
    """With ``--shard I/N``: this shard's runs, and the output named for it (``{shard}`` in
    the name, or ``shard-I-of-N.parquet`` in a folder)."""
    from .sweep import parse_shard, shard

    if shard_text is None:
        return specs, out
    i, n = parse_shard(shard_text)
    specs = shard(specs, i, n)
    tag = f"{i}-of-{n}"
    if "{shard}" in out.name:
        out = out.with_name(out.name.replace("{shard}", tag))
    elif out.suffix == "" or out.is_dir():
        out = out / f"shard-{tag}.parquet"
    if not specs:
        raise ConfigError(f"--shard {shard_text}: this shard holds no runs "
                          f"(the sweep has fewer runs than shards)", code=ErrorCode.INVALID_OPTION)
    return specs, out


def _saved_state_paths(out: Path, checkpoint_path: str | None, ray: bool) -> tuple[Path, Path]:
    """The process engine's checkpoint file and the ray engine's working folder: each engine
    takes ``--checkpoint`` as its own, and refuses to start over the other's default one."""
    from .ray_engine import default_work_dir

    own = Path(checkpoint_path) if checkpoint_path else None
    ckpt = own if own is not None and not ray else out.with_name(out.name + ".ckpt")
    work = own if own is not None and ray else default_work_dir(out)
    return ckpt, work


def _manifest_path(out: Path) -> Path:
    """The manifest written beside the log: ``<stem>.MANIFEST.toml``."""
    return out.with_name(out.stem + ".MANIFEST.toml")


def _check_paths(config_file: str, out: Path, ckpt: Path, work: Path, *, ray: bool,
                 manifest: bool, named: bool) -> None:
    """Every path ``train`` writes or replaces — the log, its manifest, the checkpoint (or,
    with ray, the working folder) — checked before any work against the config file and each
    other (:func:`grokaudit.outputs.resolve_output`): ``OUTPUT_IS_INPUT``, ``OUTPUT_CLASH``,
    a device, a folder or a link. ``--overwrite`` never permits writing over an input."""
    from grokaudit.outputs import resolve_output

    inputs = [config_file]
    done = [resolve_output(out, flag="-o", inputs=inputs, allow_stdout=False,
                           suffixes=(".parquet", ".pq"))]
    if manifest:
        done.append(resolve_output(_manifest_path(out), flag="-o's MANIFEST.toml",
                                   inputs=inputs, allow_stdout=False, others=done))
    # the process engine writes it; either engine deletes it (--overwrite, a finished sweep)
    flag = "--checkpoint" if named and not ray else "the checkpoint (-o + '.ckpt')"
    done.append(resolve_output(ckpt, flag=flag, inputs=inputs, allow_stdout=False,
                               others=done))
    if ray:
        _check_work_folder(work, Path(config_file), [o.path for o in done if o.path])


def _check_work_folder(work: Path, config: Path, outputs: list[Path]) -> None:
    """The ray engine's working folder (``--checkpoint``): not the config file nor a folder
    holding it, not an output nor a folder holding one, and a folder."""
    real = work.parent.resolve() / work.name
    if config.exists() and ((work.exists() and os.path.samefile(config, work))
                            or real in config.resolve().parents):
        raise ConfigError(f"--checkpoint {work}: the working folder of --engine ray would "
                          f"hold or replace the config file {config}; choose another folder",
                          code=ErrorCode.OUTPUT_IS_INPUT, option="--checkpoint")
    for o in outputs:
        if o == real or real in o.parents:
            raise ConfigError(f"--checkpoint {work}: the working folder of --engine ray and "
                              f"{o} would share a path; choose another folder",
                              code=ErrorCode.OUTPUT_CLASH, option="--checkpoint")
    if work.exists() and not work.is_dir():
        raise ConfigError(f"--checkpoint {work}: with --engine ray this names a folder (the "
                          "groups' checkpoints and logs), and this is a file",
                          code=ErrorCode.INVALID_OPTION, option="--checkpoint")


def _check_saved_state(out: Path, ckpt: Path, work: Path, *, ray: bool, resume: bool,
                       overwrite: bool, manifest: Path | None = None) -> None:
    """``--resume`` continues this engine's saved state (never the other engine's);
    ``--overwrite`` clears both; neither refuses to discard a log, its manifest (``manifest``,
    None with ``--no-manifest``) or saved state. A file at the checkpoint's path that is not a
    checkpoint is never touched, whatever the flags."""
    from .checkpoint import refuse_foreign
    from .ray_engine import clear, saved_work

    if resume and overwrite:
        raise ConfigError("--resume and --overwrite contradict each other: continue the "
                          "checkpoint, or start over", code=ErrorCode.INVALID_OPTION)
    if not resume or ray:  # the process engine's --resume reads it, and names what it is
        refuse_foreign(ckpt)  # a file there that is not a checkpoint is never touched
    if not resume and not overwrite:
        _refuse_discarding(out, ckpt, work)
        if manifest is not None and os.path.lexists(manifest):
            _refuse_existing_manifest(manifest, out)
    if resume:
        mine, theirs, other = (work, ckpt, "process") if ray else (ckpt, work, "ray")
        saved = bool(saved_work(mine)) if ray else mine.exists()
        if not saved and (theirs.exists() if ray else saved_work(theirs)):
            raise ConfigError(f"{theirs} was left by --engine {other}: continue it with "
                              f"--engine {other} --resume, or start over with --overwrite",
                              code=ErrorCode.INCOMPATIBLE_INPUTS, option="--engine")
        # nothing saved to continue: training again would replace a finished log
        partial = out.is_file() and _is_partial(out)
        if not saved and os.path.lexists(out) and not partial:
            _refuse_existing_log(out)
        # the manifest of the sweep being continued (saved work, or a partial log) is its own
        if not saved and not partial and manifest is not None and os.path.lexists(manifest):
            _refuse_existing_manifest(manifest, out)
    if overwrite:  # what either engine saved of this sweep is replaced
        clear(work)
        if ray:
            ckpt.unlink(missing_ok=True)


def _refuse_existing_manifest(manifest: Path, out: Path) -> None:
    """The manifest ``train`` writes beside the log (``<stem>.MANIFEST.toml``) never replaces an
    existing file without ``--overwrite``: another log's manifest, or anything else."""
    raise ConfigError(f"{manifest} already exists (another log's MANIFEST, or another file), "
                      f"and the manifest of -o {out} would replace it: choose another -o, "
                      "replace it with --overwrite, or write no manifest with --no-manifest",
                      code=ErrorCode.WORK_WOULD_BE_LOST, option="--overwrite")


def _write_log(table: Any, out: Path, provenance: dict[str, Any],
               manifest: dict[str, Any] | None) -> None:
    """The log at ``out``, and its manifest beside it (``<stem>.MANIFEST.toml``) when asked."""
    from grokaudit.schema import write_table

    from .manifest import write_manifest

    write_table(table, out, provenance)
    if manifest is not None:
        write_manifest(_manifest_path(out), **manifest)


def _clear_saved_state(ckpt: Path, work: Path, ray: bool) -> None:
    """The engine's checkpoint (or the groups' files), once the log holds all it did."""
    from .ray_engine import clear

    if ray:
        clear(work)
    else:
        ckpt.unlink(missing_ok=True)
