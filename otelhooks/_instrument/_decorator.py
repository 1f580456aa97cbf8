"""``@otelhooks.tool``: a function becomes a tool call of whatever step is running.

Called inside an operation's step (found in the context: no ``step`` is passed around), a
decorated function is an ``execute_tool`` span with every tool hook: matchers see
``identifier/name``; a deny, or a ``tool_result_persist`` block of the result, raises
:class:`~otelhooks.ToolDenied` (what agent frameworks turn into a tool error for the model); a
mock's content is returned instead of calling the function; arguments a hook rewrote are what
the function is called with; a result a ``tool_result_persist`` hook rewrote is what the caller
receives. An exception of the function is recorded on the span and raised as it was. Outside
any step (directly in an operation, or outside any), the call opens a step (and an operation
named after the tool) of its own.
"""

from __future__ import annotations

import functools
import inspect
import threading
import warnings
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack, ExitStack
from typing import TYPE_CHECKING, Any, ParamSpec, TypeGuard, TypeVar, overload

from otelhooks._errors import ConfigError, ToolDenied
from otelhooks._events import ToolResult
from otelhooks._instrument._current import current_operation, current_step

if TYPE_CHECKING:
    from otelhooks._instrument._base import AgentTracer
    from otelhooks._instrument._operation import Operation
    from otelhooks._instrument._step import Step
    from otelhooks._instrument._tool import ToolCall

__all__ = ["default_tracer", "set_default_tracer", "tool"]

P = ParamSpec("P")
R = TypeVar("R")

_default: AgentTracer | None = None
# what calls outside any operation use until configure() sets the default; never the default
# itself, or a call made before configure() would keep every later one from its hooks
_fallback: AgentTracer | None = None
_default_lock = threading.Lock()


def set_default_tracer(tracer: AgentTracer) -> bool:
    """Make ``tracer`` the one decorated tools open their own operations with, once: like the
    OpenTelemetry global providers, the first setting stays (``configure()`` sets it when it
    installs the global providers). Returns whether it was set."""
    global _default
    with _default_lock:
        if _default is not None:
            return False
        _default = tracer
        return True


def default_tracer() -> AgentTracer:
    """The tracer of the ``configure()`` that installed the global providers; until one does, a
    tracer on the global provider with no hooks (spans only)."""
    global _fallback
    with _default_lock:
        if _default is not None:
            return _default
        if _fallback is None:
            from otelhooks._instrument._base import AgentTracer

            _fallback = AgentTracer()
        return _fallback


class _Frame:
    """Where a call runs: the current step, or a step (and operation) of its own."""

    def __init__(self, name: str, tracer: AgentTracer | None) -> None:
        self.name = name
        self.tracer = tracer

    def own_tracer(self) -> AgentTracer:
        """The tracer a call outside any operation opens its own with."""
        tracer = self.tracer if self.tracer is not None else default_tracer()
        if tracer is _fallback:
            # e.g. configure(set_global=False) and a thread that lost the caller's context: a
            # guard of that pipeline would have denied the call, so it must not look guarded
            warnings.warn(
                f"@otelhooks.tool {self.name!r} ran outside any operation and no configure() "
                "set a global tracer: no hook saw it (pass tracer=, or call it in the "
                "operation's context: in a thread of your own, contextvars.copy_context().run)",
                stacklevel=4,  # the caller of the decorated function
            )
        elif _runs_have_tool_guards(tracer):
            # the same lost context with a global tracer: the global hooks see the call, but a
            # guard given to the run it may belong to (operation(hooks=...)) cannot
            warnings.warn(
                f"@otelhooks.tool {self.name!r} ran outside any operation while a run has "
                "before_tool_call hooks of its own: they did not see it (call it in the "
                "operation's context: in a thread of your own, contextvars.copy_context().run)",
                stacklevel=4,  # the caller of the decorated function
            )
        return tracer

    def warn_if_ended(self, op: Operation) -> None:
        """Say so when ``op`` was given hooks and has ended: they are gone with it (a task of
        the run that outlived it), so none of them sees the call."""
        if op.hooks and not op.tracer.engine.registry.has_own(op.operation_id):
            warnings.warn(
                f"@otelhooks.tool {self.name!r} ran in run {op.agent!r} after it ended: the "
                "hooks the run was given did not see it (await the call before the run ends)",
                stacklevel=4,  # the caller of the decorated function
            )

    def enter(self, stack: ExitStack) -> Step:
        step = current_step()
        op = step.operation if step is not None else current_operation()
        if op is None:
            op = stack.enter_context(self.own_tracer().operation(self.name))
        else:
            self.warn_if_ended(op)
        return step if step is not None else stack.enter_context(op.step())

    async def aenter(self, stack: AsyncExitStack) -> Step:
        step = current_step()
        op = step.operation if step is not None else current_operation()
        if op is None:
            op = await stack.enter_async_context(self.own_tracer().operation(self.name))
        else:
            self.warn_if_ended(op)
        return step if step is not None else await stack.enter_async_context(op.step())


