"""``grokaudit train --engine ray``: the sweep's groups as Ray tasks.

One Ray task per *group* (the runs that train together as one batched model,
:func:`.sweep.groups`), with one GPU each when the cluster has GPUs. A task trains its group
exactly as the in-process engine does and writes, in a working folder beside OUT
(``OUT.ray/``, or the folder ``--checkpoint`` names):

- ``group-K-of-N.ckpt``: the group's checkpoint (atomic, every ``--checkpoint-minutes``);
- ``group-K-of-N.parquet``: the group's log (atomic), once it finishes or stops at
  ``--max-minutes`` (then marked ``complete: false``).

A task whose worker is lost (killed, out of memory, node gone) is retried by Ray up to
``--max-retries`` times, and the retry resumes from the group's checkpoint. The driver prints
each task's start, progress, end and every retry, then merges the groups' logs into OUT in group
order: the table the in-process engine writes, row for row (byte for byte with the same
``--threads``). Once OUT is complete the working folder is removed; after an interruption,
``--resume`` reuses the finished groups' logs and resumes the others from their checkpoints.

Nothing here imports Ray at import time: :func:`require_ray` does, and says which extra to
install. The working folder must be on a filesystem every Ray node sees.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from grokaudit.engine import start_ray, usable_cpus
from grokaudit.errors import ConfigError, ErrorCode, GrokauditError, MissingExtraError

#: Retries of a group whose worker is lost, unless ``--max-retries`` says otherwise.
DEFAULT_RETRIES = 3
#: Test hook: ``"G@S"`` or ``"G@SxK"``: the first K attempts (default 1) of group G (0-based)
#: kill their own worker (SIGKILL) right after the first checkpoint at a step ≥ S.
KILL_HOOK_ENV = "GROKAUDIT_TEST_RAY_KILL"
#: Object store of a local instance: the tasks pass configs and small results only.
LOCAL_OBJECT_STORE = 256 * 2 ** 20

# a group's log or checkpoint, and the temporary files their atomic writes use
_OURS = re.compile(r"^\.?group-\d+-of-\d+\.(parquet|ckpt)(\..+)?$")


def require_ray() -> Any:
    """The ``ray`` module, or :class:`MissingExtraError` naming the extra to install."""
    try:
        import ray
    except ImportError:
        raise MissingExtraError("`grokaudit train --engine ray` needs ray, which is not "
                                "installed; fix: pip install 'grokaudit[ray]'") from None
    return ray


def default_work_dir(out: Path) -> Path:
    """``OUT.ray``: the working folder of the groups' logs and checkpoints."""
    return out.with_name(out.name + ".ray")


def group_log(work: Path, k: int, n: int) -> Path:
    return work / f"group-{k}-of-{n}.parquet"


def group_checkpoint(work: Path, k: int, n: int) -> Path:
    return work / f"group-{k}-of-{n}.ckpt"


def saved_work(work: Path) -> list[Path]:
    """The groups' logs and checkpoints an earlier Ray run left in ``work`` (none when it is
    not a folder)."""
    if not work.is_dir():
        return []
    return sorted(p for p in work.iterdir()
                  if _OURS.match(p.name) and not p.name.startswith(".") and p.is_file())


def clear(work: Path) -> None:
    """Remove the groups' logs, checkpoints and temporary files from ``work``, then the folder
    when nothing else is in it (other files are never touched)."""
    if not work.is_dir():
        return
    for p in work.iterdir():
        if _OURS.match(p.name) and p.is_file():
            p.unlink(missing_ok=True)
    try:
        work.rmdir()
    except OSError:
        pass  # it holds files that are not ours


