"""Hostile config files (issue 13, deliverable 4): a small file cannot cost gigabytes, minutes or
a traceback, and ``serve --hooks`` judges a file exactly as ``validate`` does.

Each test runs the real command line in a child process under a 1.5 GB address-space limit, and
measures its wall time and peak RSS (``wait4``).
"""

from __future__ import annotations

from pathlib import Path

from tests.reliability._procs import cli_env, run_cli

LAUGHS = """\
hooks:
  - id: notify
    type: onComplete
    webhook:
      url: http://127.0.0.1:9/hook
      body:
        a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]
        b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]
        c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]
        d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]
        e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]
        f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]
        g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]
        h: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]
        i: &i [*h,*h,*h,*h,*h,*h,*h,*h,*h]
"""


def eight_levels() -> str:
    lines = ["x0: &x0 " + '"' + "a" * 64 + '"']
    for level in range(1, 8):
        refs = ",".join([f"*x{level - 1}"] * 16)
        lines.append(f"x{level}: &x{level} [{refs}]")
    lines.append("hooks:")
    lines.append("  - {id: w, type: onComplete, webhook: {url: 'http://127.0.0.1:9/', body: *x7}}")
    return "\n".join(lines) + "\n"


def test_billion_laughs_in_a_webhook_body_is_refused_by_validate(tmp_path: Path) -> None:
    path = tmp_path / "laughs.yaml"
    path.write_text(LAUGHS)
    assert path.stat().st_size < 1500
    done = run_cli("validate", str(path))
    assert done.code == 1, (done.stdout, done.stderr)
    assert f"{path}:13: YAML aliases expand" in done.stdout
    assert done.max_rss_mb < 300, done.max_rss_mb
    assert done.seconds < 20


def test_aliases_eight_levels_deep_fail_at_load_not_at_run(tmp_path: Path) -> None:
    path = tmp_path / "eight.yaml"
    path.write_text(eight_levels())
    assert path.stat().st_size < 1500
    done = run_cli("demo", "--hooks", str(path), "--traces-out", str(tmp_path / "t.jsonl"))
    assert done.code not in (0, None), (done.code, done.stdout[-500:], done.stderr[-2000:])
    assert "aliases expand" in done.stdout + done.stderr
    assert done.max_rss_mb < 300, done.max_rss_mb
    assert done.seconds < 20


def test_deep_yaml_is_a_located_error_in_validate_and_serve(tmp_path: Path) -> None:
    path = tmp_path / "deep.yaml"
    path.write_text(
        "hooks:\n  - id: d\n    type: onComplete\n    handler: " + "[" * 20_000 + "]" * 20_000
    )
    assert path.stat().st_size > 40_000
    done = run_cli("validate", str(path))
    assert done.code == 1
    assert f"{path}:4: invalid YAML: nested deeper than 64 levels" in done.stdout
    served = run_cli(
        "serve",
        "--hooks",
        str(path),
        "--port",
        "0",
        env=cli_env(OTELHOOKS_ADMIN_TOKEN="admin-token-123"),
    )
    assert served.code == 2, (served.code, served.stderr[-2000:])
    assert "Traceback" not in served.stderr
    assert f"{path}:4: invalid YAML: nested deeper than 64 levels" in served.stderr


def test_deep_json_is_a_located_error(tmp_path: Path) -> None:
    path = tmp_path / "deep.json"
    path.write_text('{"hooks": [\n' + "[" * 5000 + "]" * 5000 + "]}")
    done = run_cli("validate", str(path))
    assert done.code == 1
    assert f"{path}:2: nested deeper than 64 levels" in done.stdout


def test_serve_refuses_an_oversized_file_at_once(tmp_path: Path) -> None:
    path = tmp_path / "big.yaml"
    filler = "    # " + "x" * 73 + "\n"
    with path.open("w") as file:
        file.write("hooks:\n  - id: big\n    type: onComplete\n    handler: builtins:print\n")
        file.write(filler * (20 * 1024 * 1024 // len(filler)))
    served = run_cli(
        "serve",
        "--hooks",
        str(path),
        "--port",
        "0",
        env=cli_env(OTELHOOKS_ADMIN_TOKEN="admin-token-123"),
        timeout_s=30,
    )
    assert served.code == 2, (served.code, served.stderr[-2000:])
    assert "larger than 1,048,576 bytes" in served.stderr
    assert served.seconds < 10
    assert served.max_rss_mb < 400, served.max_rss_mb  # the old code took 3.4 GB


def test_serve_reports_every_problem_validate_reports(tmp_path: Path) -> None:
    path = tmp_path / "events.yaml"
    path.write_text("kind: agent_events\ncapacity: -1\nshow_notice: maybe\nwatchh: [x]\n")
    validated = run_cli("validate", str(path))
    problems = [line.strip() for line in validated.stdout.splitlines() if line.startswith("  ")]
    assert len(problems) == 3, validated.stdout
    served = run_cli(
        "serve",
        "--hooks",
        str(path),
        "--port",
        "0",
        env=cli_env(OTELHOOKS_ADMIN_TOKEN="admin-token-123"),
    )
    assert served.code == 2
    for problem in problems:
        assert problem in served.stderr, (problem, served.stderr)
