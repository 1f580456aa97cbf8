"""Conformance tests: fixtures written from each reference (its source named in each), checked
against what otelhooks really does."""
