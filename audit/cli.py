"""The command line: a thin shell over library functions.

This is the composition root: the only module that wires the adapters, the trainer and the
adversarial suite to commands, and it imports each lazily, when its command runs, so that
``grokaudit check`` never imports torch or an adapter's optional dependency.
"""

from __future__ import annotations

import dataclasses
import importlib
import os
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

import click

from . import progress
from .errors import ConfigError, ErrorCode, GrokauditError, flag_spelling
from .options import (
    LAYOUT_PARAMS,
    acc_scale_options,
    audit_options,
    audit_overrides,
    column_names,
    config_options,
    grok_options,
    input_options,
    layout_of,
    limit_overrides,
    parse_pairs,
    shared_overrides,
    split_list,
    threshold_option,
)
from .signals import HungUp, Terminated, ctrl_c_kept, sighup_raises, sigterm_raises
from .text import safe
from .version import __version__

if TYPE_CHECKING:
    from .engine import Engine
    from .kernels import Kernel

#: Commands that live outside the core: name -> ("module:attribute", one-line help).
LAZY_COMMANDS: dict[str, tuple[str, str]] = {
    "train": ("grokaudit.reference_runs.cli:train",
              "Train reference grokking runs from a sweep TOML and write the canonical log."),
    "convert": ("grokaudit.adapters.cli:convert",
                "Convert an external log (W&B, TensorBoard, MLflow, CSV, NPZ) to canonical Parquet."),
    "formats": ("grokaudit.adapters.cli:formats",
                "List the log formats grokaudit reads, and whether their extra is installed."),
}


class LazyGroup(click.Group):
    """A click group whose extra commands are imported only when invoked."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        # the command line as typed, for the audit trail (never sys.argv: under a test runner
        # or an embedding program that is someone else's)
        ctx.meta["grokaudit.argv"] = list(args)
        try:
            return super().parse_args(ctx, args)
        except click.UsageError as exc:  # `grokaudit --nope`
            _usage_error(exc)
            raise

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(set(super().list_commands(ctx)) | set(LAZY_COMMANDS))

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        cmd = super().get_command(ctx, cmd_name)
        if cmd is not None or cmd_name not in LAZY_COMMANDS:
            return cmd
        target, short = LAZY_COMMANDS[cmd_name]
        mod_name, attr = target.split(":")
        try:
            mod = importlib.import_module(mod_name)
            found = getattr(mod, attr)
        except (ImportError, AttributeError) as exc:
            return _unavailable(cmd_name, short, exc)
        return found if isinstance(found, click.Command) else None

    def invoke(self, ctx: click.Context) -> Any:
        """Run the command with the CLI's one error net: a :class:`GrokauditError` becomes one
        line on stderr and exit 2; so does an unexpected exception (a bug), so that a crash can
        never exit 1, which means "critical findings" (``GROKAUDIT_TRACEBACK=1`` re-raises).
        A Ctrl-C is one line and exit 130 (click's own "Aborted!" exits 1)."""
        try:
            # the library's messages name --by, not by=; Ctrl-C stays Python's during reads
            with flag_spelling(), ctrl_c_kept(), sigterm_raises(), sighup_raises():
                return super().invoke(ctx)
        except GrokauditError as exc:
            fail(exc)
        except KeyboardInterrupt:
            interrupted()
        except HungUp:
            say_err("hung up (SIGHUP)")
            sys.exit(129)
        except Terminated:
            say_err("terminated (SIGTERM)")
            sys.exit(143)
        except click.UsageError as exc:  # an unknown flag, a bad value, a missing argument
            _usage_error(exc)
            raise
        except (click.exceptions.Exit, click.ClickException, click.Abort, SystemExit):
            raise
        except MemoryError:  # numpy's, or Arrow's ArrowMemoryError
            _fail_line(f"out of memory{_declared(ctx)}: the log does not fit in the memory "
                       "this process may use; audit fewer files or runs at a time (one study per "
                       "command), or use a machine with more memory",
                       ErrorCode.OUT_OF_MEMORY, ctx)
        except OSError as exc:
            import errno

            if exc.errno not in (errno.EPIPE, errno.ENOSPC, errno.EIO, errno.EDQUOT,
                                 errno.EFBIG, errno.EBADF):
                if os.environ.get("GROKAUDIT_TRACEBACK"):
                    raise
                if exc.filename is not None:  # a path no check before named: too long, not
                    # a folder where one was expected, a device or socket under a log's name
                    _fail_line(f"{exc.filename}: cannot be read ({exc.strerror or exc}); "
                               "name a readable file or folder", ErrorCode.FILE_UNREADABLE,
                               ctx)
                say_err(f"error: internal error ({type(exc).__name__}: {safe(exc)}); this is "
                        "a bug in grokaudit, please report it (GROKAUDIT_TRACEBACK=1 shows the "
                        "traceback)")
                ctx.exit(2)
            if exc.errno == errno.EPIPE:  # stdout closed (| head): no more to write there
                _silence_stdout()
            _fail_line(f"cannot write the output ({exc.strerror or exc})",
                       ErrorCode.OUTPUT_NOT_WRITABLE, ctx)
        except Exception as exc:  # noqa: BLE001 - the last net, see the docstring
            if os.environ.get("GROKAUDIT_TRACEBACK"):
                raise
            say_err(f"error: internal error ({type(exc).__name__}: {safe(exc)}); this is a "
                    "bug in grokaudit, please report it (GROKAUDIT_TRACEBACK=1 shows the "
                    "traceback)")
            ctx.exit(2)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows: list[tuple[str, str]] = []
        for name in self.list_commands(ctx):
            if name in LAZY_COMMANDS:
                rows.append((name, LAZY_COMMANDS[name][1]))
            else:
                cmd = super().get_command(ctx, name)
                if cmd is not None and not cmd.hidden:
                    rows.append((name, cmd.get_short_help_str(limit=90)))
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)


def _usage_error(exc: click.UsageError) -> None:
    """A usage error of the command line as one line with its code and exit 2, like every
    other refusal (click prints three, with no code): ``UNKNOWN_OPTION`` for a flag no
    command has, ``INVALID_OPTION`` for the rest (a value of the wrong type or range, a
    missing argument, an unknown command). Returns only for a bare command that shows its
    help (click's own)."""
    if isinstance(exc, getattr(click.exceptions, "NoArgsIsHelpError", ())):
        return
    code = (ErrorCode.UNKNOWN_OPTION if isinstance(exc, click.NoSuchOption)
            else ErrorCode.INVALID_OPTION)
    where = exc.ctx.command_path if exc.ctx is not None else "grokaudit"
    say_err(f"error: {safe(exc.format_message().rstrip('.'))}; see '{safe(where)} --help' "
            f"[{code.value}]")
    sys.exit(2)


def _fail_line(message: str, code: ErrorCode, ctx: click.Context) -> None:
    """One line on stderr with its code, exit 2 (the CLI's rule for every failure)."""
    say_err(f"error: {safe(message)} [{code.value}]")
    ctx.exit(2)


def _silence_stdout(stream: Any = None) -> None:
    """Point stdout (or ``stream``) at /dev/null, so that the interpreter's last flush of a
    closed pipe does not print a second error."""
    try:
        fd = os.open(os.devnull, os.O_WRONLY)
        os.dup2(fd, (sys.stdout if stream is None else stream).fileno())
        os.close(fd)
    except (OSError, ValueError, AttributeError):
        pass


def say_err(line: str) -> None:
    """``line`` on stderr; when stderr is a closed pipe, nothing (the exit code still says
    it: a failed write must not turn exit 2 or 130 into click's exit 1)."""
    try:
        click.echo(line, err=True)
    except OSError:
        _silence_stdout(sys.stderr)


def _declared(ctx: click.Context) -> str:
    """``reading a.parquet (declares 20000000 rows × 9 columns)``: what the inputs declared,
    from their metadata, for an out-of-memory message."""
    from .limits import describe

    paths = ctx.find_root().meta.get("grokaudit.inputs") or []
    return " reading " + ", ".join(describe(p) for p in paths) if paths else ""


