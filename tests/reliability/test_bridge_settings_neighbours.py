"""What the command bridge finds besides the event never silences a guard.

A tuning variable with a typo, an export file (``--export-env``, or ``otelhooks.env`` next to a
hooks file) that names one more hooks file, the folder the daemon was started from deleted: the
one-process bridge and the bridge daemon behind the hook client must both answer with the
guard's deny. Real processes throughout.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from otelhooks.integrations.claude_code import hook_client
from tests.integrations._daemon_procs import (
    NO_RM,
    NO_RM_SCRIPT,
    REPO,
    SCRIPT_GUARD_HOOKS,
    Hooked,
    bash,
    client_env,
    daemon_pid,
    deny_reason,
    hook,
    one_process,
    runtime_folder,
    serving,
    until_gone,
)

pytestmark = pytest.mark.timeout(120)

ANSWER_ENV = "OTELHOOKS_BRIDGE_DAEMON_ANSWER_S"
INVALID = ["abc", "0", "-1", "nan", "inf"]


@pytest.mark.parametrize("dialect", ["claude-code", "gemini"])
@pytest.mark.parametrize("value", INVALID)
def test_an_invalid_answer_time_is_the_default_not_a_failure(
    tmp_path: Path, value: str, dialect: str
) -> None:
    # before: "abc" crashed the bridge (exit 1, a traceback), "0", "-1" and "nan" answered every
    # event as late (exit 1), "inf" crashed the deadline's timer: no deny from the guard
    (tmp_path / "otelhooks.yaml").write_text(NO_RM)
    done = one_process(tmp_path, bash("t1", "rm -rf build"), dialect=dialect, **{ANSWER_ENV: value})
    assert done.returncode == 0, done.stderr
    assert deny_reason(dialect, done.stdout) == "rm -rf is not allowed here"
    assert f"invalid environment variable, using default default_s=25.0 var={ANSWER_ENV}" in (
        done.stderr
    )
    assert "Traceback" not in done.stderr


def test_a_daemon_given_invalid_times_serves_with_the_defaults(tmp_path: Path) -> None:
    # before: the daemon crashed as it started, at every event (a traceback in its log each time)
    (tmp_path / "otelhooks.yaml").write_text(NO_RM)
    with runtime_folder() as runtime:
        env = client_env(tmp_path, runtime, **{ANSWER_ENV: "abc"})
        env["OTELHOOKS_BRIDGE_DAEMON_IDLE"] = "soon"
        first = hook(env, bash("t1", "rm -rf build"))
        daemon_pid(runtime, timeout_s=15)
        second = hook(env, bash("t2", "rm -rf dist"))
        log = _logs(runtime)
    assert first.deny_reason() == second.deny_reason() == "rm -rf is not allowed here"
    assert "Traceback" not in log
    assert f"var={ANSWER_ENV}" in log
    assert "var=OTELHOOKS_BRIDGE_DAEMON_IDLE" in log


# how the export file that will name the guard's hooks file is found, and that file
EXPORT_FILES: dict[str, tuple[tuple[str, ...], dict[str, str], str]] = {
    "--export-env": (("--export-env", "conf/otel.env"), {}, "conf/otel.env"),
    "$OTELHOOKS_EXPORT_ENV": ((), {"OTELHOOKS_EXPORT_ENV": "conf/otel.env"}, "conf/otel.env"),
    "beside --hooks=FILE, made later": (("--hooks=sub/hooks.yaml",), {}, "sub/otelhooks.env"),
}


def _write(path: Path, text: str) -> None:
    before = path.stat().st_mtime_ns if path.exists() else 0
    path.write_text(text)
    # a file system with a coarse clock could keep the time: the edit must show
    os.utime(path, ns=(time.time_ns(), max(time.time_ns(), before + 1_000_000)))


@pytest.mark.parametrize("named_by", list(EXPORT_FILES))
def test_a_guard_an_export_file_adds_decides_the_daemons_next_event(
    tmp_path: Path, named_by: str
) -> None:
    # before: the daemon watched neither an --export-env file nor one beside a hooks file given
    # as --hooks=FILE, and went on allowing what the one-process bridge denied
    flags, extra_env, export = EXPORT_FILES[named_by]
    (tmp_path / "otelhooks.yaml").write_text("hooks: []\n")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "hooks.yaml").write_text("hooks: []\n")
    (tmp_path / "conf").mkdir()
    (tmp_path / "conf" / "otel.env").write_text("OTEL_SERVICE_NAME=project\n")
    (tmp_path / "guard.yaml").write_text(NO_RM)
    with runtime_folder() as runtime:
        env = client_env(tmp_path, runtime, **extra_env)
        assert hook(env, bash("t1", "ls"), *flags).returncode == 0
        daemon_pid(runtime)
        allowed = hook(env, bash("t2", "rm -rf build"), *flags)  # the daemon's: no guard yet
        assert (allowed.returncode, allowed.stdout) == (0, ""), allowed.stderr
        _write(tmp_path / export, f"OTELHOOKS_HOOKS={tmp_path / 'guard.yaml'}\n")
        first = hook(env, bash("t3", "rm -rf build"), *flags)
        second = hook(env, bash("t4", "rm -rf dist"), *flags)
    assert first.deny_reason() == second.deny_reason() == "rm -rf is not allowed here"


def _client_in(
    folder: Path, env: dict[str, str], argv: list[str], use_id: str, command: str
) -> Hooked:
    """The hook client run in ``folder``, as a CLI runs it in its current folder."""
    done = subprocess.run(
        [sys.executable, "-I", "-S", hook_client.__file__, *argv],
        input=json.dumps(bash(use_id, command)),
        capture_output=True,
        text=True,
        env=env,
        cwd=folder,
        timeout=60,
        check=False,
    )
    return Hooked(done.returncode, done.stdout, done.stderr, 0.0)


@pytest.mark.parametrize("dialect", ["claude-code", "codex"])
def test_a_daemon_whose_folder_was_deleted_leaves_and_the_guard_still_denies(
    tmp_path: Path, dialect: str
) -> None:
    # before: the daemon's working folder is the one of the event that started it; once that
    # folder was deleted (a build folder, a scratch project) every command guard it ran failed
    # (`a hook failed and did not decide`) and the rm -rf was allowed, in every session it served.
    # Each folder has a daemon of its own (test_claude_if_folders.py): the one whose folder was
    # deleted and made again (`rm -rf build && mkdir build`) is the one its next event reaches.
    project = tmp_path / "project"
    project.mkdir()
    (project / "otelhooks.yaml").write_text(NO_RM)
    scratch = project / "build" if dialect == "claude-code" else tmp_path / "scratch"
    scratch.mkdir()
    with runtime_folder() as runtime:
        env = client_env(project, runtime)
        if dialect == "codex":  # Codex CLI sets no project folder
            del env["CLAUDE_PROJECT_DIR"]
        argv = ["--dialect", dialect, "--hooks", str(project / "otelhooks.yaml")]
        assert _client_in(scratch, env, argv, "t1", "ls").returncode == 0
        started_there = daemon_pid(runtime)
        assert (
            _client_in(scratch, env, argv, "t2", "rm -rf a").deny_reason()
            == "rm -rf is not allowed here"
        )
        scratch.rmdir()
        scratch.mkdir()
        first = _client_in(scratch, env, argv, "t3", "rm -rf b")
        second = _client_in(scratch, env, argv, "t4", "rm -rf c")
        left = until_gone(started_there)
    assert first.deny_reason() == second.deny_reason() == "rm -rf is not allowed here"
    assert left  # and the daemon that could no longer run a command left


# a guard whose reason has a character Latin-1 lacks (U+2019, written as UTF-8 bytes)
NO_RM_IN_FRENCH = NO_RM.replace(
    "echo 'rm -rf is not allowed here' >&2", r"printf 'rm -rf n\342\200\231est pas permis' >&2"
)
REASON_IN_FRENCH = "rm -rf n\u2019est pas permis"


@pytest.fixture(scope="module")
def latin1_locale(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """The environment of a Latin-1 locale (built here: few machines have one installed)."""
    folder = tmp_path_factory.mktemp("locales")
    try:
        subprocess.run(
            ["localedef", "-i", "en_US", "-f", "ISO-8859-1", str(folder / "en_US.ISO-8859-1")],
            capture_output=True,
            check=True,
            timeout=60,
        )
    except (OSError, subprocess.CalledProcessError) as exc:
        pytest.skip(f"no Latin-1 locale can be built here: {exc}")
    env = {"LOCPATH": str(folder), "LANG": "en_US.ISO-8859-1", "LC_ALL": "en_US.ISO-8859-1"}
    probe = "import sys; print(sys.stdout.encoding)"
    done = subprocess.run(
        [sys.executable, "-I", "-S", "-c", probe],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        check=True,
    )
    assert done.stdout.strip() == "iso8859-1"
    return env


@pytest.mark.parametrize(
    "form", ["claude-code", "codex", "claude-code --deny-mode exit2", "hook client"]
)
def test_a_deny_reason_the_locale_cannot_write_is_still_a_deny(
    tmp_path: Path, latin1_locale: dict[str, str], form: str
) -> None:
    # before: printing the answer failed (UnicodeEncodeError): exit 1, the tool ran
    (tmp_path / "otelhooks.yaml").write_text(NO_RM_IN_FRENCH)
    with runtime_folder() as runtime:
        env = {**client_env(tmp_path, runtime), **latin1_locale}
        if form == "hook client":
            assert hook(env, bash("t1", "ls")).returncode == 0  # starts the daemon
            daemon_pid(runtime)
            answers = [hook(env, bash("t2", "rm -rf build"))]
            argv = [sys.executable, "-m", "otelhooks", "claude-code", "--hooks", "otelhooks.yaml"]
        else:
            answers = []
            dialect, *flags = form.split()
            argv = [sys.executable, "-m", "otelhooks", dialect, "--hooks", "otelhooks.yaml", *flags]
        done = subprocess.run(
            argv,
            input=json.dumps(bash("t3", "rm -rf dist")).encode(),
            capture_output=True,
            env=env,
            cwd=tmp_path,
            timeout=60,
            check=False,
        )
    answers.append(
        Hooked(done.returncode, done.stdout.decode(), done.stderr.decode("utf-8", "replace"), 0)
    )
    for answer in answers:
        if form.endswith("exit2"):
            assert answer.returncode == 2, answer.stderr
            assert answer.stderr.strip() == REASON_IN_FRENCH
        else:
            assert answer.deny_reason() == REASON_IN_FRENCH


def test_a_tool_input_the_locale_cannot_write_is_still_denied_through_the_hook_client(
    tmp_path: Path, latin1_locale: dict[str, str]
) -> None:
    # before: the command guard could not be started with that input in its environment
    # (`a hook failed and did not decide`): the rm -rf ran, --fail-closed or not
    (tmp_path / "otelhooks.yaml").write_text(NO_RM)
    with runtime_folder() as runtime:
        env = {**client_env(tmp_path, runtime), **latin1_locale}
        first = hook(env, bash("t1", "rm -rf build # l\u2019\u00e9t\u00e9"))  # one-process
        daemon_pid(runtime)
        second = hook(env, bash("t2", "rm -rf dist # l\u2019\u00e9t\u00e9"))  # the daemon
        allowed = hook(env, bash("t3", "ls l\u2019\u00e9t\u00e9"))
    assert first.deny_reason() == second.deny_reason() == "rm -rf is not allowed here"
    assert (allowed.returncode, allowed.stdout, allowed.stderr) == (0, "", "")


@pytest.mark.parametrize("dialect", ["claude-code", "codex"])
def test_a_cli_whose_folder_was_deleted_still_gets_the_guards_deny(
    tmp_path: Path, dialect: str
) -> None:
    # before: with Codex CLI (no project folder) the hook client crashed resolving a path (exit
    # 1); with Claude Code each command guard failed to start (`a hook failed and did not
    # decide`), in the one-process bridge and in the daemon started from there: allowed
    project = tmp_path / "project"
    project.mkdir()
    (project / "otelhooks.yaml").write_text(NO_RM)
    argv = [sys.executable, "-I", "-S", hook_client.__file__, "--dialect", dialect]
    argv += ["--hooks", str(project / "otelhooks.yaml")]
    with runtime_folder() as runtime:
        env = client_env(project, runtime)
        if dialect == "codex":
            del env["CLAUDE_PROJECT_DIR"]
        for n in range(2):  # the one-process bridge, then the daemon the first started
            folder = tmp_path / f"deleted-{n}"
            folder.mkdir()
            # the client starts in its folder, which is deleted under it (as the agent would)
            done = subprocess.run(
                ["sh", "-c", f"cd '{folder}' && rmdir '{folder}' && exec \"$@\"", "sh", *argv],
                input=json.dumps(bash(f"t{n}", "rm -rf build")),
                capture_output=True,
                text=True,
                env=env,
                timeout=60,
                check=False,
            )
            answer = Hooked(done.returncode, done.stdout, done.stderr, 0.0)
            assert answer.deny_reason() == "rm -rf is not allowed here"
            if n == 0:
                daemon_pid(runtime)


def test_a_daemon_whose_guard_hangs_as_it_loads_leaves_and_the_mended_guard_is_served(
    tmp_path: Path,
) -> None:
    # before: the daemon, stuck importing the guard, held its lock for ever without serving:
    # every later event ran the one-process bridge and started a daemon that left at once
    (tmp_path / "otelhooks.yaml").write_text(SCRIPT_GUARD_HOOKS)
    (tmp_path / "guard.py").write_text(
        "import time\ntime.sleep(3600)\n\ndef guard(event):\n    pass\n"
    )
    with runtime_folder() as runtime:
        env = client_env(tmp_path, runtime, **{ANSWER_ENV: "3"})
        late = hook(env, bash("t1", "rm -rf build"), "--fail-closed")
        deadline = time.monotonic() + 30
        while "did not load in time: it leaves" not in _logs(runtime):
            assert time.monotonic() < deadline, f"the stuck daemon did not leave: {_logs(runtime)}"
            time.sleep(0.1)
        while serving(runtime):
            assert time.monotonic() < deadline, "the stuck daemon did not exit"
            time.sleep(0.1)
        (tmp_path / "guard.py").write_text(NO_RM_SCRIPT)
        mended = hook(env, bash("t2", "rm -rf build"), "--fail-closed")  # one-process
        daemon_pid(runtime, timeout_s=15)
        served = hook(env, bash("t3", "rm -rf dist"), "--fail-closed")
    assert "no answer within 3 s" in late.deny_reason()
    assert mended.deny_reason() == served.deny_reason() == "no rm"


def _logs(runtime: Path) -> str:
    return "".join(p.read_text() for p in runtime.glob("cc-*.log"))


def _install_copy(site: Path) -> Path:
    """The package installed (copied) into ``site`` as an installer does: every file new, with
    the time it was written; the hook client's path there."""
    shutil.rmtree(site / "otelhooks", ignore_errors=True)
    shutil.copytree(
        REPO / "otelhooks",
        site / "otelhooks",
        copy_function=shutil.copy,
        ignore=shutil.ignore_patterns("__pycache__"),
    )
    client = site / "otelhooks" / "integrations" / "claude_code" / "hook_client.py"
    os.utime(client, ns=(time.time_ns(), time.time_ns()))
    return client