def _runs_have_tool_guards(tracer: AgentTracer) -> bool:
    """Whether an open operation of ``tracer`` has ``before_tool_call`` hooks of its own."""
    registry = tracer.engine.registry
    shared = {id(h) for h in registry.hooks()}
    return any(id(h) not in shared for h in registry.may_match("before_tool_call"))


def _gives(func: Callable[..., Any], test: Callable[[Any], bool]) -> bool:
    """Whether ``test`` holds for ``func``, also behind ``functools.partial``, or for the
    ``__call__`` of an object (Python 3.11's ``inspect`` tests say no to the object)."""
    while isinstance(func, functools.partial):
        func = func.func
    call = getattr(func, "__call__", None)  # noqa: B004 (the method that runs, not a test)
    return test(func) or test(call)


def _is_async(func: Callable[..., Any]) -> TypeGuard[Callable[..., Awaitable[Any]]]:
    """Whether calling ``func`` gives a coroutine (wrapped as sync, its span ended before it ran
    and a ``tool_result_persist`` hook saw the coroutine's name, not what it returned)."""
    return _gives(func, inspect.iscoroutinefunction)


def _refuse_generators(func: Callable[..., Any], api_name: str) -> None:
    """A generator's body runs as the caller iterates, after the call's span ended: a
    ``tool_result_persist`` hook would see the generator's name, never what it yields (a
    redaction missed every secret), so such a tool is refused when it is decorated."""
    if _gives(func, inspect.isgeneratorfunction) or _gives(func, inspect.isasyncgenfunction):
        raise _generator_error(api_name)


def _checked(value: Any, api_name: str) -> Any:
    """``value``, unless it is a generator the decoration could not foresee (a function behind
    a decorator of its own, one returning a generator expression): refused before it runs."""
    if inspect.isgenerator(value) or inspect.isasyncgen(value):
        raise _generator_error(api_name)
    return value


def _generator_error(api_name: str) -> ConfigError:
    return ConfigError(
        f"@otelhooks.tool {api_name!r} is a generator: its body would run after the tool "
        "call ended, unseen by the result hooks; return a list of the items instead "
        "(e.g. a wrapper returning list(...) decorated in its place)"
    )


def _first_positional(signature: inspect.Signature) -> str | None:
    """The name of the first parameter when it can be given positionally: where a method's
    receiver is."""
    first = next(iter(signature.parameters.values()), None)
    positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return first.name if first is not None and first.kind in positional else None