def _unavailable(name: str, short: str, exc: BaseException) -> click.Command:
    missing = getattr(exc, "name", None) or str(exc)
    extra = {"torch": "train", "hypothesis": "test", "matplotlib": "report"}.get(
        str(missing).split(".")[0], None)
    fix = f"pip install 'grokaudit[{extra}]'" if extra else "reinstall grokaudit"

    @click.command(name=name, help=short, context_settings={"ignore_unknown_options": True})
    @click.argument("args", nargs=-1, type=click.UNPROCESSED)
    def stub(args: tuple[str, ...]) -> None:
        click.echo(f"error: `grokaudit {name}` needs {safe(missing)}, which is not installed; "
                   f"fix: {fix} [{ErrorCode.MISSING_EXTRA.value}]", err=True)
        sys.exit(2)

    return stub


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="grokaudit")
def cli() -> None:
    """grokaudit: which numbers in a grokking training log can be trusted."""


def fail(exc: GrokauditError) -> None:
    """Print ``exc`` as one safe line on stderr and exit 2."""
    say_err(f"error: {safe(exc)} [{exc.code.value}]")
    sys.exit(2)


def interrupted() -> None:
    """Ctrl-C: one line on stderr and exit 130 (128 + SIGINT, as a shell reports it), never 1
    (critical findings) or 2 (an input error)."""
    say_err("interrupted (Ctrl-C)")
    sys.exit(130)


def main(argv: list[str] | None = None) -> Any:
    """Console entry point (``grokaudit``, ``python -m grokaudit``)."""
    return cli.main(args=argv, prog_name="grokaudit", standalone_mode=True)


# ------------------------------------------------------------------------------------------
# printing a result: one emit() for every command
# ------------------------------------------------------------------------------------------

class Result(Protocol):
    """What :func:`emit` needs of a result: every :class:`grokaudit.results.Result` (the audit,
    the claims, the sensitivity grid, the suite) and ``inspect``'s description; its text comes
    from :func:`grokaudit.printing.render`."""

    @property
    def exit_code(self) -> int: ...

    def to_json(self, indent: int | None = 2) -> str: ...

    def json_chunks(self, indent: int | None = 2) -> Iterator[str]: ...


#: The extension a ``--json`` file must have: a JSON result never replaces a log (a CSV or
#: Parquet file named by mistake) or anything else that is not JSON.
JSON_SUFFIXES = (".json",)


def resolve_outputs(inputs: Sequence[str], **named: tuple[str | None, dict[str, Any]]
                    ) -> dict[str, Any]:
    """Resolve every output a command will write, before any work starts: ``named`` maps a
    key to ``(value, options of resolve_output)``; a ``None`` value is not asked for."""
    from .outputs import Output, resolve_output

    done: dict[str, Any] = {}
    others: list[Output] = []
    for key, (value, opts) in named.items():
        if value is None:
            done[key] = None
            continue
        out = resolve_output(value, inputs=inputs, others=tuple(others), **opts)
        others.append(out)
        done[key] = out
    return done


def emit(result: Result, render: Callable[[], str] | None = None, *, json_out: Any = None,
         quiet: bool = False) -> None:
    """Print ``result`` and exit with its exit code: the JSON (built only when asked) to its
    checked output, the text from ``render()`` unless the JSON went to stdout; ``quiet``
    prints only the result line."""
    if json_out is not None:
        from .text import safe_json

        # written as it is encoded: a million runs' JSON is never whole in memory
        chunks = result.json_chunks()
        if not json_out.is_stdout and progress.printer("json") is not None:
            chunks = progress.counted(chunks, progress.stopwatch("json"))
        json_out.write_chunks(chunks, transform=safe_json)
        if json_out.is_stdout:
            sys.exit(result.exit_code)
    if render is None:
        from .printing import render as print_result

        text = print_result(result)
    else:
        text = render()
    click.echo(text.rstrip("\n").splitlines()[-1] if quiet else text, nl=quiet)
    sys.exit(result.exit_code)


def _paths(path: str | Sequence[str]) -> list[str]:
    return [path] if isinstance(path, str) else list(path)


def _source(path: str | Sequence[str]) -> str:
    """How the log is named in messages and reports: its path, or the paths joined."""
    return ", ".join(_paths(path))


def _inputs(path: str | Sequence[str], config_file: str | None) -> list[str]:
    """What a command reads: the log(s), the config files a log file is read with (its
    same-stem JSON or YAML, ``hparams.yaml``… beside a file the adapters read, there or not
    yet: an output may be none of them), the ``--conditions-from`` table, and the grokaudit
    config file when one is named or found."""
    from pathlib import Path

    from .config import config_file_values
    from .loader import is_canonical
    from .roles import SIDECAR_NAMES

    found = config_file or config_file_values()[1]
    implicit: list[str] = []
    ctx = click.get_current_context(silent=True)
    params = ctx.params if ctx is not None else {}
    # a canonical table is read as it is, with no config file beside it, unless the adapters
    # are asked for (--format, --map, --run-from, --cond)
    adapters = any(params.get(k) for k in ("fmt", "maps", "run_from", "conds",
                                            *LAYOUT_PARAMS))
    for p in map(Path, _paths(path)):
        if p.is_file() and (adapters or not is_canonical(p)):
            cands = [p.with_suffix(x) for x in (".json", ".yaml", ".yml")]
            cands += [p.parent / n for n in SIDECAR_NAMES]
            # those not there yet too: an output written there would be read next time
            implicit += [str(c) for c in cands if c != p]
    joined = params.get("conditions_from")  # --conditions-from: read too, never an output
    if joined and Path(joined).is_file():
        implicit.append(str(joined))
    return _paths(path) + implicit + ([found] if found else [])


def _trail(cfg: Any, path: str | Sequence[str], params: Mapping[str, Any],
           config_file: str | None, hashes: Any = None, kernel: str | None = None) -> Any:
    """The audit trail of a command's result: the config file read (or where discovery looked),
    every changed setting, the input mapping, each input file's size and sha256 (``hashes``: a
    :class:`~grokaudit.trail.HashAhead` of the inputs started before the audit), the command,
    and the kernel that validated the log (``kernel``, recorded when not numpy)."""
    from .trail import make_trail
    from .version import __version__

    return make_trail(cfg, version=__version__,
                      inputs=_inputs(path, config_file) if hashes is None else hashes,
                      mapping=_input_mapping(params), config_file=config_file, discover=True,
                      command=_command(), kernel=kernel)


def _input_mapping(params: Mapping[str, Any]) -> dict[str, Any]:
    """How the inputs were read, as the trail records it: the reader flags given."""
    return {"--format": params.get("fmt"), "--map": list(params.get("maps") or ()),
            "--run-from": params.get("run_from"), "--cond": list(params.get("conds") or ()),
            "--acc-scale": params.get("acc_scale"),
            "--on-duplicate": params.get("on_duplicate"), **_layout_trail(params)}


def _command() -> tuple[str, ...]:
    """The command line as typed, for the trail (from the root context: never sys.argv)."""
    from .trail import command_line

    ctx = click.get_current_context(silent=True)
    return command_line(ctx.find_root().meta.get("grokaudit.argv") if ctx is not None else None)


def _layout_trail(params: Mapping[str, Any]) -> dict[str, Any]:
    """The shape options given (``--long``, ``--columns``, ``--conditions-from``, ``--on``),
    for the trail's input mapping."""
    return {f"--{k.replace('_', '-')}": params.get(k) for k in LAYOUT_PARAMS
            if params.get(k) is not None}


def _hash_ahead(paths: Sequence[str], config_file: str | None) -> Any:
    """The trail's sha256 of each input, computed while the audit reads it, and the inputs'
    sizes and times noted now, before they are read (:class:`~grokaudit.trail.HashAhead`: a
    file that changes while the audit runs is said in the trail). Called off if the command
    fails."""
    from .trail import HashAhead

    return click.get_current_context().with_resource(HashAhead(_inputs(paths, config_file)))


