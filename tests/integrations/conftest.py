"""The adapter tests use the shared ``server`` and ``deliverer`` fixtures of tests/conftest.py."""
