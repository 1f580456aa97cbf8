"""Adapters from agent frameworks to otelhooks, each an optional extra.

* :mod:`otelhooks.integrations.openai_agents` (``pip install 'otelhooks[openai-agents]'``)
* :mod:`otelhooks.integrations.langchain` (``pip install 'otelhooks[langchain]'``)
* :mod:`otelhooks.integrations.claude_code` (no extra: the ``otelhooks claude-code`` bridge)

Importing this package imports no framework; each subpackage imports its framework when it is
itself imported, and says which extra to install when the framework is missing.
"""