def _read(path: str | Sequence[str], params: dict[str, Any], cfg: Any,
          lazy: bool = False) -> Any:
    """The log at ``path`` read with the adapter options in ``params`` and the duplicate rule
    and size limits of ``cfg``; with ``lazy``, a single Parquet file is opened for
    column-by-column validation (``loader.read_source``)."""
    from .limits import Limits
    from .loader import read_any, read_source
    from .readers import ADAPTERS

    ctx = click.get_current_context(silent=True)
    if ctx is not None:  # named in an out-of-memory message
        ctx.find_root().meta["grokaudit.inputs"] = _paths(path)
    return (read_source if lazy else read_any)(_paths(path), params.get("fmt"),
                    mapping=parse_pairs(params.get("maps"), "--map"),
                    run_from=params.get("run_from"),
                    cond=parse_pairs(params.get("conds"), "--cond"),
                    on_duplicate=cfg.on_duplicate, limits=Limits.of(cfg), readers=ADAPTERS,
                    layout=layout_of(params))


# ------------------------------------------------------------------------------------------
# grokaudit check
# ------------------------------------------------------------------------------------------

def stream_options(f: Callable[..., Any]) -> Callable[..., Any]:
    """``--stream`` and ``--part-rows`` (``check``, ``report`` and the claims but
    ``precursor``)."""
    f = click.option("--part-rows", "part_rows", type=int, default=None, metavar="N",
                     help="with --stream: rows per part (default 2000000)")(f)
    return click.option(
        "--stream", is_flag=True,
        help="read a canonical Parquet file or hive dataset folder part by part, with memory "
             "bounded by the part: for logs larger than memory. The output is the same")(f)


@cli.command()
@click.argument("paths", nargs=-1, required=True, metavar="PATH...")
@audit_options
@click.option("--json", "json_out", default=None, metavar="PATH|-",
              help="write the versioned JSON result to PATH, a .json file (- for stdout, "
                   "replacing the text)")
@click.option("--report", "report_out", default=None, metavar="PATH",
              help="also write the self-contained HTML report to PATH (extra `report`)")
@click.option("--sensitivity", is_flag=True,
              help="re-run the audit with each free parameter moved over a small grid and "
                   "report which verdicts move (VERDICT_FRAGILE)")
@click.option("-v", "--verbose", is_flag=True,
              help="show every study's table and findings (shown by default for one study) "
                   "and informational findings")
@click.option("-q", "--quiet", is_flag=True, help="print only the result line")
@click.option("--engine", "engine_name", type=click.Choice(["threads", "ray"]),
              default="threads", show_default=True,
              help="where the per-run clocks are computed: threads of this process, or Ray "
                   "tasks over groups of runs (RAY_ADDRESS, else a local Ray instance; extra "
                   "`ray`). The output is the same")
@click.option("--kernel", "kernel_name", type=click.Choice(["auto", "numpy", "numba"]),
              default="auto", show_default=True,
              help="what runs the validation's passes over the rows and the per-run clocks' "
                   "passes over each run's points: numpy, or numba's compiled twins (extra "
                   "`fast`; compiled on first use, then cached); auto: numba for logs of "
                   "100,000,000 rows or more when it is installed. The output is the same")
@stream_options
def check(paths: tuple[str, ...], json_out: str | None, report_out: str | None,
          sensitivity: bool, verbose: bool, quiet: bool, profile: str | None,
          config_file: str | None, engine_name: str, kernel_name: str, stream: bool,
          part_rows: int | None, **params: Any) -> None:
    """Audit the training log at PATH (several paths, files or folders of any readable format,
    are merged by run: a run split over files, one file per metric).

    Exit 0: no critical finding; 1: critical findings (a reading the log cannot support);
    2: usage or input error.
    """
    from .config import build_config
    from .engine import engine_named
    from .kernels import kernel_named

    cfg = build_config(profile, config_file, audit_overrides(params))
    outs = resolve_outputs(
        _inputs(paths, config_file),
        json=(json_out, {"flag": "--json", "suffixes": JSON_SUFFIXES}),
        report=(report_out, {"flag": "--report", "allow_stdout": False,
                             "suffixes": (".html", ".htm")}))
    if outs["report"] is not None:
        from .figures import require_matplotlib

        require_matplotlib()  # fail before the audit runs, not after
    # what validates the log: numba without the extra refused now, before any work
    kern = kernel_named(kernel_name)
    if stream or part_rows is not None:
        _stream_refusals(paths, params, stream)
        _stream_kernel(kern)
        if sensitivity:
            raise ConfigError("--stream reads the log part by part: --sensitivity is not for "
                              "it (its reruns need the whole log)", option="--stream",
                              code=ErrorCode.INVALID_OPTION)
    # where the per-run clocks run, handed to the audit below; Ray, when asked for, is started
    # (or reached) now, once the outputs are writable and the options agree, before any work
    eng = engine_named(engine_name)
    hashes = _hash_ahead(paths, config_file)
    result, sens, evidence, ran = _check_result(paths, params, cfg, sensitivity=sensitivity,
                                                stream=stream or part_rows is not None,
                                                part_rows=part_rows, engine=eng, kernel=kern)
    if stream:
        _say_row_cap_unused(params)
    # one tail for both reads: the trail, the report, the output
    result = dataclasses.replace(result, trail=_trail(cfg, paths, params, config_file, hashes,
                                                      kernel=ran.name))
    shown = result if sens is None else dataclasses.replace(sens, baseline=result)
    if outs["report"] is not None:
        from .html_report import write_report

        write_report(result, evidence, outs["report"], progress=progress.printer("report"))
    del evidence  # the log (or the parts' records): not kept while the result is written
    emit(shown, lambda: _with_report(_render(shown, verbose), outs["report"]),
         json_out=outs["json"], quiet=quiet)


def _check_result(paths: Sequence[str], params: dict[str, Any], cfg: Any, *,
                  sensitivity: bool, stream: bool, part_rows: int | None, engine: Engine,
                  kernel: Kernel) -> tuple[Any, Any, Any, Kernel]:
    """``check``'s work, its clocks on ``engine``, its log validated on ``kernel``: the
    audit, the sensitivity grid when asked (else None), what a report draws the trajectories
    from — the validated log, or with ``--stream`` the parts' records (:func:`_streamed`) —
    and the kernel that validated the log (``auto`` resolved for its rows)."""
    from .api import audit_log, validated_log
    from .kernels import NUMPY

    if stream:
        result, trajectories = _streamed(paths[0], cfg, part_rows, engine=engine)
        return result, None, trajectories, NUMPY
    say = progress.stopwatch("check")
    # the input is handed over: validation frees each column once read (and returns the pages)
    owned, kernel = _owned_input(paths, params, cfg, kernel)
    log = validated_log(owned, cfg, _source(paths), kernel=kernel)
    say("log read and validated")
    sens = None
    if sensitivity:
        from .claims.sensitivity import run_sensitivity

        sens = run_sensitivity(log, cfg, source=_source(paths), engine=engine, kernel=kernel)
        result = sens.baseline
    else:
        result = audit_log(log, cfg, engine=engine, kernel=kernel)
    say(f"audited: {result.input.get('runs_kept', 0):,} runs, {len(result.studies)} "
        "stud" + ("y" if len(result.studies) == 1 else "ies"))
    return result, sens, log, kernel


def _owned_input(paths: Sequence[str], params: dict[str, Any], cfg: Any, kernel: Kernel
                 ) -> tuple[Any, Kernel]:
    """The log at ``paths`` read for column-by-column validation and handed over
    (:class:`~grokaudit.schema.Owned`: no name here keeps it), with ``kernel`` resolved for
    its rows (``auto``: :meth:`~grokaudit.kernels.Kernel.for_rows`), so that the trail names
    the kernel that ran."""
    from .schema import Owned

    source = _read(paths, params, cfg, lazy=True)
    kernel = kernel.for_rows(source.num_rows)
    return Owned(source), kernel


def _stream_kernel(kernel: Kernel) -> None:
    """``--stream`` validates and audits its parts on numpy: ``--kernel numba`` is refused
    with it (ConfigError, exit 2), never ignored; ``auto`` runs numpy there."""
    if kernel.numba:
        raise ConfigError("--kernel numba audits a log read whole: with --stream the parts "
                          "are validated and audited on numpy; drop --kernel numba or --stream",
                          option="--kernel", code=ErrorCode.INVALID_OPTION)