def connect(ray: Any) -> bool:
    """Connect to the cluster ``RAY_ADDRESS`` names, else start a local Ray instance (no
    dashboard, every CPU this process may use, the GPUs Ray finds), with the audit's
    :func:`grokaudit.engine.start_ray`. An already connected process (Python callers, tests)
    is left as it is. Returns True when this call connected, so that the caller disconnects
    (and a local instance stops) at the end."""
    if ray.is_initialized():
        return False
    addr = os.environ.get("RAY_ADDRESS", "").strip()
    try:
        # worker output stays in Ray's session logs: the driver prints the tasks' progress
        # itself; Ray's own logger (configured by ray.init) shows errors only, not its
        # startup notices
        start_ray(usable_cpus(), object_store_memory=LOCAL_OBJECT_STORE,
                  configure_logging=True)
    except Exception as exc:  # noqa: BLE001 - any failure to connect is the same error
        where = f"the Ray cluster at RAY_ADDRESS={addr}" if addr else "a local Ray instance"
        hint = ("; is `ray start --head` running there, and, when the cluster uses token "
                "authentication, does this process have its token (RAY_AUTH_MODE=token)?"
                if addr else "")
        raise GrokauditError(f"cannot start or reach {where} ({type(exc).__name__}: "
                             f"{_first_line(exc)}){hint}", code=ErrorCode.TRAINER_FAILED
                             ) from None
    return True


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0][:300] if text else type(exc).__name__


def kill_hook(k: int) -> tuple[int, int] | None:
    """``(step, attempts)`` when :data:`KILL_HOOK_ENV` names group ``k``, else None."""
    raw = os.environ.get(KILL_HOOK_ENV, "").strip()
    if not raw:
        return None
    m = re.fullmatch(r"(\d+)@(\d+)(?:x(\d+))?", raw)
    if m is None:
        raise ConfigError(f"{KILL_HOOK_ENV}={raw!r}: expected GROUP@STEP or GROUP@STEPxATTEMPTS",
                          code=ErrorCode.INVALID_OPTION)
    if int(m.group(1)) != k:
        return None
    return int(m.group(2)), int(m.group(3) or 1)


# ---------------------------------------------------------------------------------------------
# the task
# ---------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class GroupJob:
    """What one task needs: the group's runs and where its files go. Picklable."""

    index: int  #: 0-based group index
    count: int  #: groups in the sweep
    specs: list[Any]  #: the group's RunSpecs, in sweep order
    device: str  #: "cpu" or "cuda" (Ray's CUDA_VISIBLE_DEVICES picks the GPU)
    threads: int  #: torch CPU threads
    log: str  #: group-K-of-N.parquet
    checkpoint: str  #: group-K-of-N.ckpt
    checkpoint_minutes: float
    deadline: float | None  #: wall-clock time (time.time()) at which to stop; None = no limit
    provenance: dict[str, Any]  #: the sweep's provenance; the group's fields are added
    kill: tuple[int, int] | None = None  #: the test hook (step, attempts), see KILL_HOOK_ENV


class Hub:
    """The driver's mailbox (a Ray actor): tasks report their start (which counts attempts)
    and progress; the driver drains the events."""

    def __init__(self) -> None:
        self.events: list[tuple[Any, ...]] = []
        self.attempts: dict[int, int] = {}

    def start(self, k: int, where: str, resume_step: int) -> int:
        self.attempts[k] = self.attempts.get(k, 0) + 1
        self.events.append(("start", k, self.attempts[k], where, resume_step))
        return self.attempts[k]

    def post(self, event: tuple[Any, ...]) -> None:
        self.events.append(event)

    def drain(self) -> list[tuple[Any, ...]]:
        out, self.events = self.events, []
        return out


def run_group(job: GroupJob, hub: Any) -> dict[str, Any]:
    """The Ray task: train one group, resuming from its checkpoint when one exists, and write
    its log. A :class:`GrokauditError` comes back as a result (its code intact), not raised."""
    try:
        return _run_group(job, hub)
    except GrokauditError as exc:
        return {"status": "error", "code": exc.code.value, "message": str(exc)}


