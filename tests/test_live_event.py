"""``LiveEvent.from_snapshot``, the hot path's constructor, gives what the class itself gives."""

from __future__ import annotations

from otelhooks._live import LiveEvent
from otelhooks.events import AfterStepEvent


def _build(index: int) -> AfterStepEvent:
    return AfterStepEvent(stepIndex=index)


def test_from_snapshot_sets_every_slot_as_the_constructor_does() -> None:
    hooks: list[object] = []
    args = (3,)
    fast = LiveEvent.from_snapshot("after_step", _build, args, ("*",), "op-1", hooks)  # type: ignore[arg-type]
    slow = LiveEvent(
        "after_step",
        _build,
        args=args,
        values=("*",),
        operation_id="op-1",
        snapshot=True,
        hooks=hooks,  # type: ignore[arg-type]
    )
    for name in LiveEvent.__slots__:  # a slot either constructor forgot raises AttributeError
        assert getattr(fast, name) == getattr(slow, name), name
    assert fast.payload().stepIndex == slow.payload().stepIndex == 3