def _render(result: Any, verbose: bool) -> str:
    from .printing import render

    return render(result, verbose=verbose)


def _with_report(text: str, report: Any) -> str:
    """``text`` with the report's path said on its result line (so that -q, which prints only
    that line, says it too)."""
    if report is None:
        return text
    lines = text.rstrip("\n").split("\n")
    lines[-1] += f" · report written to {safe(report.path)}"
    return "\n".join(lines) + "\n"


def _streamed(path: str, cfg: Any, part_rows: int | None, command: str = "check", *,
              engine: Engine) -> tuple[Any, Any]:
    """``--stream`` (the caller has made :func:`_stream_refusals`): the audit of one canonical
    Parquet file or dataset folder, part by part, its clocks on ``engine``, and its
    trajectories for a report (:func:`grokaudit.stream.audit_stream_with_trajectories`)."""
    from .stream import PART_ROWS, audit_stream_with_trajectories

    return audit_stream_with_trajectories(
        path, cfg, part_rows=PART_ROWS if part_rows is None else part_rows,
        progress=progress.printer(command), engine=engine)


def _stream_refusals(paths: Sequence[str], params: Mapping[str, Any], stream: bool) -> None:
    """What ``--stream`` is not for: ConfigError (exit 2) naming the first such option."""
    if not stream:
        raise ConfigError("--part-rows is the part size of --stream: add --stream, or drop "
                          "--part-rows", option="--part-rows", code=ErrorCode.INVALID_OPTION)
    given = (("several paths", len(paths) > 1), ("--format", params.get("fmt")),
             ("--map", params.get("maps")), ("--run-from", params.get("run_from")),
             ("--cond", params.get("conds")),
             *((f"--{k.replace('_', '-')}", params.get(k)) for k in LAYOUT_PARAMS))
    clash = [flag for flag, on in given if on]
    if clash:
        raise ConfigError(f"--stream reads one canonical Parquet file or dataset folder: "
                          f"{clash[0]} is not for it (audit without --stream, or convert the "
                          "log to canonical Parquet first)",
                          option="--stream", code=ErrorCode.INVALID_OPTION)


def _say_row_cap_unused(params: Mapping[str, Any]) -> None:
    """``--max-rows`` typed with ``--stream``: one line on stderr saying the cap did not apply
    (a streamed log has no row cap; its parts bound the memory), so that a cap the user set is
    never dropped without a word. Said once the streamed audit has its result (a command
    refused for another reason says only why); the audit goes on: ``--stream`` is the advice a
    log over the cap is given (``TOO_LARGE``), and adding it to the same command must work."""
    if params.get("max_rows") is not None:
        ctx = click.get_current_context(silent=True)
        name = ctx.info_name if ctx is not None and ctx.info_name else "grokaudit"
        say_err(f"{name}: --max-rows {params['max_rows']} does not apply with --stream: a "
                "log read part by part has no row cap (its parts bound the memory; the "
                "column cap still applies)")


# ------------------------------------------------------------------------------------------
# grokaudit inspect
# ------------------------------------------------------------------------------------------

@cli.command()
@click.argument("paths", nargs=-1, required=True, metavar="PATH...")
@input_options
@click.option("--by", "by", default=None, metavar="COL", callback=column_names,
              help="the axis column, as `check` would take it")
@click.option("--cell", "cell", multiple=True, metavar="COL[,COL]", callback=column_names,
              help="condition column(s) that split studies, as in `check`")
@click.option("--metric", "metrics", multiple=True, metavar="COL", callback=column_names,
              help="metric column(s), as in `check`")
@click.option("--config", "config_file", type=click.Path(dir_okay=False), default=None,
              help="config file (default: found as `check` finds it)")
@click.option("--json", "json_out", default=None, metavar="PATH|-",
              help="write the description as JSON to PATH, a .json file (- for stdout, "
                   "replacing the text)")
def inspect(paths: tuple[str, ...], json_out: str | None, config_file: str | None,
            **params: Any) -> None:
    """Show what the loader sees in PATH, before any audit: the reader, the runs, the steps
    and their cadence, each column's role and why, percent decisions, records set aside, and
    the flags that would read it differently.

    Exit 0 when the log reads (also when `check` would refuse it: the reason is shown);
    2 when it cannot be read.
    """
    from .config import build_config
    from .inspect import inspect_paths
    from .trail import config_source

    cfg = build_config(None, config_file, {
        **acc_scale_options(params.get("acc_scale")),
        "on_duplicate": params.get("on_duplicate"), **limit_overrides(params),
        "by": params.get("by"), "cell": split_list(params.get("cell")) or None,
        "metrics": split_list(params.get("metrics")) or None})
    outs = resolve_outputs(_inputs(paths, config_file),
                           json=(json_out, {"flag": "--json", "suffixes": JSON_SUFFIXES}))
    # the axis and the metrics as named: by a flag, else by the config file that set them
    source = config_source(config_file)[0] or "the config file"
    named_by = {"by": "--by" if params.get("by") else source,
                "metrics": "--metric" if params.get("metrics") else source}
    hashes = _hash_ahead(paths, config_file)
    ins = inspect_paths(list(paths), cfg, fmt=params.get("fmt"),
                        mapping=parse_pairs(params.get("maps"), "--map") or None,
                        run_from=params.get("run_from"),
                        cond=parse_pairs(params.get("conds"), "--cond") or None,
                        named_by=named_by, layout=layout_of(params))
    ins = dataclasses.replace(ins, trail=_trail(cfg, paths, params, config_file, hashes))
    emit(ins, json_out=outs["json"])


def _finite(ctx: click.Context, param: click.Parameter, value: float | None) -> float | None:
    """Refuse NaN (a float range lets it through: every comparison with NaN is false)."""
    if value is not None and value != value:
        from .errors import ConfigError

        raise ConfigError(f"--{param.name}: nan is not a number in the valid range",
                          code=ErrorCode.OPTION_OUT_OF_RANGE, option=f"--{param.name}")
    return value


# ------------------------------------------------------------------------------------------
# grokaudit watch
# ------------------------------------------------------------------------------------------

@cli.command()
@click.argument("paths", nargs=-1, required=True, metavar="PATH...")
@audit_options
@click.option("--margin", type=click.FloatRange(min=0), default=None, show_default=False,
              callback=_finite,
              help="a run is settled when its numbers are defined and it has gone from S0 "
                   "(its grok and each metric's floor band held since) to (1 + MARGIN) × S0 "
                   "[default 1: measured on long runs, docs/live.md]")
@click.option("--grok-multiple", type=click.FloatRange(min=0), default=None,
              callback=_finite,
              help="a settled run also reached this multiple of its t_grok (a representation "
                   "often starts to compress long after the grok) [default 20]")
@click.option("--interval", type=click.FloatRange(min=0.05, max=86400), default=5.0,
              show_default=True, callback=_finite, help="seconds between reads of PATH")
@click.option("--idle", type=click.FloatRange(min=0), default=600.0, show_default=True,
              callback=_finite,
              help="a run that logs nothing new for this many seconds is stopped (a RunLogger "
                   "run is stopped when its logger closes)")
@click.option("--once", is_flag=True, help="read PATH once, print every run's state, exit")
@click.option("--jsonl", is_flag=True,
              help="print one JSON object per line (a run's state when it changes; a summary "
                   "line at the end) instead of text")
