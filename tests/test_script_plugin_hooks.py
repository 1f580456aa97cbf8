"""Script hooks (a function in a Python file) and plugin hooks (entry points of installed
packages): loading rules, errors that name the field, and running them like handlers.

Plugins are real distributions: a module and a ``.dist-info`` folder with a real
``entry_points.txt``, on ``sys.path`` — no mocks.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import threading
import time
import uuid
from pathlib import Path

import pytest

from otelhooks import ConfigError, Hook, ToolResult, load_config
from otelhooks._actions import build_hook as coerce_hook
from otelhooks._actions._plugin import ENTRY_POINT_GROUP, PluginAction
from otelhooks._actions._script import ScriptAction
from otelhooks.events import StepEvent
from otelhooks.testing import TestPipeline

EVENT = StepEvent(stepIndex=0)  # any event, for calling actions directly


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))
    return path


def script_hook(ref: str, **options: object) -> Hook:
    return coerce_hook({"id": "s", "type": "afterToolCall", "script": ref, **options})


def run_tool(pipe: TestPipeline) -> ToolResult:
    with pipe.tracer.operation("agent") as op, op.step() as step:
        return step.run_tool("fs", "readFile", {"path": "a"}, lambda path: "content")


def install_plugin(
    site: Path, entries: dict[str, str], code: str, *, dist: str | None = None
) -> str:
    """A real installed distribution in ``site``: a module and its ``.dist-info``."""
    module = f"otelhooks_test_plugin_{uuid.uuid4().hex[:8]}"
    dist = dist or module.replace("_", "-")
    write(site / f"{module}.py", code)
    info = site / f"{dist.replace('-', '_')}-1.0.dist-info"
    write(info / "METADATA", f"Metadata-Version: 2.1\nName: {dist}\nVersion: 1.0\n")
    lines = [f"[{ENTRY_POINT_GROUP}]"] + [f"{n} = {module}:{t}" for n, t in entries.items()]
    write(info / "entry_points.txt", "\n".join(lines) + "\n")
    return module


# -- scripts ---------------------------------------------------------------------------------------


def test_script_function_runs_as_a_hook(pipe: TestPipeline, tmp_path: Path) -> None:
    out = tmp_path / "seen.json"
    script = write(
        tmp_path / "audit.py",
        f"""
        import json
        def audit(event):
            open({str(out)!r}, "w").write(json.dumps([event.apiName, event.content]))
        """,
    )
    pipe.register({"id": "s", "type": "afterToolCall", "script": f"{script}:audit"})
    run_tool(pipe)
    pipe.flush()
    assert json.loads(out.read_text()) == ["readFile", "content"]


def test_script_may_block_like_a_handler(pipe: TestPipeline, tmp_path: Path) -> None:
    script = write(
        tmp_path / "guard.py",
        """
        from otelhooks import Block
        def guard(event):
            return Block("scripts say no")
        """,
    )
    pipe.register({"id": "g", "type": "beforeToolCall", "script": f"{script}:guard"})
    assert run_tool(pipe).content == "scripts say no"


def test_async_script_function_is_awaited(pipe: TestPipeline, tmp_path: Path) -> None:
    script = write(
        tmp_path / "guard.py",
        """
        from otelhooks import Block
        async def guard(event):
            return Block("async no")
        """,
    )
    pipe.register({"id": "g", "type": "beforeToolCall", "script": f"{script}:guard"})
    assert run_tool(pipe).content == "async no"


def test_relative_script_path_is_resolved_against_the_config_file(tmp_path: Path) -> None:
    write(tmp_path / "conf" / "lib" / "hooks.py", "def f(event):\n    return None\n")
    config = write(
        tmp_path / "conf" / "hooks.yaml",
        "hooks:\n  - {id: s, type: afterToolCall, script: 'lib/hooks.py:f'}\n",
    )
    hook = load_config([config]).hooks[0]
    assert isinstance(hook.action, ScriptAction)
    assert Path(hook.action.ref.rpartition(":")[0]) == tmp_path / "conf" / "lib" / "hooks.py"


def test_a_script_file_is_executed_once_for_all_its_hooks(tmp_path: Path) -> None:
    counter = tmp_path / "loads"
    script = write(
        tmp_path / "counted.py",
        f"""
        with open({str(counter)!r}, "a") as f:
            f.write("x")
        def a(event): pass
        def b(event): pass
        """,
    )
    script_hook(f"{script}:a")
    script_hook(f"{script}:b")
    assert counter.read_text() == "x"


def test_a_script_that_hangs_as_it_loads_holds_only_its_own_file(tmp_path: Path) -> None:
    """A guard whose module waits on a host that does not answer used to hold the loader's one
    lock: every later script load in the process (an install's bounded read, a daemon's next
    config) waited behind it for ever."""
    release = tmp_path / "release"
    stuck = write(
        tmp_path / "stuck" / "policy.py",
        f"""
        import os, time
        while not os.path.exists({str(release)!r}):
            time.sleep(0.01)
        def guard(event): pass
        """,
    )
    other = write(tmp_path / "other" / "guard.py", "def guard(event):\n    return 'other'\n")
    loading = threading.Thread(target=script_hook, args=(f"{stuck}:guard",), daemon=True)
    loading.start()
    try:
        done: list[Hook] = []
        second = threading.Thread(target=lambda: done.append(script_hook(f"{other}:guard")))
        second.start()
        second.join(10)
        assert [hook.action(EVENT) for hook in done] == ["other"]
        assert loading.is_alive()  # the first is still importing
    finally:
        release.touch()
        loading.join(10)


def test_two_threads_loading_one_script_run_it_once(tmp_path: Path) -> None:
    counter = tmp_path / "loads"
    script = write(
        tmp_path / "slow.py",
        f"""
        import time
        with open({str(counter)!r}, "a") as f:
            f.write("x")
        time.sleep(0.3)
        def guard(event): return 1
        """,
    )
    loaded: list[Hook] = []
    threads = [
        threading.Thread(target=lambda: loaded.append(script_hook(f"{script}:guard")))
        for _ in range(4)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert counter.read_text() == "x"
    assert [hook.action(EVENT) for hook in loaded] == [1, 1, 1, 1]


def _scripts_that_load_each_other(tmp_path: Path) -> tuple[Path, Path]:
    """Two hooks files whose scripts load the other's hooks file as they are imported; each
    waits (at most 5 s) until the other has started, so that two threads loading them hold one
    file each before either asks for the other."""
    for me, other in (("a", "b"), ("b", "a")):
        hook = f"  - id: {me}\n    type: PreToolUse\n    script: {me}.py:guard\n"
        write(tmp_path / me / "hooks.yaml", "hooks:\n" + hook)
        write(
            tmp_path / me / f"{me}.py",
            f"""
            import os, time, otelhooks
            open({str(tmp_path / f"started-{me}")!r}, "w").close()
            give_up = time.monotonic() + 30
            while not os.path.exists({str(tmp_path / f"started-{other}")!r}):
                if time.monotonic() > give_up:
                    break
                time.sleep(0.01)
            otelhooks.load_config({str(tmp_path / other / "hooks.yaml")!r})
            def guard(event): pass
            """,
        )
    return tmp_path / "a" / "hooks.yaml", tmp_path / "b" / "hooks.yaml"


_LOAD_IN_THREADS = """
import os, sys, threading, otelhooks
def load(path):
    try:
        otelhooks.load_config(path)
        said = "loaded"
    except otelhooks.ConfigError as exc:
        said = "refused " + str(exc).replace("\\n", " ")
    os.write(1, (said + "\\n").encode())  # one write: the two threads' lines never mix
