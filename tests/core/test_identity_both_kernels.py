"""The identity benchmark on both kernels (issue 44: "the identity benchmark and the core tests
run on both kernels in CI"): every audit, claim and suite output ``benchmarks/identity.py``
hashes — the bundled logs under every configuration, the suite's cases, random logs, the
``check`` command lines (the claims' and the suite's command lines take no kernel) — is the same
bytes when its logs are validated by the numba kernels (extra
``fast``) as by numpy. Skipped, with the reason, where numba is not installed."""

from __future__ import annotations

import argparse

import pytest

pytest.importorskip("numba", reason="the numba kernels are the extra `fast`")


@pytest.mark.slow  # two runs of the identity benchmark (about 15 s each)
def test_every_output_is_the_same_bytes_on_both_kernels(monkeypatch: pytest.MonkeyPatch
                                                        ) -> None:
    import identity  # benchmarks/identity.py
    from grokaudit.kernels import kernel_named

    args = argparse.Namespace(random=10, external=False, check_only=True)
    on_numpy = identity.collect(args)
    monkeypatch.setitem(identity.KERNEL, "name", "numba")
    monkeypatch.setitem(identity.KERNEL, "kernel", kernel_named("numba"))
    on_numba = identity.collect(args)
    assert len(on_numpy) > 200 and on_numba.keys() == on_numpy.keys()
    assert sum(k.startswith("cli/check ") for k in on_numpy) >= 7
    assert [k for k in on_numpy if on_numba[k] != on_numpy[k]] == []