def watch(paths: tuple[str, ...], margin: float | None, grok_multiple: float | None,
          interval: float, idle: float,
          once: bool, jsonl: bool, profile: str | None, config_file: str | None,
          **params: Any) -> None:
    """Follow a log folder while it is written (a RunLogger folder, TensorBoard events,
    JSONL…): print each run's live state when it changes — grokked, floor, compression clock,
    what is missing — and the first step from which its numbers are defined. Exits when every
    run is settled (its numbers defined and held over the margin) or stopped.

    Exit 0: no run stopped with numbers that are not defined (every run settled, stopped with
    its numbers defined, or still running at the end of --once); 1: a run stopped (its logger
    closed, or idle) with numbers that are not defined (they would be censored or missing);
    2: usage or input error; 130: interrupted (Ctrl-C), 143: terminated (SIGTERM), 129: hung
    up (SIGHUP), each after the summary of what was seen. The header (text) or the first line
    (--jsonl, ``"event": "trail"``) says the config file read and the settings changed.
    """
    import json as _json

    from .config import build_config
    from .errors import ConfigError
    from .live import DEFAULT_GROK_MULTIPLE, DEFAULT_MARGIN
    from .watch import CtrlC, RunWatch, Watcher
    from .watch import watch as run_watch

    with CtrlC() as ctrl_c:  # a Ctrl-C at any moment from here is acted on
        # the trail, written with the first line (one write: a reader that takes one line
        # and leaves, `| head -1`, finds the pipe gone only when it next changes)
        header: list[str] = []

        def head() -> str:
            return header.pop() + "\n" if header else ""

        def emit_line(rw: RunWatch) -> None:
            click.echo(head() + (_json.dumps(rw.to_dict(), sort_keys=True, allow_nan=False)
                                 if jsonl else safe(rw.describe())))

        def note(line: str) -> None:
            click.echo(f"watch: {line}", err=True)

        def event(ev: Mapping[str, Any]) -> None:  # --jsonl: on stdout, with the run lines
            click.echo(head() + _json.dumps(dict(ev), sort_keys=True, allow_nan=False))

        seen: list[Watcher] = []
        ended = ""  # how it ended early: interrupted, terminated, hung up
        w: Watcher | None = None
        try:
            if params.get("fail_on") is not None:
                raise ConfigError("--fail-on does not apply to watch: its exit code says whether a "
                                  "run stopped with numbers that are not defined; run check on the "
                                  "finished log for findings", code=ErrorCode.INVALID_OPTION,
                                  option="--fail-on")
            cfg = build_config(profile, config_file, audit_overrides(params))
            # a refusal before any line leaves stdout empty (one error line, as every command)
            header.append(_watch_header(cfg, paths, params, config_file, jsonl))
            w = run_watch(list(paths), cfg, margin=DEFAULT_MARGIN if margin is None else margin,
                          interval=interval, idle=idle, once=once, emit=emit_line, note=note,
                          read_options={"fmt": params.get("fmt"),
                                        "mapping": parse_pairs(params.get("maps"), "--map") or None,
                                        "run_from": params.get("run_from"),
                                        "cond": parse_pairs(params.get("conds"), "--cond") or None,
                                        "layout": layout_of(params)},
                          started=seen.append, sleep=ctrl_c.sleep,
                          event=event if jsonl else None,
                          grok_multiple=DEFAULT_GROK_MULTIPLE if grok_multiple is None
                          else grok_multiple)
            ctrl_c.disarm()  # the summary is printed whole: a Ctrl-C from here is only recorded
        except KeyboardInterrupt:  # Ctrl-C: what was seen, then exit 130 (never 1)
            ctrl_c.disarm()
            ended = "interrupted"
            w = seen[0] if seen else None
        except Terminated as exc:  # SIGTERM (a job's time limit), SIGHUP: what was seen
            ctrl_c.disarm()
            ended = "hung up" if isinstance(exc, HungUp) else "terminated"
            w = seen[0] if seen else None
        # a Ctrl-C whose exception was swallowed in the last poll, or pressed after it
        ended = ended or ("interrupted" if ctrl_c.pressed else "")
        bad = _watch_summary(w, jsonl, ended, head(), once=once)
        sys.exit({"terminated": 143, "hung up": 129, "interrupted": 130}.get(
            ended, 1 if bad else 0))


def _watch_header(cfg: Any, paths: Sequence[str], params: Mapping[str, Any],
                  config_file: str | None, jsonl: bool) -> str:
    """The trail of a watch, printed before its first line: the
    config file read (and those passed over), the settings changed, the input mapping, the
    command (the inputs are not hashed: they are being written). Text: header lines;
    --jsonl: one ``trail`` event."""
    import json as _json

    from .trail import make_trail
    from .version import __version__

    trail = make_trail(cfg, version=__version__, inputs=(), mapping=_input_mapping(params),
                       config_file=config_file, discover=True, command=_command())
    if jsonl:
        text = _json.dumps({"event": "trail", "paths": [str(p) for p in paths],
                            **trail.to_dict()}, sort_keys=True, allow_nan=False)
    else:
        text = "\n".join([f"grokaudit {__version__} · watch "
                          f"{', '.join(safe(p) for p in paths)} · profile {trail.profile}",
                          *trail.lines()])
    return text


def _watch_summary(w: Any, jsonl: bool, ended: str, head: str = "", once: bool = False
                   ) -> list[str]:
    """Print the summary of what ``w`` saw (the runs, the watched paths that went, how the
    watch ended) after ``head`` (the trail, when no line came before); returns the runs
    stopped with numbers not defined."""
    import json as _json

    lines = list(w.last.values()) if w is not None else []
    gone = [str(p) for p in w.vanished] if w is not None else []
    bad = sorted(r.state.run for r in lines if r.stopped and not r.state.defined)
    summary = {"event": "summary", "runs": len(lines),
               "settled": sum(r.settled for r in lines),
               "stopped_defined": sum(r.stopped and r.state.defined for r in lines),
               "stopped_not_defined": bad, "running": sum(not r.done for r in lines),
               "vanished": gone, "ended": ended or None}
    try:
        if jsonl:
            click.echo(head + _json.dumps(summary, sort_keys=True))
        else:
            click.echo(head + f"watch: {summary['runs']} run(s): {summary['settled']} settled, "
                       f"{summary['stopped_defined']} stopped with numbers defined, "
                       f"{len(bad)} stopped with numbers not defined"
                       + (f" ({', '.join(safe(b) for b in bad[:5])})" if bad else "")
                       + (f", {summary['running']} not settled (read once: whether they "
                          "still run is not known)" if once and summary["running"] else
                          "" if once else f", {summary['running']} still running")
                       + (f"; went: {', '.join(safe(g) for g in gone)}" if gone else "")
                       + (f" ({ended})" if ended else ""))
    except OSError:
        if not ended:  # the output's reader is gone: exit 2, OUTPUT_NOT_WRITABLE
            raise
        _silence_stdout()  # Ctrl-C took the reader (| head) with it: still 130
    return bad


# watch takes the audit's options but not --fail-on (its exit code says whether a run stopped
# with numbers not defined): refused when given, so not listed in its --help
for _p in watch.params:
    if _p.name == "fail_on" and isinstance(_p, click.Option):
        _p.hidden = True


# ------------------------------------------------------------------------------------------
# grokaudit report
# ------------------------------------------------------------------------------------------

@cli.command()
@click.argument("paths", nargs=-1, required=True, metavar="PATH...")
@click.option("-o", "--output", "output", required=True, metavar="PATH",
              help="the HTML file to write (self-contained: no network, no JavaScript)")
@click.option("--png", "png_dir", default=None, metavar="DIR",
              help="also write one PNG per study and metric into this folder")
@click.option("--log-steps", is_flag=True, help="log-scaled step axis on the trajectory panels")
@click.option("--jobs", "-j", type=click.IntRange(min=1), default=None, metavar="N",
              help="draw the figures in N worker processes (default: one per CPU; 1: in this "
                   "process)")
@click.option("-q", "--quiet", is_flag=True, help="print only the result line")
@click.option("--engine", "engine_name", type=click.Choice(["threads", "ray"]),
              default="threads", show_default=True,
              help="where the per-run clocks are computed, as in `check`. The output is the "
                   "same")
@click.option("--kernel", "kernel_name", type=click.Choice(["auto", "numpy", "numba"]),
              default="auto", show_default=True,
              help="what runs the validation's and the clocks' passes, as in `check`. The "
                   "output is the same")