threads = [threading.Thread(target=load, args=(p,), daemon=True) for p in sys.argv[1:]]
for t in threads:
    t.start()
for t in threads:
    t.join(20)
os.write(1, b"stuck\\n" if any(t.is_alive() for t in threads) else b"ended\\n")
"""


def test_scripts_that_load_each_other_from_two_threads_are_refused_not_deadlocked(
    tmp_path: Path,
) -> None:
    """Before, each file's lock was held by one thread while it waited for the other's: both
    loads waited for ever (a process whose configuration never finished loading, no word)."""
    first, second = _scripts_that_load_each_other(tmp_path)
    # its own process: a regression would leave threads waiting for ever
    run = subprocess.run(
        [sys.executable, "-c", _LOAD_IN_THREADS, str(first), str(second)],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    lines = run.stdout.splitlines()
    assert lines[-1:] == ["ended"], run.stdout + run.stderr
    assert len(lines) == 3, run.stdout
    assert all(line.startswith("refused") for line in lines[:2]), run.stdout
    a, b = tmp_path / "a" / "a.py", tmp_path / "b" / "b.py"
    cycles = (f"loaded again while it loads: {a} -> {b} -> {a}",
              f"loaded again while it loads: {b} -> {a} -> {b}")  # fmt: skip
    assert all(any(c in line for c in cycles) for line in lines[:2]), run.stdout


def test_a_script_that_loads_itself_back_as_it_loads_is_refused_at_once(tmp_path: Path) -> None:
    """Before, the file's lock let its own thread in again: the two scripts ran each other
    over and over until Python's recursion limit, and the error, hundreds of levels deep,
    ended in "invalid YAML: maximum recursion depth exceeded"."""
    first, _ = _scripts_that_load_each_other(tmp_path)
    (tmp_path / "started-b").touch()  # one thread: b.py need not wait for a second one
    started = time.monotonic()
    with pytest.raises(ConfigError) as caught:
        load_config(first)
    assert time.monotonic() - started < 5
    a, b = tmp_path / "a" / "a.py", tmp_path / "b" / "b.py"
    assert f"loaded again while it loads: {a} -> {b} -> {a}" in str(caught.value)
    assert str(caught.value).count("failed while loading") == 2  # a.py's, then b.py's


_FORK_WHILE_LOADING = """
import os, sys, threading, time, otelhooks
stuck, release, started = sys.argv[1:4]
said = []
def load():
    try:
        otelhooks.load_config(stuck)
        said.append("loaded")
    except otelhooks.ConfigError as exc:
        said.append(f"refused: {exc}")
