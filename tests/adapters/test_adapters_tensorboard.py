"""TensorBoard event files written by torch's SummaryWriter and TensorBoard's own summary API."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from grokaudit.adapters import detect_format, read_log
from grokaudit.errors import ErrorCode, LogFormatError
from grokaudit.schema import build_log_table
from helpers.tables import read_as_percent
from helpers.wire import varint

tb = pytest.importorskip("tensorboard", reason="the [tensorboard] extra is not installed")
torch_tb = pytest.importorskip("torch.utils.tensorboard",
                               reason="torch is not installed (fixtures use SummaryWriter)")



def write_scalars(logdir: Path, series: dict[str, tuple[np.ndarray, np.ndarray]]) -> None:
    """One SummaryWriter session: ``add_scalar`` for each (tag, (steps, values))."""
    w = torch_tb.SummaryWriter(str(logdir))
    for tag, (steps, values) in series.items():
        for s, v in zip(steps.tolist(), values.tolist()):
            w.add_scalar(tag, v, s)
    w.close()


def event_file(d: Path) -> Path:
    (f,) = sorted(d.glob("events.out.tfevents.*"))
    return f


def test_sweep_with_add_scalar_matches_canonical(tmp_path: Path, sweep: pd.DataFrame) -> None:
    # runs/wd1.5_s0/events.out.tfevents.*  (one directory per run, tags test/acc, train/acc, …)
    root = tmp_path / "runs"
    for run, g in sweep.groupby("run"):
        write_scalars(root / str(run), {
            "test/acc": (g["step"].to_numpy(), g["test_acc"].to_numpy()),
            "train/acc": (g["step"].to_numpy(), g["train_acc"].to_numpy()),
            "emb_erank": (g["step"].to_numpy(), g["emb_erank"].to_numpy())})
    assert detect_format(root) == "tensorboard"
    t = read_log(root, cond={"wd": r"wd([0-9.]+)", "seed": r"_s(\d+)"})
    build_log_table(t)
    got = t.to_pandas()
    ref = sweep.sort_values(["run", "step"]).reset_index(drop=True)
    for col in ("test_acc", "train_acc", "emb_erank", "wd", "seed"):
        np.testing.assert_array_equal(got[col].to_numpy(), ref[col].to_numpy())


def test_tensor_style_scalars_both_writers(tmp_path: Path, prov) -> None:
    # tf2/events.out.tfevents.*  (TensorBoard's summary_v2.scalar_pb: DT_FLOAT tensor, plugin scalars)
    # torch/events.out.tfevents.* (SummaryWriter.add_scalar(..., new_style=True))
    from tensorboard.compat.proto.event_pb2 import Event
    from tensorboard.plugins.scalar import summary_v2
    from tensorboard.summary.writer.event_file_writer import EventFileWriter

    w = EventFileWriter(str(tmp_path / "tf2"))
    for s in range(20):
        w.add_event(Event(wall_time=time.time(), step=s * 10,
                          summary=summary_v2.scalar_pb("test_acc", s / 20)))
    w.close()
    sw = torch_tb.SummaryWriter(str(tmp_path / "torch"))
    for s in range(20):
        sw.add_scalar("test_acc", s / 20, s * 10, new_style=True)
    sw.close()
    t = read_log(tmp_path)
    df = t.to_pandas()
    assert df.groupby("run").size().to_dict() == {"tf2": 20, "torch": 20}
    np.testing.assert_allclose(df.loc[df.run == "tf2", "test_acc"], np.arange(20) / 20, rtol=1e-6)
    assert prov(t)["tensor_scalars"] == 40


def test_resumed_run_second_event_file_last_writer_wins(tmp_path: Path, codes, prov) -> None:
    # run/events.out.tfevents.<t0>.*  steps 0..90 (value 0.1)
    # run/events.out.tfevents.<t1>.*  steps 50..150 (value 0.7): the resumed run
    write_scalars(tmp_path / "run", {"test_acc": (np.arange(0, 100, 10), np.full(10, 0.1))})
    time.sleep(0.01)
    write_scalars(tmp_path / "run", {"test_acc": (np.arange(50, 151, 10), np.full(11, 0.7))})
    assert len(list((tmp_path / "run").glob("events*"))) == 2
    t = read_log(tmp_path / "run")
    df = t.to_pandas().set_index("step")
    assert len(df) == 16
    assert df.loc[40, "test_acc"] == pytest.approx(0.1) and df.loc[50, "test_acc"] == pytest.approx(0.7)
    assert codes(t) == ["RESUMED_DUPLICATES"]
    assert prov(t)["findings"][0]["count"] == 5


def test_rewind_within_one_file_is_reported(tmp_path: Path, codes) -> None:
    write_scalars(tmp_path / "run", {"test_acc": (np.r_[np.arange(10), np.arange(5, 12)],
                                                  np.r_[np.zeros(10), np.ones(7)])})
    t = read_log(tmp_path / "run")
    assert t.num_rows == 12 and codes(t) == ["RESUMED_DUPLICATES"]
    assert t.to_pandas().set_index("step").loc[7, "test_acc"] == 1.0


def test_a_tag_written_twice_with_one_value_is_no_resume(tmp_path: Path, codes, prov) -> None:
    """Lightning writes its ``epoch`` tag twice at some steps, with one value: each was a
    ``RESUMED_DUPLICATES`` finding ("a resumed or rewound run"; 47 on the public log
    AnAccount/DLGN, none true). A repeat with the value kept replaces nothing: it is read once
    and counted (``points_repeated``); a repeat with another value is still a resume."""
    steps = np.arange(0, 100, 10)
    w = torch_tb.SummaryWriter(str(tmp_path / "run"))
    for s in steps.tolist():
        w.add_scalar("test_acc", s / 100, s)
        w.add_scalar("epoch", s // 10, s)
        w.add_scalar("epoch", s // 10, s)  # Lightning: once per step end, once per epoch end
    w.close()
    t = read_log(tmp_path / "run")
    assert t.num_rows == 10 and codes(t) == []
    assert prov(t)["points_repeated"] == 10 and prov(t)["points_replaced"] == 0
    assert prov(t)["points_read"] == 30


def test_nan_values_kept_as_missing(tmp_path: Path) -> None:
    vals = np.linspace(0, 1, 10)
    vals[4] = np.nan
    write_scalars(tmp_path / "run", {"test_acc": (np.arange(10), vals)})
    df = read_log(tmp_path / "run").to_pandas()
    assert len(df) == 10 and np.isnan(df["test_acc"].iloc[4])


def test_percent_accuracy(tmp_path: Path, prov) -> None:
    write_scalars(tmp_path / "run", {"acc/test": (np.arange(10), np.linspace(0, 100, 10))})
    t = read_log(tmp_path / "run")
    assert t.column("test_acc").to_numpy().max() == pytest.approx(100.0)  # as logged
    assert read_as_percent(t) == pytest.approx(1.0)


def test_100k_points_per_tag_read_in_full(tmp_path: Path) -> None:
    n = 100_001
    steps = np.arange(n)
    write_scalars(tmp_path / "run", {"test_acc": (steps, (steps % 997) / 997.0)})
    t = read_log(tmp_path / "run")
    assert t.num_rows == n
    np.testing.assert_allclose(t.column("test_acc").to_numpy(),
                               ((steps % 997) / 997.0).astype(np.float32), rtol=0)


def _small_run(tmp_path: Path) -> Path:
    write_scalars(tmp_path / "run", {"test_acc": (np.arange(50), np.linspace(0, 1, 50))})
    return event_file(tmp_path / "run")


def test_truncated_file_reported_with_offset(tmp_path: Path, prov, codes) -> None:
    f = _small_run(tmp_path)
    data = f.read_bytes()
    f.write_bytes(data[:-7])  # the last record loses its tail
    t = read_log(tmp_path / "run")
    assert codes(t) == ["SOURCE_TRUNCATED"]
    (finding,) = prov(t)["findings"]
    assert finding["file"] == str(f) and 0 < finding["offset"] < len(data) - 7
    assert t.num_rows == 49  # every intact record kept, the cut one reported


@pytest.mark.parametrize("where", ["payload", "length"])
def test_flipped_byte_fails_crc_and_is_reported(tmp_path: Path, prov, codes, where: str) -> None:
    f = _small_run(tmp_path)
    data = bytearray(f.read_bytes())
    # the 22nd record: the file_version event, then 20 intact scalar records before it
    offsets = [0]
    while offsets[-1] < len(data):
        offsets.append(offsets[-1] + 16 + int.from_bytes(data[offsets[-1]:offsets[-1] + 8], "little"))
    offset = offsets[21]
    data[offset + (20 if where == "payload" else 2)] ^= 0x40
    f.write_bytes(bytes(data))
    t = read_log(tmp_path / "run")
    assert codes(t) == ["SOURCE_TRUNCATED"]
    (finding,) = prov(t)["findings"]
    assert finding["offset"] == offset and finding["file"] == str(f)
    assert t.num_rows == (49 if where == "payload" else 20)


@pytest.mark.parametrize("content,code", [
    (b"", ErrorCode.FILE_EMPTY),
    (b"not an event file at all, just text\n", ErrorCode.FILE_UNREADABLE)])
def test_empty_or_wrong_event_file(tmp_path: Path, content: bytes, code: ErrorCode) -> None:
    d = tmp_path / "run"
    d.mkdir()
    f = d / "events.out.tfevents.123.host"
    f.write_bytes(content)
    with pytest.raises(LogFormatError) as exc:
        read_log(d)
    assert exc.value.path == str(f) and exc.value.code is code


def test_batch_wrapping_matches_protobuf_varints() -> None:
    from grokaudit.adapters.tensorboard import _wrap

    rng = np.random.default_rng(0)
    payloads = [rng.integers(0, 256, n, dtype=np.uint8).tobytes() for n in (0, 5, 127, 128,
                                                                             200, 20_000, 3)]
    data = b"".join(b"hdr" + p for p in payloads)
    starts, pos = [], 0
    for p in payloads:
        starts.append(pos + 3)
        pos += 3 + len(p)

    want = b"".join(b"\x0a" + varint(len(p)) + p for p in payloads)
    got = _wrap(np.frombuffer(data, dtype=np.uint8), np.array(starts),
                np.array([len(p) for p in payloads]))
    assert got == want


def test_hparams_yaml_beside_the_events_gives_the_conditions(tmp_path: Path,
                                                             sweep: pd.DataFrame) -> None:
    """Lightning's TensorBoardLogger layout: lightning_logs/version_k/ holds the events and the
    run's hparams.yaml; the conditions come from it with no flag, as for a CSVLogger folder."""
    from grokaudit import audit_path

    root = tmp_path / "lightning_logs"
    for k, (_run, g) in enumerate(sweep.groupby("run", sort=True)):
        d = root / f"version_{k}"
        write_scalars(d, {"val_acc": (g["step"].to_numpy(), g["test_acc"].to_numpy()),
                          "train_acc": (g["step"].to_numpy(), g["train_acc"].to_numpy()),
                          "emb_erank": (g["step"].to_numpy(), g["emb_erank"].to_numpy())})
        (d / "hparams.yaml").write_text(f"wd: {g['wd'].iloc[0]}\nseed: {g['seed'].iloc[0]}\n"
                                        "optimizer:\n  name: adamw\n")
    t = read_log(root)
    got = t.to_pandas().groupby("run")[["wd", "seed"]].first()
    want = {(float(g["wd"].iloc[0]), int(g["seed"].iloc[0]))
            for _, g in sweep.groupby("run")}
    assert {(float(w), int(s)) for w, s in got.itertuples(index=False)} == want
    res = audit_path(root, by="wd")
    assert res.config["axis"] == "wd"
    assert sorted(res.input["provenance"]["config_files"]) == sorted(
        str(p) for p in root.glob("version_*/hparams.yaml"))