@stream_options
@audit_options
def report(paths: tuple[str, ...], output: str, png_dir: str | None, log_steps: bool,
           jobs: int | None, quiet: bool, engine_name: str, kernel_name: str,
           profile: str | None, config_file: str | None, stream: bool,
           part_rows: int | None, **params: Any) -> None:
    """Audit the training log at PATH (several are merged by run, as in `check`) and write a
    self-contained HTML report.

    Takes the options of `grokaudit check` that shape the audit (reading, thresholds, --by,
    --cell, --metric, --config, --fail-on, --engine, --stream, -q; not its outputs --json,
    --report, --sensitivity, -v) and exits like it: 0 no critical finding, 1 critical
    findings (the report is written either way), 2 usage or input error.
    """
    from .api import audit_log, validated_log
    from .config import build_config
    from .figures import check_matplotlib
    from .html_report import write_report
    from .outputs import resolve_output_dir

    cfg = build_config(profile, config_file, audit_overrides(params))
    inputs = _inputs(paths, config_file)
    outs = resolve_outputs(inputs, html=(output, {"flag": "--output", "allow_stdout": False,
                                                  "suffixes": (".html", ".htm")}))
    png = resolve_output_dir(png_dir, flag="--png", inputs=inputs) if png_dir else None
    # after the outputs (an output that is the log is refused as such, extra or not), before
    # the audit runs (without importing matplotlib yet)
    check_matplotlib()
    from .engine import engine_named
    from .kernels import NUMPY, kernel_named

    kern = kernel_named(kernel_name)  # numba without the extra: refused now
    log: Any
    if stream or part_rows is not None:
        _stream_refusals(paths, params, stream)
        _stream_kernel(kern)
    eng = engine_named(engine_name)  # Ray, when asked for, started (or reached) now
    hashes = _hash_ahead(paths, config_file)
    if stream or part_rows is not None:
        result, log = _streamed(paths[0], cfg, part_rows, "report", engine=eng)
        _say_row_cap_unused(params)
        kern = NUMPY  # the parts are validated on numpy (_stream_kernel)
    else:
        table = _read(paths, params, cfg)
        kern = kern.for_rows(table.num_rows)
        log = validated_log(table, cfg, _source(paths), kernel=kern)
        del table
        result = audit_log(log, cfg, engine=eng, kernel=kern)
    result = dataclasses.replace(result, trail=_trail(cfg, paths, params, config_file, hashes,
                                                      kernel=kern.name))
    out = write_report(result, log, outs["html"], png, log_steps=log_steps, jobs=jobs,
                       progress=progress.printer("report"))
    from .report import written_line

    emit(result, lambda: f"wrote {safe(out)} · {written_line(result)}\n", quiet=quiet)


# ------------------------------------------------------------------------------------------
# grokaudit suite
# ------------------------------------------------------------------------------------------

@cli.command()
@click.option("--config", "config_file", type=click.Path(dir_okay=False), default=None,
              help="config file (default: grokaudit.toml or [tool.grokaudit] in "
                   "pyproject.toml, searched upwards from the working directory)")
@click.option("--profile", type=click.Choice(["default", "reference"]), default=None,
              help="default (the audit's definitions) or reference (shows which cases the "
                   "public v1.5 definitions fail)")
@click.option("--max-examples", type=click.IntRange(min=0), default=25, show_default=True,
              help="generated logs per property (0 skips the property run)")
@click.option("--json", "json_out", default=None, metavar="PATH|-",
              help="write the result as JSON to PATH, a .json file (atomically; the table "
                   "still goes to stdout) or to stdout (-) instead of the table")
def suite(config_file: str | None, profile: str | None, max_examples: int,
          json_out: str | None) -> None:
    """Run the named adversarial cases and a bounded property run against the installed
    audit with your config: every case's log and expected answer follow your thresholds.
    Exit 0 when every case and property passes, 1 otherwise, 2 on a config or output error."""
    import warnings

    from .adversarial_suite.runner import run_suite
    from .config import build_config

    cfg = build_config(profile, config_file, {})
    outs = resolve_outputs(_inputs([], config_file),
                           json=(json_out, {"flag": "--json", "suffixes": JSON_SUFFIXES}))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        report = run_suite(cfg, max_examples=max_examples)
    emit(report, json_out=outs["json"])


# ------------------------------------------------------------------------------------------
# grokaudit reproduce
# ------------------------------------------------------------------------------------------

@cli.command()
@click.argument("seeds", nargs=-1, metavar="[SEED...]")
@click.option("--scale", type=click.Choice(["cpu", "paper"]), default="cpu", show_default=True,
              help="cpu: each design scaled to train on 2 CPU cores in about 30 min per seed; "
                   "paper: the paper's full design (for a GPU)")
@click.option("--from-bundled", is_flag=True,
              help="re-audit the bundled CPU-scale logs instead of training (seconds, no torch)")
@click.option("--out", "out_dir", default="reproduce-runs", show_default=True, metavar="DIR",
              help="folder of the trained logs (seed-NNN/CONFIG.parquet, with MANIFESTs)")
@click.option("--resume", is_flag=True,
              help="reuse the finished logs in --out and continue interrupted ones from "
                   "their checkpoints")
@click.option("--budget-hours", type=click.FloatRange(min=0, min_open=True), default=2.0,
              show_default=True, callback=_finite,
              help="stop before training when the estimated time on this device exceeds this")
@click.option("--device", type=click.Choice(["auto", "cpu", "cuda"]), default="auto",
              show_default=True, help="where to train")
@click.option("--threads", type=click.IntRange(min=1), default=None,
              help="torch CPU threads [torch's default]")
@click.option("--engine", type=click.Choice(["process", "ray"]), default="process",
              show_default=True, help="the trainer's engine (see `grokaudit train`)")
@click.option("--json", "json_out", default=None, metavar="PATH|-",
              help="write the table as versioned JSON to PATH, a .json file (- for stdout)")
@click.option("--html", "html_out", default=None, metavar="PATH",
              help="also write an HTML page with one figure per headline: the paper's number "
                   "beside ours")
@click.option("-q", "--quiet", is_flag=True, help="print only the result line")
def reproduce(seeds: tuple[str, ...], scale: str, from_bundled: bool, out_dir: str,
              resume: bool, budget_hours: float, device: str, threads: int | None,
              engine: str, json_out: str | None, html_out: str | None, quiet: bool) -> None:
    """Regenerate each seed paper's headline with the bundled trainer and audit it with the
    claim commands: the paper's number, ours with its interval, and a verdict per headline
    (REPRODUCED, DIRECTION_ONLY, NOT_REPRODUCED, NOT_SUPPORTED_BY_THE_LOG), each with its
    reason codes and the commands that regenerate it. SEED is 000 … 004 (all when none).

    Training first prints the estimated time on this device and stops when it exceeds
    --budget-hours. Exit 0 when the table is made (the verdicts are its content), 2 on a
    usage, input or training error."""
    from pathlib import Path

    from . import reproduce as rp
    from .errors import ConfigError

    designs = rp.select(seeds)
    outs = resolve_outputs([], json=(json_out, {"flag": "--json", "suffixes": JSON_SUFFIXES}),
                           html=(html_out, {"flag": "--html", "allow_stdout": False,
                                            "suffixes": (".html", ".htm")}))
    if html_out is not None:  # before any work: a missing extra is said first
        from .figures import check_matplotlib

        check_matplotlib()
    if from_bundled:
        ctx = click.get_current_context()
        given = [f"--{n.replace('_', '-')}" for n in ("scale", "out_dir", "resume",
                                                     "budget_hours", "device", "threads",
                                                     "engine")
                 if ctx.get_parameter_source(n) is click.core.ParameterSource.COMMANDLINE
                 and not (n == "scale" and scale == "cpu")]
        if given:  # training options are refused, never ignored
            shown = ", ".join("--out" if g == "--out-dir" else g for g in given)
            raise ConfigError(f"--from-bundled re-audits the bundled CPU-scale logs and trains "
                              f"nothing: {shown} do(es) not apply; leave them out, or train "
                              "(without --from-bundled)", code=ErrorCode.INVALID_OPTION,
                              option=given[0])
        result = rp.reproduce_bundled(run_command, [d.seed for d in designs])
    else:
        from .errors import MissingExtraError

        try:
            import torch
        except ImportError:
            raise MissingExtraError("reproduce trains with the bundled trainer, which needs "
                                    "torch: pip install 'grokaudit[train]' (or re-audit the "
                                    "bundled logs with --from-bundled)") from None
        if device == "cuda" and engine == "process" and not torch.cuda.is_available():
            raise ConfigError("--device cuda: no CUDA device is visible; use --device cpu or "
                              "auto", code=ErrorCode.INVALID_OPTION, option="--device")
        say = _reproduce_say(quiet)
        out = Path(out_dir)
        p = rp.plan(designs, scale=scale, out_dir=out, resume=resume, device=device,
                    threads=threads, say=say)
        say(f"estimated training time on {p.device}: {rp.duration(p.seconds)} "
            f"(--budget-hours {budget_hours:g})")
        rp.check_budget(p, budget_hours)
        logs, cmds = rp.train_plan(p, run_train_command, device=device, threads=threads,
                                   engine=engine, say=say)
        result = rp.reproduce_logs(logs, run_command, scale=scale, train_commands=cmds)
    if outs["html"] is not None:
        from .reproduce_html import write_reproduce_html

        write_reproduce_html(result, outs["html"])
    from .printing import render as print_result

    emit(result, lambda: print_result(result), json_out=outs["json"], quiet=quiet)