def _run_group(job: GroupJob, hub: Any) -> dict[str, Any]:
    import ray
    import torch
    from grokaudit.schema import write_table

    from .checkpoint import load_checkpoint, restore, save_checkpoint
    from .sweep import resolve_wc, rows_to_frame, sweep_id
    from .train import GroupTrainer

    t0 = time.monotonic()
    where = f"pid {os.getpid()} on {socket.gethostname()}"

    def call(ref: Any) -> Any:
        try:
            return ray.get(ref, timeout=60)
        except Exception:  # noqa: BLE001 - the mailbox is best effort; training goes on
            return None

    def post(*event: Any) -> None:
        try:
            hub.post.remote(event)
        except Exception:  # noqa: BLE001 - best effort
            pass

    if job.deadline is not None and time.time() >= job.deadline:
        return {"status": "not_started"}
    torch.set_num_threads(job.threads)
    if job.device == "cuda" and not torch.cuda.is_available():
        raise GrokauditError(f"{socket.gethostname()}: Ray gave this task a GPU, but torch there "
                             "sees no CUDA device; install a CUDA build of torch on that node, "
                             "or use --device cpu", code=ErrorCode.TRAINER_FAILED)
    dev = torch.device(job.device)
    gid = sweep_id(job.specs)
    ckpt, log = Path(job.checkpoint), Path(job.log)
    current = None
    if ckpt.exists():
        _, current = load_checkpoint(ckpt, gid)  # refuses another sweep's checkpoint
    attempt = call(hub.start.remote(job.index, where,
                                    current[1].step if current is not None else 0)) or 1
    group = resolve_wc(job.specs, dev, lambda s: post("msg", job.index, s))
    tr = GroupTrainer([s.cfg for s in group], dev)
    if current is not None:
        restore(tr, current[1], ckpt)
    R = len(group)
    last_ckpt = last_post = time.monotonic()

    def save() -> None:
        nonlocal last_ckpt
        save_checkpoint(ckpt, gid, {}, (0, tr.state()))
        last_ckpt = time.monotonic()
        if job.kill is not None and attempt <= job.kill[1] and tr.step >= job.kill[0]:
            os.kill(os.getpid(), signal.SIGKILL)  # the test hook: a lost worker

    def on_steps(n: int) -> None:
        nonlocal last_post
        if time.monotonic() - last_post >= 1.0:
            last_post = time.monotonic()
            post("steps", job.index, tr.step * R)

    finished = tr.run(
        should_stop=lambda: job.deadline is not None and time.time() >= job.deadline,
        on_steps=on_steps, on_checkpoint=save,
        checkpoint_due=lambda: time.monotonic() - last_ckpt >= 60.0 * job.checkpoint_minutes)
    post("steps", job.index, tr.step * R)
    prov = {**job.provenance, "group": job.index, "groups": job.count, "group_id": gid,
            "runs": R, "complete": finished}
    if not finished:
        save()
        if tr.rows:
            write_table(rows_to_frame(group, tr.rows), log, prov)
        return {"status": "stopped", "step": tr.step, "where": where, "attempt": attempt}
    write_table(rows_to_frame(group, tr.rows), log, prov)
    ckpt.unlink(missing_ok=True)  # the group's log now holds everything
    return {"status": "done", "where": where, "attempt": attempt,
            "seconds": time.monotonic() - t0,
            "summary": [(s.run_id, summ) for s, summ in zip(group, tr.summary())]}


# ---------------------------------------------------------------------------------------------
# the driver
# ---------------------------------------------------------------------------------------------