def _receiver(
    first: str | None, tool: Callable[..., Any], name: str | None, args: tuple[Any, ...]
) -> str | None:
    """The name of the parameter that receives a method's instance or class, passed to the call
    and never shown to hooks (judged as an argument, a rewrite copied it: the method ran on the
    copy). It is the first positional one when it is named ``self`` or ``cls``, or when the
    first argument is what Python binds the decorated ``tool`` to: an instance of a class
    holding it under ``name``, or a class holding it as a ``classmethod``. Told at each call,
    not by a name alone (``def read(this, path)``) nor when decorated (a ``staticmethod``
    stacked over the decoration has no receiver: its first argument is judged)."""
    if first in ("self", "cls"):
        return first
    if first is None or name is None or not args:
        return None
    held = args[0]
    for klass in type(held).__mro__:
        if vars(klass).get(name) is tool:
            return first
    if isinstance(held, type):
        for klass in held.__mro__:
            method = vars(klass).get(name)
            if isinstance(method, classmethod) and method.__func__ is tool:
                return first
    return None


def _defaults(signature: inspect.Signature) -> dict[str, Any]:
    """Each parameter's default by name: what the function receives for one left out."""
    return {n: p.default for n, p in signature.parameters.items() if p.default is not p.empty}


def _var_keyword(signature: inspect.Signature) -> str | None:
    """The name of the ``**kwargs`` parameter, if the function has one."""
    kinds = {p.kind: n for n, p in signature.parameters.items()}
    return kinds.get(inspect.Parameter.VAR_KEYWORD)


def _bind(
    signature: inspect.Signature,
    defaults: dict[str, Any],
    spread: str | None,
    receiver: str | None,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
) -> dict[str, Any]:
    """The tool's arguments by name, as hooks see them: what the function receives, its
    ``defaults`` filled in (a guard denying ``force`` must see the ``force=True`` it defaults
    to), the keywords its ``**`` parameter (``spread``) takes each by its own name (a guard
    reading ``force`` must see the ``force=True`` given to ``def f(**kwargs)``), a method's
    ``receiver`` left out. The defaults are read once, when the function is decorated:
    ``BoundArguments.apply_defaults`` reads them again at each call, 7 % of a call's
    instructions (benchmarks/README.md, "@otelhooks.tool's defaults")."""
    arguments = dict(signature.bind(*args, **kwargs).arguments)
    for name, value in defaults.items():
        arguments.setdefault(name, value)
    if spread is not None and spread in arguments and not arguments.keys() & arguments[spread]:
        # (a keyword named as a positional-only parameter stays under ``spread``)
        arguments.update(arguments.pop(spread))
    if receiver is not None:
        arguments.pop(receiver, None)
    return arguments


def _call_args(
    signature: inspect.Signature,
    receiver: str | None,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    original: dict[str, Any],
    final: dict[str, Any],
) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """The call's positional and keyword arguments after hooks rewrote ``original`` into
    ``final`` (unchanged: the caller's own)."""
    if final == original:
        return args, kwargs
    params = signature.parameters
    takes_any = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())
    unknown = sorted(set(final) - set(params))
    if unknown and not takes_any:
        # Dropping them would run the tool with arguments other than the ones the hook chose.
        raise TypeError(f"a hook rewrote the arguments with {', '.join(unknown)}, not taken")
    bound = signature.bind_partial()
    if receiver is not None:
        bound.arguments[receiver] = signature.bind(*args, **kwargs).arguments[receiver]
    for name in params:  # in the signature's order, as positional arguments must be
        if name in final:
            bound.arguments[name] = final[name]
    extra = {k: v for k, v in final.items() if k not in params}
    return bound.args, {**bound.kwargs, **extra}


def _denied(call: ToolCall) -> ToolDenied:
    state = call.result.state or {}
    by = state.get("decidedBy")
    reason = call.deny_reason or (call.result.content if call.persist_blocked else "")
    return ToolDenied(reason, tool=call.matcher_value, decided_by=by if by else None)


def _returned(value: Any, persisted: ToolResult, as_result: Callable[[Any], ToolResult]) -> Any:
    """What the caller receives: the function's own value, unless a ``tool_result_persist``
    hook changed the result (then its content)."""
    if persisted == as_result(value):
        return value
    return persisted.content


@overload
def tool(fn: Callable[P, R], /) -> Callable[P, R]: ...