def run_command(argv: Sequence[str]) -> tuple[dict[str, Any] | None, int, str]:
    """``grokaudit ARGV --json FILE --quiet`` in this process (reproduce's audits): its JSON
    (None when it was refused), its exit code, and its result line (or error line)."""
    import contextlib
    import io
    import json as _json
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory(prefix="grokaudit-reproduce-") as tmp:
        out = Path(tmp) / "result.json"
        buf = io.StringIO()
        code = 0
        with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(buf):
            try:
                cli.main(args=[*argv, "--json", str(out), "--quiet"], prog_name="grokaudit",
                         standalone_mode=True)
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else 2
        text = buf.getvalue().strip().splitlines()
        line = text[-1] if text else ""
        if code == 130:  # Ctrl-C inside the audit: reproduce stops as every command does
            raise KeyboardInterrupt
        if code not in (0, 1) and "internal error" in line:
            from .errors import GrokauditError

            raise GrokauditError(f"reproduce: `grokaudit {' '.join(argv)}` failed with an "
                                 "internal error (a bug, not a refusal of the log): "
                                 f"{line.removeprefix('error: ')}",
                                 code=ErrorCode.AUDIT_FAILED)
        if code not in (0, 1) or not out.exists():
            return None, code, line
        return _json.loads(out.read_text(encoding="utf-8")), code, line


def run_train_command(argv: Sequence[str]) -> None:
    """``grokaudit ARGV`` (a ``train`` command) in this process, its lines on stderr; a
    refusal or failure is ``TRAINER_FAILED`` naming the command."""
    import contextlib

    from .errors import GrokauditError
    from .reproduce import command_text

    saved = sys.argv
    sys.argv = ["grokaudit", *argv]  # the MANIFEST records the command as typed
    code: int | str | None = 0
    try:
        with contextlib.redirect_stdout(sys.stderr):
            cli.main(args=list(argv), prog_name="grokaudit", standalone_mode=True)
    except SystemExit as exc:
        code = exc.code
    finally:
        sys.argv = saved
    if code == 130:  # Ctrl-C while training: the checkpoint is kept, --resume continues
        raise KeyboardInterrupt
    if code not in (0, None):
        raise GrokauditError(f"reproduce: `{command_text(argv)}` failed (exit {code}; its "
                             "error is above); rerun with --resume to continue",
                             code=ErrorCode.TRAINER_FAILED)


def _reproduce_say(quiet: bool) -> Callable[[str], None]:
    def say(line: str) -> None:
        if not quiet:
            click.echo(f"reproduce: {safe(line)}", err=True)
    return say


# ------------------------------------------------------------------------------------------
# the claim commands
# ------------------------------------------------------------------------------------------

def _floats(value: str | None, flag: str) -> tuple[float, ...]:
    from .errors import ConfigError

    out: list[float] = []
    for v in split_list(value):
        try:
            x = float(v)
        except ValueError:
            raise ConfigError(f"{flag}: expected comma-separated numbers, got {value!r}",
                              code=ErrorCode.INVALID_OPTION, option=flag) from None
        if x != x or x in (float("inf"), float("-inf")):
            raise ConfigError(f"{flag}: {v!r} is not a finite number",
                              code=ErrorCode.OPTION_OUT_OF_RANGE, option=flag)
        out.append(x)
    if value is not None and not out:  # --thresholds "" (an unset variable): not "left out"
        raise ConfigError(f"{flag} {value!r} is blank; give numbers, or leave {flag} out",
                          code=ErrorCode.INVALID_OPTION, option=flag)
    return tuple(out)


def _assign(value: str | None, flag: str) -> dict[str, Any]:
    """``rho=1,tau=1`` → ``{"rho": 1.0, "tau": 1.0}`` (numbers where they parse)."""
    out: dict[str, Any] = {}
    for k, v in parse_pairs(value, flag, split_commas=True).items():
        try:
            out[k] = float(v)
        except ValueError:
            out[k] = v
    return out


def claim_options(f: Callable[..., Any]) -> Callable[..., Any]:
    """Options shared by every claim command."""
    opts: list[Callable[[Any], Any]] = [
        click.argument("path", nargs=-1, required=True, metavar="PATH..."),
        click.option("--json", "json_out", default=None, metavar="PATH|-",
                     help="write the versioned JSON result to PATH, a .json file (- for stdout)"),
        click.option("-v", "--verbose", is_flag=True, help="show informational findings too"),
        click.option("-q", "--quiet", is_flag=True, help="print only the result line"),
        threshold_option("grok_threshold"), threshold_option("mem_threshold"),
        click.option("--step-unit", type=click.Choice(["steps", "epochs"]), default=None,
                     help="what the log's step column counts [from provenance, else steps]"),
        click.option("--level", type=click.FloatRange(0, 1, min_open=True, max_open=True),
                     default=0.95, show_default=True, callback=_finite,
                     help="confidence level of every interval"),
        click.option("--seed", type=click.IntRange(0, 2**32 - 1), default=0, show_default=True,
                     help="seed of every bootstrap and permutation"),
        click.option("--cell", "cell", multiple=True, metavar="COL[,COL]", callback=column_names,
                     help="condition column(s) that split the runs into separate studies, as "
                          "in `check`; runs that share the axis values but differ in another "
                          "condition are refused (DUPLICATE_AXIS_VALUES) unless split"),
    ]
    for o in reversed(opts):
        f = o(f)
    return grok_options(config_options(input_options(f)))


def _claim(common: dict[str, Any], call: Callable[[Any, Any, str], Any]) -> None:
    """Configure, check outputs, load, compute, print, exit."""
    from .config import build_config

    path = common["path"]
    cfg = build_config(None, common["config_file"], shared_overrides(common))
    outs = resolve_outputs(_inputs(path, common["config_file"]),
                           json=(common["json_out"],
                                 {"flag": "--json", "suffixes": JSON_SUFFIXES}))
    table: Any
    streamed = common["stream"] or common["part_rows"] is not None
    if streamed:
        _stream_refusals(path, common, common["stream"])
    hashes = _hash_ahead(path, common["config_file"])
    if streamed:
        from .stream import PART_ROWS, open_log_parts

        part_rows = common["part_rows"]
        table = open_log_parts(path[0], cfg, part_rows=PART_ROWS if part_rows is None
                               else part_rows, progress=progress.printer("claim"))
    else:
        table = _read(path, common, cfg)
    result = call(table, cfg, _source(path))
    if streamed:
        _say_row_cap_unused(common)
    result = dataclasses.replace(result, trail=_trail(cfg, path, common,
                                                       common["config_file"], hashes))
    from .printing import render as print_result

    emit(result, lambda: print_result(result, verbose=common["verbose"]),
         json_out=outs["json"], quiet=common["quiet"])


_COMMON = ("path", "json_out", "verbose", "quiet", "grok_threshold", "mem_threshold",
           "config_file", "acc_scale", "on_duplicate", "fail_on", "step_unit", "level", "seed",
           "cell", "fmt", "maps", "run_from", "conds", "grok_on", "grok_below", "full_below",
           "max_rows", "max_columns", *LAYOUT_PARAMS)


