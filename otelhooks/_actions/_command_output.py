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

__all__ = [
    "BLOCKING",
    "OUTPUT_CAP_BYTES",
    "REASON_CAP_CHARS",
    "Answer",
    "Capture",
    "cut_reason",
    "read_answer",
    "salvage",
    "schema_problem",
    "stderr_answer",
    "trimmed",
]

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


# JavaScript's String.prototype.trim, which Claude Code applies to stdout before it looks for a
# JSON object: Unicode white space and U+FEFF, so a deny printed after a byte-order mark denies.
_TRIM: Final = re.compile(r"\A[\s\ufeff]+|[\s\ufeff]+\Z")


def trimmed(stdout: str) -> str:
    """``stdout`` without the white space (and byte-order marks) around it, as Claude Code
    trims it.

    Example:
        >>> trimmed('\\ufeff{"decision": "block"}\\n')
        '{"decision": "block"}'
    """
    return _TRIM.sub("", stdout)


# Read from a JSON answer cut at the cap: the first decision and reason it states.
_CUT_PERMISSION: Final = re.compile(
    r'"permissionDecision"\s*:\s*"(allow|deny|ask|defer|(?i:\s*(?:deny|ask|defer)\s*))"'
)
# a deny spelled oddly (`"Block"`, `"continue": "false"`) is read too: what it meant is plain
_CUT_BLOCK: Final = re.compile(r'"decision"\s*:\s*"\s*(?i:block|deny)\s*"')
_CUT_STOP: Final = re.compile(r'"continue"\s*:\s*(?:false\b|"\s*(?i:false)\s*")')
_CUT_REASON: Final = re.compile(
    r'"(?:permissionDecisionReason|reason|stopReason)"\s*:\s*"((?:[^"\\]|\\.)*)'
)