loading = threading.Thread(target=load, daemon=True)
loading.start()
while not os.path.exists(started):
    time.sleep(0.01)
pid = os.fork()
if pid == 0:
    open(release, "w").close()  # the child's run of the file ends at once
    child = threading.Thread(target=load, daemon=True)
    child.start()
    child.join(10)
    os.write(1, ("stuck" if child.is_alive() else said[-1]).encode() + b"\\n")
    os._exit(0)
os.waitpid(pid, 0)
open(release, "w").close()
loading.join(10)
"""


def test_a_fork_while_a_script_loads_leaves_the_child_free_to_load_it(tmp_path: Path) -> None:
    """Before, the child waited for ever for the parent's thread, which it does not have, to
    finish running the file."""
    release, started = tmp_path / "release", tmp_path / "started"
    write(
        tmp_path / "stuck.py",
        f"""
        import os, time
        open({str(started)!r}, "w").close()
        while not os.path.exists({str(release)!r}):
            time.sleep(0.01)
        def guard(event): pass
        """,
    )
    hooks = tmp_path / "hooks.yaml"
    hooks.write_text("hooks:\n  - {id: s, type: PreToolUse, script: stuck.py:guard}\n")
    run = subprocess.run(
        [sys.executable, "-c", _FORK_WHILE_LOADING, str(hooks), str(release), str(started)],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert run.stdout.splitlines() == ["loaded"], run.stdout + run.stderr


def test_a_script_that_forks_as_it_loads_loads_in_both_processes(tmp_path: Path) -> None:
    """The child of a fork at import finishes the load too (it must not trip over the note of
    the load in progress, which a forked child starts without)."""
    write(tmp_path / "forks.py", "import os\nCHILD = os.fork() == 0\ndef guard(event): pass\n")
    hooks = tmp_path / "hooks.yaml"
    hooks.write_text("hooks:\n  - {id: f, type: PreToolUse, script: forks.py:guard}\n")
    code = (
        "import os, sys, otelhooks\n"
        "try:\n"
        "    otelhooks.load_config(sys.argv[1]); said = 'loaded'\n"
        "except Exception as exc:\n"
        "    said = f'failed: {type(exc).__name__}: {exc}'\n"
        "child = [m for n, m in sys.modules.items() if n.startswith('otelhooks_script_forks')]\n"
        "who = 'child' if child and child[0].CHILD else 'parent'\n"
        "os.write(1, f'{who} {said}\\n'.encode())\n"
        "if who == 'child':\n"
        "    os._exit(0)\n"
        "os.wait()\n"
    )
    run = subprocess.run(
        [sys.executable, "-c", code, str(hooks)], capture_output=True, text=True, timeout=60
    )
    assert sorted(run.stdout.splitlines()) == ["child loaded", "parent loaded"], run.stderr


def test_an_edited_script_is_loaded_again_by_the_next_load(tmp_path: Path) -> None:
    script = write(tmp_path / "v.py", "def version(event):\n    return 1\n")
    first = script_hook(f"{script}:version")
    write(script, "def version(event):\n    return 2\n")
    os.utime(script, ns=(1, 1))  # a different modification time, whatever the clock resolution
    second = script_hook(f"{script}:version")
    assert first.action(EVENT) == 1  # the running configuration keeps what it loaded
    assert second.action(EVENT) == 2


def test_missing_script_file_names_the_field(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as info:
        script_hook(f"{tmp_path / 'nope.py'}:f")
    assert (info.value.field, info.value.hook_id) == ("script", "s")
    assert "cannot read script" in info.value.problem


def test_script_reference_needs_a_function(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"path/to/file\.py:function") as info:
        script_hook(str(tmp_path / "x.py"))
    assert info.value.field == "script"


def test_syntax_error_in_a_script_names_its_line(tmp_path: Path) -> None:
    script = write(tmp_path / "bad.py", "x = 1\ny = 2\ndef f(:\n")
    with pytest.raises(ConfigError, match="line 3: syntax error") as info:
        script_hook(f"{script}:f")
    assert info.value.field == "script"


def test_script_raising_while_loading_is_a_config_error(tmp_path: Path) -> None:
    script = write(tmp_path / "boom.py", "raise RuntimeError('no config here')\n")
    with pytest.raises(ConfigError, match="RuntimeError: no config here"):
        script_hook(f"{script}:f")


def test_script_calling_exit_while_loading_is_a_config_error(tmp_path: Path) -> None:
    script = write(tmp_path / "bye.py", "import sys\nsys.exit(3)\n")
    with pytest.raises(ConfigError, match="SystemExit"):
        script_hook(f"{script}:f")


def test_missing_function_names_the_field(tmp_path: Path) -> None:
    script = write(tmp_path / "s.py", "def other(event): pass\n")
    with pytest.raises(ConfigError, match="has no function 'f'") as info:
        script_hook(f"{script}:f")
    assert info.value.field == "script"


def test_non_callable_target_is_refused(tmp_path: Path) -> None:
    script = write(tmp_path / "s.py", "f = 42\n")
    with pytest.raises(ConfigError, match="not callable"):
        script_hook(f"{script}:f")


# -- plugins ---------------------------------------------------------------------------------------


def test_installed_plugin_hook_is_found_by_name(
    pipe: TestPipeline, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "plugin.out"
    name = f"audit_{uuid.uuid4().hex[:6]}"
    install_plugin(
        tmp_path / "site",
        {name: "hook"},
        f"def hook(event):\n    open({str(out)!r}, 'w').write(event.apiName)\n",
    )
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    hook = coerce_hook({"id": "p", "type": "afterToolCall", "plugin": name})
    assert isinstance(hook.action, PluginAction)
    pipe.oh.hooks.register([hook])
    run_tool(pipe)
    pipe.flush()
    assert out.read_text() == "readFile"


def test_unknown_plugin_name_lists_the_published_ones(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    known = f"known_{uuid.uuid4().hex[:6]}"
    install_plugin(tmp_path / "site", {known: "hook"}, "def hook(event): pass\n")
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    with pytest.raises(ConfigError) as info:
        coerce_hook({"id": "p", "type": "afterToolCall", "plugin": "no_such_hook"})
    assert info.value.field == "plugin"
    assert known in info.value.problem


def test_plugin_that_fails_to_import_names_the_field(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    name = f"broken_{uuid.uuid4().hex[:6]}"
    install_plugin(tmp_path / "site", {name: "hook"}, "import no_such_module_here\n")
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    with pytest.raises(ConfigError, match="ModuleNotFoundError") as info:
        coerce_hook({"id": "p", "type": "afterToolCall", "plugin": name})
    assert info.value.field == "plugin"


def test_plugin_target_must_be_callable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    name = f"value_{uuid.uuid4().hex[:6]}"
    install_plugin(tmp_path / "site", {name: "hook"}, "hook = 3\n")
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    with pytest.raises(ConfigError, match="not callable"):
        coerce_hook({"id": "p", "type": "afterToolCall", "plugin": name})


def test_a_name_published_by_two_packages_is_ambiguous(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    name = f"twice_{uuid.uuid4().hex[:6]}"
    install_plugin(tmp_path / "a", {name: "hook"}, "def hook(event): pass\n")
    install_plugin(tmp_path / "b", {name: "hook"}, "def hook(event): pass\n")
    monkeypatch.syspath_prepend(str(tmp_path / "a"))
    monkeypatch.syspath_prepend(str(tmp_path / "b"))
    with pytest.raises(ConfigError, match="published by several"):
        coerce_hook({"id": "p", "type": "afterToolCall", "plugin": name})


def test_dll_hook_loads_a_plugin_from_its_plugins_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "path", list(sys.path))  # the loader adds the folder to it
    name = f"folder_{uuid.uuid4().hex[:6]}"
    install_plugin(tmp_path / "plugins", {name: "hook"}, "def hook(event): return 'ok'\n")
    config = write(
        tmp_path / "agents" / "a" / "hooks" / "audit.yaml",
        f"kind: dll_hook\nhook: {name}\npath: ../../../plugins\non: [after_loop]\n",
    )
    (hook,) = load_config([config]).hooks
    assert (hook.id, hook.event, hook.plugin) == ("audit", "on_complete", name)
    assert hook.action(EVENT) == "ok"


def test_two_scripts_whose_helpers_share_a_name_are_refused_not_mixed(tmp_path: Path) -> None:
    # Python imports a module once per process: b's `from rules import WORD` found a's rules.py,
    # and guard b let `rm -rf` through (exit 0, no word). Run in a process of its own, so that
    # neither `rules` reaches this one.
    for folder, word in (("a", "sudo"), ("b", "rm -rf")):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "rules.py").write_text(f"WORD = {word!r}\n")
        (tmp_path / folder / "guard.py").write_text(
            "from rules import WORD\n\n"
            "def guard(event):\n"
            "    if WORD in str(event.args):\n"
            f"        event.deny('{folder}: no ' + WORD)\n"
        )
    (tmp_path / "hooks.yaml").write_text(
        "hooks:\n"
        "  - {id: a, type: PreToolUse, matcher: Bash, script: a/guard.py:guard}\n"
        "  - {id: b, type: PreToolUse, matcher: Bash, script: b/guard.py:guard}\n"
    )
    event = {"session_id": "s", "hook_event_name": "PreToolUse", "tool_name": "Bash",
             "tool_input": {"command": "rm -rf /"}, "tool_use_id": "t1"}  # fmt: skip
    run = subprocess.run(
        [sys.executable, "-m", "otelhooks", "claude-code", "--hooks", "hooks.yaml",
         "--fail-closed"],
        input=json.dumps(event), capture_output=True, text=True, cwd=tmp_path, timeout=60,
        env={**os.environ, "OTELHOOKS_BRIDGE_STATE": str(tmp_path / "state.sqlite3")},
    )  # fmt: skip
    answer = json.loads(run.stdout)["hookSpecificOutput"]
    assert answer["permissionDecision"] == "deny", run.stdout
    assert "rules (imported first from" in answer["permissionDecisionReason"]
    assert "rename one of them" in run.stderr
