"""Claim audits (CLAIMS_SPEC): onset, dose, transition, precursor, compare."""
