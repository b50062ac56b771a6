"""Option metadata in one place (issue 43): each AuditConfig field declares its Option, and the
flags, ranges, choices, help, the file-only options, the profile switches, the report's config
line and the "did you mean" of a misspelt name all follow from it."""

from __future__ import annotations

from dataclasses import dataclass, field, fields

import click
import grokaudit.config as config
import pytest
from click.testing import CliRunner
from grokaudit.cli import STREAM_HAS_NO_ROW_CAP, cli
from grokaudit.config import (
    _CHOICES,
    FILE_ONLY,
    OPTIONAL,
    OPTIONS,
    PROFILE_SWITCHES,
    RANGES,
    REPORT_KEYS,
    AuditConfig,
    ConfigError,
    Range,
    did_you_mean,
    make_config,
    opt,
    options_of,
    parse_fail_on,
    replace,
)
from grokaudit.errors import ErrorCode
from grokaudit.options import THRESHOLD_FLAGS, help_of, threshold_option
from grokaudit.report import config_keys

NAMES = [f.name for f in fields(AuditConfig) if f.name != "extra"]


@pytest.fixture(scope="module")
def check_help() -> str:
    """``grokaudit check --help``, its whitespace folded (click wraps the lines)."""
    r = CliRunner().invoke(cli, ["check", "--help"], terminal_width=200)
    assert r.exit_code == 0, r.output
    return " ".join(r.output.split())


def test_every_field_declares_its_option() -> None:
    assert list(OPTIONS) == NAMES
    for name, o in OPTIONS.items():
        assert o.kind in config._COERCERS, name
        assert (o.flag is None) == (o.set_by != "flag"), name


def test_the_tables_are_the_metadata() -> None:
    """One definition of each fact: the module-level tables are read off the fields."""
    declared = options_of(AuditConfig)
    assert RANGES == {n: o.range for n, o in declared.items() if o.range is not None}
    assert _CHOICES == {n: o.choices for n, o in declared.items() if o.choices}
    assert set(FILE_ONLY) == {n for n, o in declared.items() if o.set_by == "file"}
    assert set(PROFILE_SWITCHES) == {n for n, o in declared.items() if o.set_by == "switch"}
    assert set(OPTIONAL) == {"grok_below", "full_below"}
    assert [t[1] for t in THRESHOLD_FLAGS] == [n for n, o in declared.items() if o.threshold]


def test_a_field_declared_with_metadata_is_resolved_like_the_others() -> None:
    """A new field needs only its metadata: its flag and kind follow from its name and type."""

    @dataclass(frozen=True)
    class Wider(AuditConfig):
        new_level: float = field(default=0.5, metadata=opt(
            range=Range(0, 1), threshold=True, help="a new threshold"))
        new_mode: str = field(default="a", metadata=opt(set_by="switch", choices=("a", "b")))

    wider = options_of(Wider)
    assert list(wider)[:-2] == NAMES
    assert (wider["new_level"].flag, wider["new_level"].kind) == ("--new-level", "float")
    assert wider["new_level"].range == Range(0, 1)
    assert (wider["new_mode"].flag, wider["new_mode"].kind) == (None, "text")


def test_every_ranged_option_has_a_flag_or_is_file_only(check_help: str) -> None:
    for name in RANGES:
        o = OPTIONS[name]
        assert o.flag is not None or name in FILE_ONLY, name
        if o.flag is not None:
            assert f"{o.flag} " in check_help, name


def test_check_help_states_each_range_from_the_metadata(check_help: str) -> None:
    unstated = [n for n in RANGES if OPTIONS[n].flag is not None
                and OPTIONS[n].note is not None and "{range}" not in OPTIONS[n].note]
    assert unstated == ["full_below"]  # its help says its default is --grok-below
    for name, rng in RANGES.items():
        if OPTIONS[name].flag is not None and name not in unstated:
            assert str(rng) in help_of(name), name
            shown = help_of(name)
            if name == "max_rows":  # check streams: --max-rows says a streamed log has no cap
                shown = shown.replace("(checked before reading)",
                                      "(checked before reading" + STREAM_HAS_NO_ROW_CAP)
            assert " ".join(shown.split()) in check_help, name


def test_choices_in_help_are_the_metadata(check_help: str) -> None:
    for name, choices in _CHOICES.items():
        if OPTIONS[name].flag is not None:
            assert f"{OPTIONS[name].flag} [{'|'.join(choices)}]" in check_help, name


def test_threshold_flags_follow_the_fields(check_help: str) -> None:
    for flag, name, typ, text in THRESHOLD_FLAGS:
        o = OPTIONS[name]
        assert (flag, text) == (o.flag, o.help)
        assert typ is (int if o.kind == "int" else float)
        assert flag in check_help
    with pytest.raises(ValueError):
        threshold_option("rule")  # a choice, not a threshold