class Board:
    """The driver's progress display: the sweep's run-steps as one bar (or ``progress:``
    lines), one line per running group every ``line_seconds`` in ``lines`` mode, and a line
    for each group's start, end, retry and stop."""

    def __init__(self, grouped: list[list[Any]], mode: str, max_retries: int,
                 stream: TextIO | None = None, line_seconds: float = 30.0) -> None:
        from grokaudit.progress import Progress

        self.runs = [len(g) for g in grouped]
        self.steps = [g[0].cfg.steps for g in grouped]
        self.bar = Progress(sum(r * s for r, s in zip(self.runs, self.steps)), mode, stream,
                            line_seconds)
        self.mode = self.bar.mode
        self.max_retries = max_retries
        self.done = [0] * len(grouped)
        self.where: dict[int, str] = {}
        self.attempts: dict[int, int] = {}
        self.since: dict[int, tuple[float, int]] = {}  # start time, run-steps done then
        self.running: set[int] = set()
        self.line_seconds = line_seconds
        self.last = time.monotonic()

    def label(self, k: int) -> str:
        r = self.runs[k]
        return f"group {k + 1}/{len(self.runs)} ({r} run{'s' if r != 1 else ''})"

    def message(self, text: str) -> None:
        self.bar.message(text)

    def _set(self, k: int, value: int) -> None:
        delta = value - self.done[k]
        self.done[k] = value
        if delta > 0:
            finished = sum(d >= r * s for d, r, s in zip(self.done, self.runs, self.steps))
            self.bar.advance(delta, f"groups: {finished}/{len(self.runs)} done, "
                                    f"{len(self.running)} running;")
        else:
            self.bar.done += delta  # a retry went back to its checkpoint

    def reused(self, k: int) -> None:
        self._set(k, self.runs[k] * self.steps[k])

    def absorb(self, events: list[tuple[Any, ...]]) -> None:
        for ev in events:
            kind, k = ev[0], int(ev[1])
            if kind == "start":
                attempt, where, step = int(ev[2]), str(ev[3]), int(ev[4])
                if attempt > 1:
                    lost = self.where.get(k, "an unknown worker")
                    how = (f"resumes from its checkpoint at step {step}" if step
                           else "starts over (no checkpoint yet)")
                    self.message(f"{self.label(k)}: worker lost (attempt {attempt - 1}, {lost}); "
                                 f"retry {attempt - 1} of {self.max_retries} on {where} {how}")
                elif step:
                    self.message(f"{self.label(k)}: resumed from its checkpoint at step {step} "
                                 f"on {where}")
                elif self.mode != "none":
                    self.message(f"{self.label(k)}: started on {where}")
                self.where[k], self.attempts[k] = where, attempt
                self.running.add(k)
                self._set(k, step * self.runs[k])
                self.since[k] = (time.monotonic(), self.done[k])
            elif kind == "steps":
                self._set(k, int(ev[2]))
            elif kind == "msg":
                self.message(f"{self.label(k)}: {ev[2]}")

    def finished(self, k: int, res: dict[str, Any]) -> None:
        self.running.discard(k)
        status = res.get("status")
        if status == "done":
            self._set(k, self.runs[k] * self.steps[k])
            if self.mode != "none":
                self.message(f"{self.label(k)}: done in {res['seconds']:.0f} s on "
                             f"{res['where']}")
            for run_id, summ in res["summary"]:
                g = summ["grok_step"]
                self.message(f"run {run_id}: grokked at step {g if g is not None else 'never'}, "
                             f"final train_acc {summ['train_acc']:.3f}, "
                             f"test_acc {summ['test_acc']:.3f}")
        elif status == "stopped":
            self.message(f"{self.label(k)}: stopped at --max-minutes at step {res['step']}; "
                         "continue with --resume")
        elif status == "not_started":
            self.message(f"{self.label(k)}: not started before --max-minutes ran out; "
                         "continue with --resume")

    def lost(self, k: int, why: str) -> None:
        self.running.discard(k)
        self.message(f"{self.label(k)}: failed on attempt {self.attempts.get(k, 1)} "
                     f"({self.where.get(k, 'unknown worker')}): {why}")

    def tick(self) -> None:
        now = time.monotonic()
        if self.mode != "lines" or now - self.last < self.line_seconds:
            return
        self.last = now
        for k in sorted(self.running):
            t, d0 = self.since.get(k, (now, 0))
            total = self.runs[k] * self.steps[k]
            rate = (self.done[k] - d0) / max(now - t, 1e-9)
            eta = f"{(total - self.done[k]) / rate:.0f}s" if rate > 0 else "?"
            self.bar.stream.write(
                f"progress: {self.label(k)} on {self.where.get(k, '?')}: step "
                f"{self.done[k] // self.runs[k]}/{self.steps[k]} "
                f"({100 * self.done[k] / max(total, 1):.0f}%), {rate:.0f} run-steps/s, "
                f"ETA {eta}\n")
        self.bar.stream.flush()


