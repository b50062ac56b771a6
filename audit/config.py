"""Every threshold of the audit in one place, with its default (AUDIT_SPEC §1–§5).

``AuditConfig`` is frozen; build one with :func:`make_config`, which applies, in order, the
profile's defaults, a ``[tool.grokaudit]`` table from ``pyproject.toml`` or a ``grokaudit.toml``,
and explicit overrides (CLI flags). The effective config is echoed in every report.
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Literal

from .errors import ConfigError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

Rule = Literal["settle", "crossing"]
PROFILES = ("default", "reference")


@dataclass(frozen=True)
class AuditConfig:
    """The audit's parameters. Times are in logged steps; fractions are of a run's step span."""

    profile: str = "default"
    # -- what to audit ----------------------------------------------------------------------
    metrics: tuple[str, ...] = ()  #: metric columns; empty = every known metric column present
    by: str | None = None  #: the axis column; None = infer the single varying numeric condition
    cell: tuple[str, ...] = ()  #: columns that split studies (e.g. ``arch``)
    acc_scale: float = 1.0  #: divide accuracies by this (100 for percent logs)
    on_duplicate: str = "error"  #: duplicate (run, step) rows with different values: error|first|last
    # -- clocks (§1) ------------------------------------------------------------------------
    mem_threshold: float = 0.99
    grok_threshold: float = 0.90
    sustain: int = 3  #: consecutive logged points below threshold that break a grok
    full_threshold: float = 0.98
    floor_frac: float = 0.10
    min_floor_points: int = 5
    max_floor_frac: float = 0.25
    rel_tol: float = 0.05
    abs_tol: float = 0.0
    drift_level: float = 0.90  #: confidence of the Theil–Sen drift interval
    max_slope_bins: int = 64
    smooth: int = 3  #: trailing rolling-median width, in metric points
    min_rel_drop: float = 0.25
    min_abs_drop: float = 0.0
    rule: str = "settle"  #: ``settle`` (default) or ``crossing`` (the reference's rule)
    eps: float = 0.10  #: the crossing rule's tolerance
    transient_threshold: float = 1.2
    # -- gates and study (§2–§3) -------------------------------------------------------------
    high_floor_factor: float = 3.0
    mono_threshold: float = 0.6
    flat_threshold: float = 0.3
    large_lag: float = 0.5
    censor_warn: float = 0.25
    endpoint_cv: float = 0.15
    # -- severity (§4) ---------------------------------------------------------------------
    fail_on: tuple[str, ...] = ("default",)  #: ``default``, ``none``, ``warning`` or reason codes
    # -- profile switches (§5): the named differences of the reference analyzer --------------
    floor_window: str = "span"  #: ``span`` (last floor_frac of the step span) or ``index``
    stability_check: bool = True
    interval_censoring: bool = True
    drop_from: str = "peak"  #: compression measured from ``peak`` (default) or ``grok`` value
    ordering: str = "intervals"  #: ``intervals`` (Kendall bounds) or ``spearman`` (point medians)
    gates: str = "default"  #: ``default`` (four gates) or ``reference`` (floor outlier, drop)
    extra: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False)

    def to_dict(self) -> dict[str, Any]:
        """The effective config as plain JSON-able values (``extra`` omitted)."""
        out: dict[str, Any] = {}
        for f in fields(self):
            if f.name == "extra":
                continue
            v = getattr(self, f.name)
            out[f.name] = list(v) if isinstance(v, tuple) else v
        return out


#: What ``--profile reference`` changes (AUDIT_SPEC §5: the public v1.5 analyzer).
REFERENCE_OVERRIDES: dict[str, Any] = {
    "floor_window": "index",
    "stability_check": False,
    "interval_censoring": False,
    "drop_from": "grok",
    "min_abs_drop": 1.0,
    "rule": "crossing",
    "eps": 0.10,
    "ordering": "spearman",
    "gates": "reference",
    "large_lag": 0.5,
    "censor_warn": 0.25,
}

_CHOICES: dict[str, tuple[str, ...]] = {
    "rule": ("settle", "crossing"),
    "on_duplicate": ("error", "first", "last"),
    "floor_window": ("span", "index"),
    "drop_from": ("peak", "grok"),
    "ordering": ("intervals", "spearman"),
    "gates": ("default", "reference"),
    "profile": PROFILES,
}

_FIELD_TYPES = {f.name: f.type for f in fields(AuditConfig)}


def _coerce(name: str, value: Any, source: str) -> Any:
    default = getattr(AuditConfig(), name)
    try:
        if isinstance(default, bool):
            if isinstance(value, str):
                if value.lower() in ("true", "1", "yes"):
                    return True
                if value.lower() in ("false", "0", "no"):
                    return False
                raise ValueError(value)
            return bool(value)
        if isinstance(default, tuple):
            if isinstance(value, str):
                return tuple(v.strip() for v in value.split(",") if v.strip())
            return tuple(str(v) for v in value)
        if name == "by":
            return None if value in (None, "") else str(value)
        if isinstance(default, int):
            if isinstance(value, float) and not value.is_integer():
                raise ValueError(value)
            return int(value)
        if isinstance(default, float):
            return float(value)
        return str(value)
    except (TypeError, ValueError):
        raise ConfigError(
            f"{source}: option {name!r} = {value!r} is not a valid {type(default).__name__}"
        ) from None


def _validate(cfg: AuditConfig) -> AuditConfig:
    for name, choices in _CHOICES.items():
        if getattr(cfg, name) not in choices:
            raise ConfigError(
                f"option {name!r} = {getattr(cfg, name)!r}; choose one of {', '.join(choices)}"
            )
    for name in ("mem_threshold", "grok_threshold", "full_threshold"):
        v = getattr(cfg, name)
        if not 0.0 < v <= 1.0:
            raise ConfigError(f"option {name!r} = {v}; it is an accuracy in (0, 1]")
    for name in ("floor_frac", "max_floor_frac", "drift_level", "censor_warn"):
        v = getattr(cfg, name)
        if not 0.0 < v < 1.0:
            raise ConfigError(f"option {name!r} = {v}; it is a fraction in (0, 1)")
    if cfg.floor_frac > cfg.max_floor_frac:
        raise ConfigError("option 'floor_frac' must not exceed 'max_floor_frac'")
    for name in ("sustain", "min_floor_points", "smooth", "max_slope_bins"):
        if getattr(cfg, name) < 1:
            raise ConfigError(f"option {name!r} must be at least 1")
    if cfg.max_slope_bins < 3:
        raise ConfigError("option 'max_slope_bins' must be at least 3")
    if cfg.acc_scale <= 0:
        raise ConfigError("option 'acc_scale' must be positive (100 for percent accuracies)")
    return cfg


def config_file_values(start: Path | None = None) -> tuple[dict[str, Any], str | None]:
    """Find ``grokaudit.toml`` or a ``pyproject.toml`` with ``[tool.grokaudit]``.

    Searches ``start`` (default: the working directory) and its parents; returns the table and
    the file it came from (``None`` when there is none).
    """
    here = (start or Path.cwd()).resolve()
    for d in (here, *here.parents):
        g = d / "grokaudit.toml"
        if g.is_file():
            return load_config_file(g), str(g)
        p = d / "pyproject.toml"
        if p.is_file():
            try:
                data = tomllib.loads(p.read_text(encoding="utf-8"))
            except (OSError, tomllib.TOMLDecodeError):
                continue
            table = data.get("tool", {}).get("grokaudit")
            if isinstance(table, dict):
                return dict(table), str(p)
    return {}, None


def load_config_file(path: str | Path) -> dict[str, Any]:
    """Read a config file: ``grokaudit.toml`` (top-level keys, or a ``[grokaudit]`` table) or
    a ``pyproject.toml`` (its ``[tool.grokaudit]`` table)."""
    p = Path(path)
    try:
        data = tomllib.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"{p}: config file not found") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{p}: not valid TOML ({exc})") from None
    if p.name == "pyproject.toml":
        return dict(data.get("tool", {}).get("grokaudit", {}))
    if "grokaudit" in data and isinstance(data["grokaudit"], dict):
        return dict(data["grokaudit"])
    return dict(data)


def make_config(profile: str | None = None, file_values: Mapping[str, Any] | None = None,
                source: str = "config", **overrides: Any) -> AuditConfig:
    """Build the effective config: profile defaults, then ``file_values``, then ``overrides``.

    ``None`` overrides are ignored (an unset CLI flag). Unknown keys raise :class:`ConfigError`.
    """
    file_values = dict(file_values or {})
    for k in file_values:
        k2 = k.replace("-", "_")
        if k2 not in _FIELD_TYPES or k2 == "extra":
            raise ConfigError(f"{source}: unknown option {k!r} (see `grokaudit check --help`)")
    file_values = {k.replace("-", "_"): v for k, v in file_values.items()}
    chosen = profile or file_values.pop("profile", None) or "default"
    file_values.pop("profile", None)
    if chosen not in PROFILES:
        raise ConfigError(f"unknown profile {chosen!r}; choose one of {', '.join(PROFILES)}")
    values: dict[str, Any] = {"profile": chosen}
    if chosen == "reference":
        values.update(REFERENCE_OVERRIDES)
    for k, v in file_values.items():
        values[k] = _coerce(k, v, source)
    for k, v in overrides.items():
        if v is None:
            continue
        if k not in _FIELD_TYPES or k == "extra":
            raise ConfigError(f"unknown option {k!r}")
        values[k] = _coerce(k, v, "command line")
    return _validate(AuditConfig(**values))


def replace(cfg: AuditConfig, **changes: Any) -> AuditConfig:
    """A copy of ``cfg`` with ``changes`` applied and validated."""
    return _validate(dataclasses.replace(cfg, **changes))
