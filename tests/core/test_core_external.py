"""Real logs from another project (../shared/external): t_grok agrees with the stored clock."""

from pathlib import Path

import grokaudit
import numpy as np
import pytest

EXT = Path(__file__).resolve().parents[2].parent / "shared" / "external" / "critical-norm-grokking"
pytestmark = pytest.mark.skipif(not EXT.is_dir(), reason=f"external logs not found at {EXT}")


def test_t_grok_per_seed_matches_the_stored_clock():
    import pandas as pd

    frames, stored = [], {}
    for f in sorted((EXT / "grokfss_p59").glob("*.npz")):
        d = np.load(f)
        assert float(d["acc_grok"]) == pytest.approx(0.9)  # the definitions agree on 0.90
        for s in range(d["test_acc"].shape[0]):
            run = f"{f.stem}_s{s}"
            stored[run] = int(d["T_grok_per_seed"][s])
            frames.append(pd.DataFrame({
                "run": run, "step": d["steps"], "test_acc": d["test_acc"][s].astype(float),
                "train_acc": d["train_acc"][s].astype(float),
                "eff_rank_E": d["eff_rank_E"][s].astype(float), "alpha": float(d["alpha"]),
                "seed": s}))
    res = grokaudit.audit_table(pd.concat(frames), by="alpha", metrics=("eff_rank_E",))
    runs = {r.run: r for r in res.studies[0].runs}
    assert len(runs) == len(stored) == 160
    compared = 0
    for run, t in stored.items():
        mine = runs[run].t_grok
        if t > 0:
            assert mine.value == t
            compared += 1
        else:  # stored non-positive = never grokked: ours is right-censored
            assert mine.censored
    assert compared == 20 * 6 + 3