@dataclass
class RayResult:
    """What :func:`run_ray` returns: the merged table, whether every group finished, the wall
    time and the device the tasks trained on."""

    table: Any  # pandas.DataFrame
    complete: bool
    wall_seconds: float
    device: str


def _drain(ray: Any, hub: Any) -> list[tuple[Any, ...]]:
    """The events the tasks posted since the last call (none when the mailbox is gone: the
    tasks' results still arrive)."""
    try:
        return list(ray.get(hub.drain.remote(), timeout=60))
    except Exception:  # noqa: BLE001 - progress is best effort
        return []


def _read_group(path: Path, gid: str) -> tuple[Any, bool]:
    """A group's log and whether it is complete; refuses another sweep's."""
    import pyarrow.parquet as pq
    from grokaudit.schema import PROVENANCE_KEY

    try:
        table = pq.read_table(path)
        prov = json.loads((table.schema.metadata or {}).get(PROVENANCE_KEY, b"{}"))
    except Exception as exc:  # noqa: BLE001 - an unreadable file is one user error
        raise ConfigError(f"{path}: cannot read this group's log ({type(exc).__name__}); "
                          "delete it to train the group again", code=ErrorCode.FILE_UNREADABLE
                          ) from None
    if not isinstance(prov, dict) or prov.get("group_id") != gid:
        raise ConfigError(f"{path}: this group's log belongs to a different sweep (config, "
                          "flags or shard changed); start over with --overwrite",
                          code=ErrorCode.INCOMPATIBLE_INPUTS)
    return table.to_pandas(), prov.get("complete") is True


def run_ray(specs: list[Any], *, work: Path, device: str = "auto", resume: bool = False,
            checkpoint_minutes: float = 5.0, max_minutes: float | None = None,
            threads: int | None = None, progress: str = "auto",
            max_retries: int = DEFAULT_RETRIES, provenance: dict[str, Any] | None = None,
            poll_seconds: float = 0.5) -> RayResult:
    """Train every group of ``specs`` as a Ray task and merge their logs (see the module's
    docstring). Raises :class:`GrokauditError` (``TRAINER_FAILED``) when a group still fails
    after its retries; the other groups' logs and every checkpoint are then kept in ``work``."""
    ray = require_ray()
    from .sweep import groups, sweep_id

    t0 = time.monotonic()
    deadline = None if max_minutes is None else time.time() + 60.0 * max_minutes
    work = work.absolute()  # the tasks run elsewhere: another folder, maybe another node
    grouped = groups(specs)
    n = len(grouped)
    gids = [sweep_id(g) for g in grouped]
    board = Board(grouped, progress, max_retries)
    kills = [kill_hook(k) for k in range(n)]
    complete_logs = _reused_groups(work, gids, board) if resume else set()
    started = connect(ray)
    try:
        use_gpu, per_task = _task_resources(ray, device, threads)
        todo = [k for k in range(n) if k not in complete_logs]
        failures: list[str] = []
        if todo:
            work.mkdir(parents=True, exist_ok=True)
            hub = ray.remote(num_cpus=0)(Hub).remote()
            task = ray.remote(run_group)
            refs: dict[Any, int] = {}
            for k in todo:
                job = GroupJob(k, n, grouped[k], "cuda" if use_gpu else "cpu", per_task,
                               str(group_log(work, k, n)), str(group_checkpoint(work, k, n)),
                               checkpoint_minutes, deadline, dict(provenance or {}), kills[k])
                ref = task.options(num_cpus=per_task, num_gpus=1 if use_gpu else 0,
                                   max_retries=max_retries, retry_exceptions=False,
                                   name=f"grokaudit-train-group-{k + 1}-of-{n}").remote(job, hub)
                refs[ref] = k
            failures = _wait_for_groups(ray, refs, hub, board, poll_seconds)
        if failures:
            raise GrokauditError(
                f"{len(failures)} of {n} group(s) failed: {'; '.join(failures)}; the other "
                f"groups' logs and every checkpoint are kept in {work}: rerun the same command "
                "with --resume", code=ErrorCode.TRAINER_FAILED)
    finally:
        if started:
            ray.shutdown()
    table, complete = _merged_logs(work, gids)
    return RayResult(table, complete, time.monotonic() - t0, "cuda" if use_gpu else "cpu")


