"""Claude Code conformance; the source of each fixture: github.com/thevibeworks/claude-code-docs
(a public mirror of Claude Code's hooks reference), named with its commit in every fixture."""