def test_a_daemon_of_the_version_installed_before_does_not_answer_the_new_ones_events(
    tmp_path: Path,
) -> None:
    # before: the socket's name did not change with the installed otelhooks, so the daemon
    # started before an upgrade (the old code in its memory) answered every later event, and
    # left only after 15 min without one
    (tmp_path / "otelhooks.yaml").write_text(NO_RM)
    site = tmp_path / "site"
    with runtime_folder() as runtime:
        env = {**client_env(tmp_path, runtime), "PYTHONPATH": str(site)}
        argv = ["--hooks", "otelhooks.yaml"]
        answers = []
        for n in range(2):
            client = _install_copy(site)  # the first install, then the upgrade
            done = subprocess.run(
                [sys.executable, "-I", "-S", str(client), *argv],
                input=json.dumps(bash(f"t{n}", "rm -rf build")),
                capture_output=True,
                text=True,
                env=env,
                timeout=60,
                check=False,
            )
            answers.append(Hooked(done.returncode, done.stdout, done.stderr, 0.0))
            if n == 0:
                daemon_pid(runtime)
                before = set(runtime.glob("cc-*.sock"))
        deadline = time.monotonic() + 30
        while not set(runtime.glob("cc-*.sock")) - before:  # the new version's own daemon
            assert time.monotonic() < deadline, "the old version's daemon answered"
            time.sleep(0.1)
    for answer in answers:
        assert answer.deny_reason() == "rm -rf is not allowed here"