@pytest.mark.parametrize("name", NAMES)
def test_every_option_refuses_an_unreadable_value_naming_itself(name: str) -> None:
    with pytest.raises(ConfigError) as ei:
        config._coerce(name, object(), "test")
    assert (ei.value.code, ei.value.option) == (ErrorCode.INVALID_OPTION, name)


@pytest.mark.parametrize("name", NAMES)
def test_every_default_reads_back_as_itself(name: str) -> None:
    default = getattr(AuditConfig(), name)
    assert config._coerce(name, default, "test") == default


def test_report_keys_follow_the_grok_criterion() -> None:
    keys = [k for k, _ in REPORT_KEYS]
    assert len(keys) == len(set(keys))
    assert all(k in OPTIONS or k == "axis" for k in keys)
    accuracy = config_keys(make_config().to_dict() | {"axis": "wd"})
    assert "grok_threshold" in accuracy and "grok_below" not in accuracy
    assert accuracy[0] == "axis" and accuracy[-1] == "fail_on"
    loss = config_keys(make_config(grok_on="test_loss", grok_below=0.1).to_dict())
    assert loss[:3] == ["grok_on", "grok_below", "full_below"]
    assert "grok_threshold" not in loss
    assert "acc_scale" in config_keys(make_config(acc_scale=100).to_dict())


def test_a_changed_report_position_moves_the_key(monkeypatch: pytest.MonkeyPatch) -> None:
    """The report reads its list from the metadata, not from a copy of its own."""
    import grokaudit.report as report

    monkeypatch.setattr(report, "REPORT_KEYS", (("fail_on", "always"), ("rule", "always")))
    assert config_keys(make_config().to_dict()) == ["fail_on", "rule"]


def test_a_misspelt_key_or_code_suggests_the_closest() -> None:
    with pytest.raises(ConfigError) as ei:
        make_config(file_values={"rel_tl": 0.1})
    assert (ei.value.code, ei.value.option) == (ErrorCode.UNKNOWN_OPTION, "rel_tl")
    assert "'rel_tol'" in str(ei.value)
    with pytest.raises(ConfigError) as ei:
        make_config(grok_treshold=0.9)
    assert ei.value.code is ErrorCode.UNKNOWN_OPTION and "'grok_threshold'" in str(ei.value)
    with pytest.raises(ConfigError) as ei:
        parse_fail_on("NO_GROKK")
    assert (ei.value.code, ei.value.option) == (ErrorCode.INVALID_FAIL_ON, "fail_on")
    assert "NO_GROK?" in str(ei.value)


def test_every_suggestion_comes_from_one_helper(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(config, "did_you_mean", lambda *a, **k: "did you mean SENTINEL?")
    attempts = [lambda: make_config(file_values={"rel_tl": 0.1}),
                lambda: make_config(rel_tl=0.1),
                lambda: replace(AuditConfig(), rel_tl=0.1),
                lambda: parse_fail_on("NO_GROKK")]
    for attempt in attempts:
        with pytest.raises(ConfigError) as ei:
            attempt()
        assert "SENTINEL" in str(ei.value)


def test_did_you_mean() -> None:
    assert "'rel_tol'" in did_you_mean("rel_tl", OPTIONS)
    assert did_you_mean("zzzz", OPTIONS) == ""
    assert "NO_GROK" in did_you_mean("NO_GROKK", ["NO_GROK"], quote=False)
    assert "'" not in did_you_mean("NO_GROKK", ["NO_GROK"], quote=False)
    both = did_you_mean("w1", ["w1.weight", "w1.bias", "x"], n=3, cutoff=0.3)
    assert "'w1.weight'" in both and "'w1.bias'" in both and "'x'" not in both


def _leaf_commands(group: click.Group, prefix: tuple[str, ...] = ()
                   ) -> list[tuple[tuple[str, ...], click.Command]]:
    out: list[tuple[tuple[str, ...], click.Command]] = []
    for name, cmd in sorted(group.commands.items()):
        if isinstance(cmd, click.Group):
            out += _leaf_commands(cmd, (*prefix, name))
        else:
            out.append(((*prefix, name), cmd))
    return out


@pytest.mark.parametrize("path,cmd", _leaf_commands(cli),
                         ids=[" ".join(p) for p, _ in _leaf_commands(cli)])
def test_a_help_names_stream_only_where_the_command_has_it(path: tuple[str, ...],
                                                           cmd: click.Command) -> None:
    """--max-rows tells that a streamed log has no row cap in the commands that stream, and a
    command without --stream (inspect, watch, convert) never names it."""
    res = CliRunner().invoke(cli, [*path, "--help"], terminal_width=200)
    assert res.exit_code == 0, res.output
    names = {p.name for p in cmd.params}
    if "stream" not in names:
        assert "--stream" not in res.output
    elif "max_rows" in names:
        rows = next(p for p in cmd.params if p.name == "max_rows")
        assert isinstance(rows, click.Option) and rows.help is not None
        assert "--stream" in rows.help