def _split_kwargs(kw: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    common = {k: kw.pop(k) for k in _COMMON}
    # --stream: every claim but precursor (whose null draws read every run's points at once)
    common["stream"], common["part_rows"] = kw.pop("stream", False), kw.pop("part_rows", None)
    return common, kw


@cli.command()
@claim_options
@stream_options
@click.option("--by", required=True, metavar="COL[,COL]", callback=column_names,
              help="hyperparameters of the scaling fit, e.g. H,D,lr,wd (positive)")
@click.option("--interactions", is_flag=True, help="add every pairwise product of the logs")
@click.option("--thresholds", default=None, metavar="T[,T]",
              help="redo the fit at these grok thresholds, e.g. 0.9,0.95,0.99")
@click.option("--phase-map", "phase_map", default=None, metavar="ROW,COL", callback=column_names,
              help="two --by columns for the grok-rate table [the first two --by]")
@click.option("--n-resamples", type=click.IntRange(1, 1_000_000), default=199,
              show_default=True, help="bootstrap resamples (each refits every model)")
def onset(**kw: Any) -> None:
    """Audit onset-scaling claims: t_grok vs hyperparameters, OLS on grokked runs vs a
    censored AFT on all runs, its error family chosen by AIC (SURVIVORSHIP_BIAS,
    THRESHOLD_SENSITIVE)."""
    from .claims.onset import run_onset

    common, o = _split_kwargs(kw)
    _claim(common, lambda t, c, p: run_onset(
        t, c, by=split_list(o["by"]), interactions=o["interactions"],
        thresholds=_floats(o["thresholds"], "--thresholds"),
        phase_map=split_list(o["phase_map"]), cell=split_list(common["cell"]),
        level=common["level"], seed=common["seed"], n_resamples=o["n_resamples"],
        step_unit=common["step_unit"], source=p))


@cli.command()
@claim_options
@stream_options
@click.option("--by", required=True, metavar="COL",
              callback=column_names, help="the dose axis, e.g. rho")
@click.option("--fit-range", default=None, metavar="LO,HI",
              help="fit the laws on cells with LO ≤ dose ≤ HI only [all]")
@click.option("--n-resamples", type=click.IntRange(1, 1_000_000), default=999,
              show_default=True, help="bootstrap resamples")
@click.option("--mediator", default=None, metavar="COL",
              callback=column_names, help="mediator column, e.g. logit_scale")
@click.option("--baseline", default=None, metavar="K=V[,K=V]",
              help="baseline cell, e.g. rho=1,tau=1")
@click.option("--raised", default=None, metavar="K=V[,K=V]",
              help="raised-dose cell, e.g. rho=1.15,tau=1")
@click.option("--sweep", default=None, metavar="COL", callback=column_names,
              help="condition swept at the raised dose, e.g. tau")
def dose(**kw: Any) -> None:
    """Audit dose-response laws: exponential vs power vs saddle-node by AICc
    (MODELS_INDISTINGUISHABLE), each checked against the censored cells it left out, and
    mediation by a recovery fraction."""
    from .claims.dose import run_dose
    from .errors import ConfigError

    common, o = _split_kwargs(kw)
    fr = _floats(o["fit_range"], "--fit-range")
    if fr and (len(fr) != 2 or fr[0] > fr[1]):
        raise ConfigError("--fit-range takes LO,HI with LO ≤ HI",
                          code=ErrorCode.INVALID_OPTION, option="--fit-range")
    baseline = _assign(o["baseline"], "--baseline") or None
    raised = _assign(o["raised"], "--raised") or None
    _claim(common, lambda t, c, p: run_dose(
        t, c, by=o["by"], fit_range=(fr[0], fr[1]) if fr else None,
        cell=split_list(common["cell"]), level=common["level"],
        seed=common["seed"], n_resamples=o["n_resamples"], mediator=o["mediator"],
        baseline=baseline, raised=raised, sweep=o["sweep"], step_unit=common["step_unit"],
        source=p))


@cli.command()
@claim_options
@stream_options
@click.option("--by", required=True, metavar="COL",
              callback=column_names, help="the control parameter λ, e.g. wd")
@click.option("--n-resamples", type=click.IntRange(1, 1_000_000), default=499,
              show_default=True, help="bootstrap resamples")
def transition(**kw: Any) -> None:
    """Audit phase-boundary claims: logistic transition point λ_c (only a bracket under
    separation) and the time-to-grok exponent, with bootstrap CIs (TOO_FEW_LEVELS,
    INSUFFICIENT_BUDGET)."""
    from .claims.transition import run_transition

    common, o = _split_kwargs(kw)
    _claim(common, lambda t, c, p: run_transition(
        t, c, by=o["by"], cell=split_list(common["cell"]), level=common["level"],
        seed=common["seed"],
        n_resamples=o["n_resamples"], step_unit=common["step_unit"], source=p))


@cli.command()
@claim_options
@click.option("--signal", required=True, metavar="COL",
              callback=column_names, help="the per-step signal, e.g. attn_cv")
@click.option("--placebo", default=None, metavar="COL", callback=column_names,
              help="a smooth placebo signal [weight_norm when logged]")
@click.option("--n-perm", type=click.IntRange(1, 1_000_000), default=999, show_default=True,
              help="draws of the within-run permutation null")
@click.option("--alpha", type=click.FloatRange(0, 1, min_open=True, max_open=True),
              default=0.05, show_default=True)
def precursor(**kw: Any) -> None:
    """Audit precursor signals against a permutation null and a placebo signal, each by a
    test (PEAK_AT_WINDOW_EDGE, PRECURSOR_NOT_SPECIFIC)."""
    from .claims.precursor import run_precursor

    common, o = _split_kwargs(kw)
    _claim(common, lambda t, c, p: run_precursor(
        t, c, signal=o["signal"], placebo=o["placebo"], cell=split_list(common["cell"]),
        n_perm=o["n_perm"],
        alpha=o["alpha"], level=common["level"], seed=common["seed"],
        step_unit=common["step_unit"], source=p))


@cli.command()
@claim_options
@stream_options
@click.option("--by", required=True, metavar="COL",
              callback=column_names, help="the arm column, e.g. method")
@click.option("--pair", required=True, metavar="COL",
              callback=column_names, help="the pairing column, e.g. seed")
@click.option("--arms", default=None, metavar="FIRST,SECOND", callback=column_names,
              help="the two arms; d = t_grok(FIRST) − t_grok(SECOND) [the two values, sorted]")
@click.option("--alpha", type=click.FloatRange(0, 1, min_open=True, max_open=True),
              default=0.05, show_default=True)
def compare(**kw: Any) -> None:
    """Audit paired comparisons of methods: exact Wilcoxon, sign-flip permutation, d_z,
    bootstrap CIs; bounds and the sign test when pairs are censored; power and pairing
    (UNDERPOWERED, CENSORED_PAIRS, PAIRS_WITHIN_RESOLUTION)."""
    from .claims.compare import run_compare

    common, o = _split_kwargs(kw)
    _claim(common, lambda t, c, p: run_compare(
        t, c, by=o["by"], pair=o["pair"], arms=split_list(o["arms"]),
        cell=split_list(common["cell"]), alpha=o["alpha"],
        level=common["level"], seed=common["seed"], step_unit=common["step_unit"], source=p))


#: What ``--max-rows`` adds where the command also has ``--stream``.
STREAM_HAS_NO_ROW_CAP = "; not with --stream, whose parts bound the memory)"


def say_stream_has_no_row_cap(group: click.Group) -> None:
    """In the help of every command with both ``--max-rows`` and ``--stream``, ``--max-rows``
    says that a streamed log has no row cap (and nowhere else: ``inspect`` or ``watch`` have
    no ``--stream`` to name)."""
    for cmd in group.commands.values():
        if isinstance(cmd, click.Group):
            say_stream_has_no_row_cap(cmd)
            continue
        params = {p.name: p for p in cmd.params}
        opt = params.get("max_rows")
        if "stream" in params and isinstance(opt, click.Option) and opt.help \
                and STREAM_HAS_NO_ROW_CAP not in opt.help:
            opt.help = opt.help.replace("(checked before reading)",
                                        "(checked before reading" + STREAM_HAS_NO_ROW_CAP, 1)


say_stream_has_no_row_cap(cli)