def _daemons_of(folder: Path, runtime: Path) -> list[int]:
    """Daemons serving in ``folder`` that were started with ``runtime`` as their runtime folder
    (``folder`` is shared with every other user of it: only these are the test's)."""
    mine = f"XDG_RUNTIME_DIR={runtime}".encode()
    found = []
    for pid in serving(folder):
        with contextlib.suppress(OSError):
            if mine in Path(f"/proc/{pid}/environ").read_bytes().split(b"\0"):
                found.append(pid)
    return found


def test_a_runtime_folder_too_deep_for_a_socket_falls_back_to_the_tmp_folder() -> None:
    # before: each event started a daemon that loaded the hooks, failed to listen ("AF_UNIX
    # path too long") and logged a traceback, and was answered by the one-process bridge
    fallback = Path(f"/tmp/otelhooks-{os.getuid()}")
    with runtime_folder() as shallow:
        project = shallow / "project"
        project.mkdir()
        (project / "otelhooks.yaml").write_text(NO_RM)
        deep = shallow / ("d" * 90)
        deep.mkdir(mode=0o700)
        env = client_env(project, deep)
        try:
            first = hook(env, bash("t1", "rm -rf build"))
            deadline = time.monotonic() + 30
            while not _daemons_of(fallback, deep):
                assert time.monotonic() < deadline, _logs(deep)
                time.sleep(0.1)
            second = hook(env, bash("t2", "rm -rf dist"))
        finally:
            for pid in _daemons_of(fallback, deep):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
    assert first.deny_reason() == second.deny_reason() == "rm -rf is not allowed here"


