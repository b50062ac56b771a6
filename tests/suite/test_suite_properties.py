"""Property-based checks over generated logs whose truth is known by construction.

The hypothesis profile comes from GROKAUDIT_HYPOTHESIS_PROFILE (default ``ci``: bounded and
derandomized); ``deep`` runs many more examples for a nightly or manual run.
"""

import warnings

import grokaudit
import pytest
from grokaudit.adversarial_suite import profiles
from grokaudit.adversarial_suite import properties as P
from grokaudit.adversarial_suite.strategies import clock_studies, studies
from hypothesis import given

CFG = grokaudit.make_config()

pytestmark = pytest.mark.filterwarnings("ignore")


@given(studies())
def test_single_result_properties(study):
    """No t_compress without a true one; t_grok and t_compress near the truth; lag not
    clipped; censored medians never values; clock claims only on identified orderings."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        P.check_one_result(study, CFG)


@profiles.scaled(0.75)
@given(studies(min_cells=3, patterns=("same", "opposite", "tied", "censored")))
def test_clock_claims_need_identified_orderings(study):
    """Studies built to provoke clock verdicts (3–4 cells, chosen orderings)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        P.check_one_result(study, CFG)


@profiles.scaled(profiles.METAMORPHIC_SHARE)
@given(studies(max_cells=3, max_seeds=2))
def test_metamorphic_invariances(study):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        P.check_metamorphic(study, CFG)


@profiles.scaled(0.2)
@given(studies(max_cells=3, max_seeds=2))
def test_deterministic(study):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        P.check_deterministic(study, CFG)


@profiles.scaled(0.5)
@given(clock_studies())
def test_generated_studies_get_their_expected_verdict(drawn):
    """Clean 3–4-cell studies: cell t_grok/t_compress intervals, the Kendall pair counts and
    the clock verdict all equal what the construction says."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        P.check_expected_verdict(drawn, CFG)
