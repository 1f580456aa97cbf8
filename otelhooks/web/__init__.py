"""The web view of ``otelhooks serve``: runs and their traces at ``/``, the approvals inbox at
``/approvals`` (see ``docs/web.md``).

The page is static files in ``static/`` (HTML, the project's own JavaScript and CSS; no build
step, no third-party code) reading JSON routes of :class:`~otelhooks.web._app.WebApp`.
"""

from __future__ import annotations

from otelhooks.web._serving import WebServing, web_serving
from otelhooks.web._store import TraceIndex

__all__ = ["TraceIndex", "WebServing", "web_serving"]