def test_modules_the_agent_writes_in_its_folder_are_never_imported_by_the_bridge(
    tmp_path: Path,
) -> None:
    # before: the hook client ran ``python -m otelhooks``, which puts the working folder (the
    # agent's) first on the import path: a ``structlog.py`` there ended the one-process bridge
    # and the daemon it started (exit 1, and the CLI ran the tool)
    project = tmp_path / "project"
    project.mkdir()
    (project / "otelhooks.yaml").write_text(SCRIPT_GUARD_HOOKS)
    # the guard imports a helper of its own from beside it, which must go on working
    (project / "guard.py").write_text("from rm_words import denied\n\n\n" + NO_RM_SCRIPT)
    (project / "rm_words.py").write_text("def denied(args):\n    return 'rm -rf' in args\n")
    for name in ("structlog", "yaml", "pydantic"):
        (project / f"{name}.py").write_text("raise SystemExit('imported from the agent')\n")
    (project / "logging.py").write_text("def helper():\n    return 1\n")  # a project's own
    with runtime_folder() as runtime:
        env = client_env(project, runtime)
        for n in range(2):  # the one-process bridge, then the daemon the first started
            answer = _client_in(project, env, ["--hooks", "otelhooks.yaml"], f"t{n}", "rm -rf x")
            assert answer.deny_reason() == "no rm"
            assert "imported from the agent" not in answer.stderr
            if n == 0:
                daemon_pid(runtime)