def salvage(prefix: str, *, note: str = "") -> dict[str, Any] | None:
    """The answer a JSON document cut at the cap (or broken) gave, as far as it can be read; None
    if none. ``note`` is appended to the reason it gives."""
    found = _CUT_REASON.search(prefix)
    reason: str | None = None
    if found is not None:
        raw = found.group(1)
        try:
            reason = json.loads(f'"{raw}"')
        except ValueError:  # cut inside an escape: take the text as it is
            reason = raw
        reason += note
    if _CUT_STOP.search(prefix) is not None:
        return {"continue": False, "stopReason": reason}  # Claude Code: it wins over any decision
    permission = _CUT_PERMISSION.search(prefix)
    if permission is not None:
        return {
            "hookSpecificOutput": {
                "permissionDecision": permission.group(1).strip().lower(),
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


class Answer:
    """A JSON object a command printed: its fields, and whether it was cut at the cap or broken.

    ``cut_at`` is how many bytes the command wrote when it went past the cap; ``broken`` why the
    JSON answer does not parse. Either way ``fields`` is what :func:`salvage` read from it, and
    ``readable`` whether it read anything.
    """

    __slots__ = ("broken", "cut_at", "fields", "note", "readable")

    def __init__(
        self,
        fields: dict[str, Any],
        *,
        cut_at: int | None = None,
        broken: str | None = None,
        readable: bool = True,
        note: str | None = None,
    ) -> None:
        self.fields = fields
        self.cut_at = cut_at
        self.broken = broken
        self.readable = readable
        # what a deny taken from a broken answer says of where it was read (its reason's tail)
        self.note = note or BROKEN_NOTE

    @property
    def whole(self) -> bool:
        """Parsed whole: neither cut at the cap nor broken."""
        return self.cut_at is None and self.broken is None

    @property
    def blocks(self) -> bool:
        """It states a deny, a block, an ask, a defer or ``continue: false``: what may be taken
        from an answer that is not whole (its allow, and the rewrite with it, may not)."""
        specific = self.fields.get("hookSpecificOutput")
        permission = specific.get("permissionDecision") if isinstance(specific, dict) else None
        if self.fields.get("continue") is False:
            return True
        decision = self.fields.get("decision")
        return decision in (*BLOCKING, "ask") or permission in ("deny", "ask", "defer")

    def reason(self) -> str | None:
        """The reason the answer gives, the first of ``permissionDecisionReason``, ``reason``
        and ``stopReason`` that is a non-empty string."""
        specific = self.fields.get("hookSpecificOutput")
        candidates = [
            specific.get("permissionDecisionReason") if isinstance(specific, dict) else None,
            self.fields.get("reason"),
            self.fields.get("stopReason"),
        ]
        return next((c for c in candidates if isinstance(c, str) and c), None)


# A field only an answer has: stdout that starts with `{` and names one was meant as the answer.
_ANSWER_FIELD: Final = re.compile(
    r'"(?:hookSpecificOutput|permissionDecision|decision|continue|updatedInput|tool_input)"\s*:'
)
BROKEN_NOTE: Final = " [otelhooks: read from an answer that does not parse]"
LINES_NOTE: Final = " [otelhooks: read from an answer printed after other lines]"
ARRAY_NOTE: Final = " [otelhooks: read from a JSON array, which no agent reads as an answer]"
STRING_NOTE: Final = " [otelhooks: read from an answer printed as a JSON string]"
SPELLING_NOTE: Final = " [otelhooks: read from {what}, which Codex CLI and Gemini CLI ignore]"
STDERR_NOTE: Final = " [otelhooks: read from stderr, where only Gemini CLI reads an answer]"
# lines starting with `{` tried from the end: stdout of a million such lines costs no more
_LINES_TRIED: Final = 64


def _after_lines(text: str) -> Answer | None:
    """The answer a guard printed after lines of its own (a log line, a tool's banner): the
    JSON object from a line that starts with ``{`` to the end of stdout, when it names an answer
    field. Claude Code reads such stdout as plain text, which decides nothing: the guard's deny
    let the call run without a word. It is read as a broken answer is (its deny denies, its
    allow is a failure); stdout whose last object is not such an answer stays plain text.

    Example:
        >>> found = _after_lines('checking policy\\n{"decision": "block", "reason": "no"}')
        >>> found.fields["reason"]
        'no [otelhooks: read from an answer printed after other lines]'
    """
    start = text.rfind("\n{")
    for _ in range(_LINES_TRIED):
        if start < 0:
            break
        tail = text[start + 1 :]
        try:
            whole = json.loads(tail)
        except (ValueError, RecursionError):
            whole = None
        if isinstance(whole, dict):
            if _ANSWER_FIELD.search(tail) is None:
                return None
            salvaged = salvage(tail, note=LINES_NOTE)
            return Answer(salvaged or {}, broken="lines came before it", readable=bool(salvaged))
        start = text.rfind("\n{", 0, start)
    return None


def read_answer(text: str, total: int | None = None) -> Answer | None:
    """Trimmed stdout as the command's JSON answer; None when it is plain text.

    Claude Code reads stdout that starts with ``{`` but does not parse as plain text, which
    decides nothing. So a guard whose answer broke (a reason holding the quote of a command it
    echoes, two objects printed, a raw tab) let the call run without a word: one that states an
    answer field is read as a cut answer is (:func:`salvage`, ``broken`` set), so its deny still
    denies and its allow is a failure. ``total`` is how many bytes the command wrote, when past
    the cap.

    Example:
        >>> read_answer('{"decision": "block", "reason": "no "rm" here"}').fields["decision"]
        'block'
        >>> read_answer("{not json") is None
        True
    """
    if text.startswith(("[", '"')):
        return _wrapped(text)
    if not text.startswith("{"):
        return _after_lines(text)
    if total is not None and total > OUTPUT_CAP_BYTES:
        salvaged = salvage(text)
        return Answer(salvaged or {}, cut_at=total, readable=salvaged is not None)
    try:
        answer = json.loads(text)
    except (ValueError, RecursionError) as exc:
        # RecursionError: valid, but nested too deeply for Python's parser (not JavaScript's:
        # Claude Code reads it), which failed the hook before and let its deny go
        if _ANSWER_FIELD.search(text) is None:
            return None
        why = str(exc) if isinstance(exc, ValueError) else "nested too deeply to parse"
        salvaged = salvage(text, note=BROKEN_NOTE)
        return Answer(salvaged or {}, broken=why, readable=salvaged is not None)
    if not isinstance(answer, dict):
        return None
    return _respelled(answer) or Answer(answer)


def _wrapped(text: str) -> Answer | None:
    """An answer inside a JSON array (``[{"decision": "block"}]``) or a JSON string (the object
    printed with ``json.dumps`` twice). Codex CLI and Claude Code read neither; Gemini CLI
    reads the string's object and ignores the array: the guard's deny let the call run without
    a word. Read as a broken answer is: its deny denies, its allow is a failure.

    Example:
        >>> _wrapped('[{"decision": "block", "reason": "no"}]').fields["reason"]
        'no [otelhooks: read from a JSON array, which no agent reads as an answer]'
    """
    if _ANSWER_FIELD.search(text.replace('\\"', '"')) is None:
        return None
    try:
        whole = json.loads(text)
    except (ValueError, RecursionError):
        whole = None
    if isinstance(whole, str):
        inner = trimmed(whole)
        if not inner.startswith("{"):
            return None
        salvaged = salvage(inner, note=STRING_NOTE)
        return Answer(
            salvaged or {},
            broken="a JSON string, not an object",
            note=STRING_NOTE,
            readable=bool(salvaged),
        )
    if whole is not None and not isinstance(whole, list):
        return None
    salvaged = salvage(text, note=ARRAY_NOTE)
    return Answer(
        salvaged or {},
        broken="a JSON array, not an object",
        note=ARRAY_NOTE,
        readable=bool(salvaged),
    )


def _respelled(fields: dict[str, Any]) -> Answer | None:
    """A whole answer that states a deny in a spelling no CLI reads (``"Block"``, ``"DENY"``,
    ``"continue": "false"``): Codex CLI and Gemini CLI compare exactly and ran the call, where
    the guard plainly meant to stop it. Read as a broken answer, spelled as meant (its reason
    says from what). An allow spelled oddly is left to :func:`schema_problem` (a failure).

    Example:
        >>> _respelled({"decision": "Block", "reason": "no"}).fields["decision"]
        'block'
    """
    fixed = dict(fields)
    said: list[str] = []
    decision = fields.get("decision")
    meant = decision.strip().lower() if isinstance(decision, str) else None
    if meant in BLOCKING and decision not in BLOCKING:
        fixed["decision"] = meant
        said.append(f"'decision': {json.dumps(decision)}")
    stop = fields.get("continue")
    if isinstance(stop, str) and stop.strip().lower() == "false":
        fixed["continue"] = False
        said.append(f"'continue': {json.dumps(stop)}")
    specific = fields.get("hookSpecificOutput")
    permission = specific.get("permissionDecision") if isinstance(specific, dict) else None
    meant = permission.strip().lower() if isinstance(permission, str) else None
    if meant in ("deny", "ask", "defer") and permission != meant and isinstance(specific, dict):
        fixed["hookSpecificOutput"] = {**specific, "permissionDecision": meant}
        said.append(f"'permissionDecision': {json.dumps(permission)}")
    if not said:
        return None
    note = SPELLING_NOTE.format(what=" and ".join(said))
    _add_note(fixed, note)
    return Answer(fixed, broken=f"{' and '.join(said)} is no spelling an agent reads", note=note)


def _add_note(fields: dict[str, Any], note: str) -> None:
    """``note`` appended to every non-blank reason ``fields`` gives."""
    specific = fields.get("hookSpecificOutput")
    for where, key in (
        (fields, "reason"),
        (fields, "stopReason"),
        (specific, "permissionDecisionReason"),
    ):
        if isinstance(where, dict) and isinstance(where.get(key), str) and where[key].strip():
            where[key] += note


def stderr_answer(stdout: str, stderr: str) -> Answer | None:
    """A deny printed on stderr by a command that printed nothing on stdout: Gemini CLI reads
    stderr as the answer then (Codex CLI and Claude Code do not), so a guard written for it ran
    the call under the others without a word. Only a deny, block, ask, defer or stop is taken
    (what the guard meant is plain); None for anything else.

    Example:
        >>> stderr_answer("", '{"decision": "block", "reason": "no"}').fields["reason"]
        'no [otelhooks: read from stderr, where only Gemini CLI reads an answer]'
    """
    text = trimmed(stderr)
    if trimmed(stdout) or not text:
        return None
    found = read_answer(text)
    if found is None or not found.blocks:
        return None
    fields = json.loads(json.dumps(found.fields))  # its own copy, whose reasons get the note
    if isinstance(fields.get("hookSpecificOutput"), dict):
        fields["hookSpecificOutput"] = dict(fields["hookSpecificOutput"])
    _add_note(fields, STDERR_NOTE)
    return Answer(fields, broken="printed on stderr, not stdout", note=STDERR_NOTE)


# Claude Code's hook output schema (hooks reference, "JSON output"): the type of each field it
# defines. Fields it does not define are left alone, as Claude Code leaves them.
_FIELD_TYPES: Final[dict[str, type]] = {
    "continue": bool,
    "suppressOutput": bool,
    "stopReason": str,
    "systemMessage": str,
    "decision": str,
    "reason": str,
    "hookSpecificOutput": dict,
}
_SPECIFIC_TYPES: Final[dict[str, type]] = {
    "hookEventName": str,
    "permissionDecision": str,
    "permissionDecisionReason": str,
    "updatedInput": dict,
    "additionalContext": str,
}
# Claude Code's approve and block; and Gemini CLI's allow, deny and ask, which a guard written
# from its reference prints: read as failures, they let the call run
_TOP_DECISIONS: Final = ("approve", "block", "allow", "deny", "ask")
BLOCKING: Final = ("block", "deny")
_PERMISSION_DECISIONS: Final = ("allow", "deny", "ask", "defer")


def schema_problem(answer: dict[str, Any]) -> str | None:
    """What makes ``answer`` invalid against Claude Code's hook output schema, or None.

    Example:
        >>> schema_problem({"continue": "no"})
        "'continue' must be a boolean, not str"
        >>> schema_problem({"decision": "block", "reason": "no"}) is None
        True
    """
    for fields, types, where in (
        (answer, _FIELD_TYPES, ""),
        (answer.get("hookSpecificOutput"), _SPECIFIC_TYPES, "hookSpecificOutput."),
    ):
        if not isinstance(fields, dict):
            continue
        for name, kind in types.items():
            value = fields.get(name)
            if value is not None and not isinstance(value, kind):
                expected = {bool: "a boolean", str: "a string", dict: "a JSON object"}[kind]
                return f"'{where}{name}' must be {expected}, not {type(value).__name__}"
    decision = answer.get("decision")
    if decision is not None and decision not in _TOP_DECISIONS:
        return f"'decision' must be one of {', '.join(_TOP_DECISIONS)}, not {decision!r}"
    specific = answer.get("hookSpecificOutput")
    permission = specific.get("permissionDecision") if isinstance(specific, dict) else None
    if permission is not None and permission not in _PERMISSION_DECISIONS:
        return (
            f"permissionDecision must be one of {', '.join(_PERMISSION_DECISIONS)}, "
            f"not {permission!r}"
        )
    return None