def _reused_groups(work: Path, gids: list[str], board: Board) -> set[int]:
    """With ``--resume``: the groups whose log in ``work`` is already complete (not run
    again)."""
    n = len(gids)
    complete_logs: set[int] = set()
    for k in range(n):
        if group_log(work, k, n).exists() and _read_group(group_log(work, k, n), gids[k])[1]:
            complete_logs.add(k)
            board.reused(k)
    if complete_logs or saved_work(work):
        board.message(f"resumed from {work}: {len(complete_logs)} of {n} group(s) done")
    return complete_logs


def _task_resources(ray: Any, device: str, threads: int | None) -> tuple[bool, int]:
    """Whether each task takes a GPU, and the CPUs it asks for; refused when the cluster has
    no GPU for ``--device cuda`` or fewer CPUs than ``--threads``."""
    gpus = float(ray.cluster_resources().get("GPU", 0))
    cpus = float(ray.cluster_resources().get("CPU", 0))
    if device == "cuda" and gpus < 1:
        raise ConfigError("--device cuda: the Ray cluster has no GPU; use --device cpu or "
                          "auto", code=ErrorCode.INVALID_OPTION, option="--device")
    use_gpu = device == "cuda" or (device == "auto" and gpus >= 1)
    per_task = threads or 1
    if per_task > cpus:
        raise ConfigError(f"--threads {per_task}: each task asks Ray for {per_task} CPUs, "
                          f"but the cluster has {cpus:g}", code=ErrorCode.OPTION_OUT_OF_RANGE,
                          option="--threads")
    return use_gpu, per_task


def _wait_for_groups(ray: Any, refs: dict[Any, int], hub: Any, board: Board,
                     poll_seconds: float) -> list[str]:
    """Every group task waited for, progress drained from ``hub`` as it comes; returns the
    groups that failed (a crash, a lost worker) with why. A user error (the same in every
    group) cancels the others and is raised."""
    failures: list[str] = []
    pending = list(refs)
    while pending:
        ready, pending = ray.wait(pending, num_returns=1, timeout=poll_seconds)
        board.absorb(_drain(ray, hub))
        for ref in ready:
            k = refs[ref]
            try:
                res = ray.get(ref)
            except ray.exceptions.RayTaskError as exc:  # a bug or a crash in torch
                cause = getattr(exc, "cause", None) or exc
                why = f"{type(cause).__name__}: {_first_line(cause)}"
                board.lost(k, why)
                failures.append(f"{board.label(k)}: {why}")
                continue
            except ray.exceptions.RayError as exc:  # the worker or its node was lost
                tries = board.attempts.get(k, 1)
                why = (f"worker lost on {tries} attempt{'s' if tries != 1 else ''} "
                       f"({type(exc).__name__})")
                board.lost(k, why)
                failures.append(f"{board.label(k)}: {why}")
                continue
            if res.get("status") == "error":  # a user error: the same in every group
                for other in pending:
                    ray.cancel(other)
                raise GrokauditError(res["message"], code=ErrorCode(res["code"]))
            board.finished(k, res)
        board.tick()
    board.absorb(_drain(ray, hub))
    return failures


def _merged_logs(work: Path, gids: list[str]) -> tuple[Any, bool]:
    """Every group's log in ``work`` as one frame, and whether every group is complete."""
    import pandas as pd

    n = len(gids)
    frames = []
    complete = True
    for k in range(n):
        path = group_log(work, k, n)
        if not path.exists():
            complete = False
            continue
        frame, done = _read_group(path, gids[k])
        complete = complete and done
        frames.append(frame)
    table = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
    return table, complete
