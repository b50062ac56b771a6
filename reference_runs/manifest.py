"""The ``MANIFEST.toml`` written next to a log: config, command, versions, device, wall time."""

from __future__ import annotations

import datetime as _dt
import os
import platform
import re
from pathlib import Path
from typing import Any

from grokaudit.outputs import open_temp

_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")


def _toml_string(text: str) -> str:
    """A TOML basic string: quotes, backslashes and every control character escaped (a raw
    carriage return or tab in a command line would otherwise make the file invalid TOML)."""
    out = []
    for ch in text:
        if ch in ('"', "\\"):
            out.append("\\" + ch)
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def _toml_key(key: Any) -> str:
    """A bare key when it can be one, else a quoted key (``'my key'``, ``'a.b'`` stay one key,
    never a nested table)."""
    k = str(key)
    return k if _BARE_KEY.fullmatch(k) else _toml_string(k)


def _toml_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return repr(v) if v == v and abs(v) != float("inf") else ('"nan"' if v != v else '"inf"')
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    return _toml_string(str(v))


def to_toml(data: dict[str, Any]) -> str:
    """A small TOML emitter for flat values and one level of tables (None values skipped)."""
    key = _toml_key
    lines = [f"{key(k)} = {_toml_value(v)}" for k, v in data.items()
             if not isinstance(v, dict) and v is not None]
    for k, v in data.items():
        if isinstance(v, dict):
            lines += ["", f"[{key(k)}]"]
            for kk, vv in v.items():
                if isinstance(vv, dict):
                    continue
                if vv is not None:
                    lines.append(f"{key(kk)} = {_toml_value(vv)}")
            for kk, vv in v.items():
                if isinstance(vv, dict):
                    lines += ["", f"[{key(k)}.{key(kk)}]"]
                    lines += [f"{key(a)} = {_toml_value(b)}" for a, b in vv.items()
                              if b is not None]
    return "\n".join(lines) + "\n"


def environment(device: str) -> dict[str, Any]:
    """Package versions and the device, for reproducibility."""
    import numpy
    import pandas
    import pyarrow
    import torch
    from grokaudit import __version__

    dev = device
    if device.startswith("cuda") and torch.cuda.is_available():
        dev = f"{device} ({torch.cuda.get_device_name(0)})"
    elif device == "cpu":
        dev = f"cpu ({platform.processor() or platform.machine()}, {os.cpu_count()} cores, " \
              f"{torch.get_num_threads()} torch threads)"
    return {"grokaudit": __version__, "torch": torch.__version__, "numpy": numpy.__version__,
            "pandas": pandas.__version__, "pyarrow": pyarrow.__version__,
            "python": platform.python_version(), "platform": platform.platform(),
            "device": dev}


def trainer_commit() -> str | None:
    """The git commit of the trainer's source tree, with ``+dirty`` when it has local changes;
    None outside a git checkout (an installed wheel)."""
    import subprocess

    here = Path(__file__).parent
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=here, capture_output=True,
                              text=True, timeout=10)
        if head.returncode != 0:
            return None
        dirty = subprocess.run(["git", "status", "--porcelain", "--", "."], cwd=here,
                               capture_output=True, text=True, timeout=10)
        return head.stdout.strip() + ("+dirty" if dirty.stdout.strip() else "")
    except (OSError, subprocess.SubprocessError):
        return None


def recipe_echo(sweep: Any, specs: list[Any]) -> dict[str, Any]:
    """The manifest's ``[recipe]`` table: the recipe(s) the runs use, where each comes from and
    what its source leaves open; per recipe and architecture the values it set
    (``[recipe.<name>_<arch>]``); and every recipe field the config set itself
    (``[recipe.overrides]``, a grid key as its list of values), with the recipe's value it
    replaced (``[recipe.replaced]``)."""
    from .recipes import RECIPE_FIELDS, RECIPES, resolve

    pairs = sorted({(s.cfg.recipe, s.cfg.arch) for s in specs})
    names = sorted({n for n, _ in pairs})
    out: dict[str, Any] = {
        "names": names,
        "source": [RECIPES[n].source for n in names],
        "open": [f"{n}: {o}" for n in names for o in RECIPES[n].open],
    }
    overrides: dict[str, Any] = {}
    replaced: dict[str, Any] = {}
    for name, arch in pairs:
        values = resolve(name, arch)
        out[f"{name}_{arch}"] = {k: values[k] for k in RECIPE_FIELDS}
        for k in RECIPE_FIELDS:
            if k in sweep.grid:
                overrides[k] = list(sweep.grid[k])
            elif k in sweep.base:
                overrides[k] = sweep.base[k]
            else:
                continue
            replaced[k] = values[k] if len(pairs) == 1 else replaced.get(k, values[k])
    out["overrides"] = overrides
    out["replaced"] = replaced
    return out


def write_manifest(path: Path, *, command: str, sweep_file: str, sweep: dict[str, Any],
                   device: str, wall_seconds: float, n_runs: int, n_rows: int,
                   complete: bool, recipe: dict[str, Any] | None = None) -> Path:
    """Write the manifest atomically; returns its path."""
    data = {
        "log": path.name.replace(".MANIFEST.toml", ".parquet"),
        "command": command,
        "config_file": sweep_file,
        "date": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "wall_seconds": round(wall_seconds, 1),
        "runs": n_runs,
        "rows": n_rows,
        "complete": complete,
        "trainer_commit": trainer_commit(),
        "environment": environment(device),
        "sweep": sweep,
    }
    if recipe is not None:
        data["recipe"] = recipe
    made: list[str] = []  # the temporary file's name, known before the file exists
    try:
        fd = open_temp(path.parent, f".{path.name}.", "", made)
        with os.fdopen(fd, "w") as fh:
            fh.write(to_toml(data))
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(made[-1], 0o666 & ~umask)  # made 0600; a manifest is meant to be shared
        os.replace(made[-1], path)
    except BaseException:  # an error or an interruption leaves no temporary file
        for name in made:
            Path(name).unlink(missing_ok=True)
        raise
    return path
