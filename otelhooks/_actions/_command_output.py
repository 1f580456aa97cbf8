"""What a command hook printed: capped capture, and decisions read from output cut at the cap.

stdout and stderr are each kept up to :data:`OUTPUT_CAP_BYTES` (the rest is read and counted,
never stored). A block reason is cut to :data:`REASON_CAP_CHARS` characters, Claude Code's own
cap for hook output in its UI, with the marker of :func:`cut_reason`. A JSON answer cut at the
cap is read for the decision and reason it states first (:func:`salvage`), so a deny longer than
the cap still denies.
"""

from __future__ import annotations

import json
import re
from typing import Any, Final

from otelhooks._redact import scrub

__all__ = ["OUTPUT_CAP_BYTES", "REASON_CAP_CHARS", "Capture", "cut_reason", "salvage"]

OUTPUT_CAP_BYTES: Final = 1 << 20
REASON_CAP_CHARS: Final = 10_000


def cut_reason(reason: str | None, *, total_bytes: int | None = None) -> str | None:
    """``reason`` cut to :data:`REASON_CAP_CHARS` characters, with a marker when it was cut.

    ``total_bytes`` is how much the command wrote, when more than the text at hand.

    Example:
        >>> cut_reason("x" * 10_005)[-50:]
        'xxxxxxxx… [otelhooks: cut at 10000 of 10005 chars]'
    """
    if reason is None:
        return None
    # Known secrets go before the cut: a secret cut in two would survive as its prefix.
    reason = scrub(reason)
    if len(reason) <= REASON_CAP_CHARS and total_bytes is None:
        return reason
    whole = f"{total_bytes} bytes" if total_bytes is not None else f"{len(reason)} chars"
    if len(reason) <= REASON_CAP_CHARS:
        return f"{reason}… [otelhooks: cut, {whole} in all]"
    return f"{reason[:REASON_CAP_CHARS]}… [otelhooks: cut at {REASON_CAP_CHARS} of {whole}]"


# Read from a JSON answer cut at the cap: the first decision and reason it states.
_CUT_PERMISSION: Final = re.compile(r'"permissionDecision"\s*:\s*"(allow|deny|ask|defer)"')
_CUT_BLOCK: Final = re.compile(r'"decision"\s*:\s*"block"')
_CUT_REASON: Final = re.compile(r'"(?:permissionDecisionReason|reason)"\s*:\s*"((?:[^"\\]|\\.)*)')


def salvage(prefix: str) -> dict[str, Any] | None:
    """The answer a JSON document cut at the cap gave, as far as it can be read; None if none."""
    found = _CUT_REASON.search(prefix)
    reason: str | None = None
    if found is not None:
        raw = found.group(1)
        try:
            reason = json.loads(f'"{raw}"')
        except ValueError:  # cut inside an escape: take the text as it is
            reason = raw
    permission = _CUT_PERMISSION.search(prefix)
    if permission is not None:
        return {
            "hookSpecificOutput": {
                "permissionDecision": permission.group(1),
                "permissionDecisionReason": reason,
            }
        }
    if _CUT_BLOCK.search(prefix) is not None:
        return {"decision": "block", "reason": reason}
    return None


class Capture:
    """One output stream: the first OUTPUT_CAP_BYTES kept, the rest only counted."""

    __slots__ = ("kept", "seen")

    def __init__(self) -> None:
        self.kept = bytearray()
        self.seen = 0

    def add(self, chunk: bytes) -> None:
        self.seen += len(chunk)
        room = OUTPUT_CAP_BYTES - len(self.kept)
        if room > 0:
            self.kept += chunk[:room]
