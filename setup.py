"""Only the optional C extension lives here; everything else is in pyproject.toml.

``otelhooks._fnv1a`` accelerates the arguments fingerprint (FNV-1a 64). ``optional=True``: where
there is no C compiler or no Python headers the build skips it and ``otelhooks._fingerprint``
uses its pure-Python definition, which gives the same results.
"""

from setuptools import Extension, setup

setup(ext_modules=[Extension("otelhooks._fnv1a", ["otelhooks/_fnv1a.c"], optional=True)])