@overload
def tool(
    *, identifier: str = "", name: str | None = None, tracer: AgentTracer | None = None
) -> Callable[[Callable[P, R]], Callable[P, R]]: ...


def tool(
    fn: Callable[P, R] | None = None,
    /,
    *,
    identifier: str = "",
    name: str | None = None,
    tracer: AgentTracer | None = None,
) -> Any:
    """Make a sync or async function a tool call of the current step (see the module doc).

    Args:
        identifier: the tool's group (LobeHub's ``identifier``, e.g. ``fs``); matchers see
            ``identifier/name``, or ``name`` when it is empty.
        name: the tool's name (``apiName``, ``gen_ai.tool.name``); the function's by default.
        tracer: the tracer to open an operation with when the call runs outside any; by
            default the one ``configure()`` installed globally.

    Raises:
        ConfigError: ``func`` is a generator or async generator function (its body would run
            after the call's span ended, so no result hook would see what it yields).

    Raises (from the decorated function):
        ToolDenied: a hook denied the call; the function did not run.

    Example:
        >>> import os
        >>> from otelhooks import AgentTracer, tool
        >>> @tool(identifier="fs", name="rm")
        ... def remove(path: str) -> str:
        ...     os.remove(path)
        ...     return f"removed {path}"
        >>> open("old.log", "w").close()
        >>> with AgentTracer().operation("cleaner") as op, op.step():
        ...     remove("old.log")  # an execute_tool rm span; a deny raises ToolDenied
        'removed old.log'
    """

    def decorate(func: Callable[P, R]) -> Callable[P, R]:
        from otelhooks._instrument._tool import _as_result

        if isinstance(func, (staticmethod, classmethod)):
            # decorated below ``@staticmethod``/``@classmethod``: the function is decorated and
            # wrapped again, so it binds as Python binds the function it holds
            return type(func)(decorate(func.__func__))
        api_name = name or func.__name__
        _refuse_generators(func, api_name)
        signature = inspect.signature(func)
        defaults = _defaults(signature)
        spread = _var_keyword(signature)
        first = _first_positional(signature)
        method_name: str | None = getattr(func, "__name__", None)  # a callable object has none
        frame = _Frame(api_name, tracer)

        if _is_async(func):

            @functools.wraps(func)
            async def arun(*args: P.args, **kwargs: P.kwargs) -> Any:
                receiver = _receiver(first, arun, method_name, args)
                original = _bind(signature, defaults, spread, receiver, args, kwargs)
                async with AsyncExitStack() as stack:
                    step = await frame.aenter(stack)
                    # A denial is raised once the call's span has ended as "denied": raised
                    # inside it, the span would record the caller's exception as the tool's.
                    async with step.tool_call(identifier, api_name, dict(original)) as call:
                        if call.should_run:
                            a, kw = _call_args(
                                signature, receiver, args, kwargs, original, call.args
                            )
                            value = _checked(await func(*a, **kw), api_name)
                            persisted = await call.aset_result(value)
                if call.denied or call.persist_blocked:
                    raise _denied(call)
                if call.mocked:
                    return call.result.content
                return _returned(value, persisted, _as_result)

            return arun  # type: ignore[return-value]

        @functools.wraps(func)
        def run(*args: P.args, **kwargs: P.kwargs) -> Any:
            receiver = _receiver(first, run, method_name, args)
            original = _bind(signature, defaults, spread, receiver, args, kwargs)
            with ExitStack() as stack:
                step = frame.enter(stack)
                with step.tool_call(identifier, api_name, dict(original)) as call:
                    if call.should_run:
                        a, kw = _call_args(signature, receiver, args, kwargs, original, call.args)
                        value = _checked(func(*a, **kw), api_name)
                        persisted = call.set_result(value)
            if call.denied or call.persist_blocked:
                raise _denied(call)
            if call.mocked:
                return call.result.content
            return _returned(value, persisted, _as_result)

        return run

    if fn is not None:
        return decorate(fn)
    return decorate