def test_logs_beside_the_event_files_are_named_not_dropped(tmp_path: Path, prov) -> None:
    """A Keras run folder holds the TensorBoard events and the CSVLogger's ``training.log``
    (another run's log, often): the folder was read as TensorBoard and the ``.log`` files
    were left out without a word. Each is named in the notes."""
    root = tmp_path / "keras_run"
    steps = np.arange(10)
    write_scalars(root / "logs", {"test_acc": (steps, np.linspace(0.1, 1.0, 10))})
    (root / "training.log").write_text("epoch,acc,val_acc\n0,0.5,0.4\n1,0.6,0.5\n")
    (root / "notes.md").write_text("not a log\n")
    t = read_log(root)
    notes = [w for w in prov(t)["warnings"] if "not read" in w]
    assert len(notes) == 1 and notes[0].startswith("training.log"), prov(t)["warnings"]


def test_a_run_whose_event_file_holds_no_scalar_is_named(tmp_path: Path, prov) -> None:
    """A run that crashed before its first ``add_scalar`` leaves an event file holding only
    the file-version record: its run vanished from the folder without a note (public log
    reddyn12/Sb3Test, PPO_7 and PPO_8). It is named in the notes."""
    write_scalars(tmp_path / "a", {"test_acc": (np.arange(0, 50, 10), np.full(5, 0.5))})
    torch_tb.SummaryWriter(str(tmp_path / "crashed")).close()
    t = read_log(tmp_path)
    assert set(t.to_pandas().run) == {"a"}
    assert [n for n in prov(t)["notes"] if n.startswith("crashed:")]
