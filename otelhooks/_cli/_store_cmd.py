"""``otelhooks store migrate``: create or upgrade the shared store's schema before a rollout."""

from __future__ import annotations

import argparse
import sys

from otelhooks._cli._common import Subcommands

__all__ = ["add_parser"]


def _migrate(args: argparse.Namespace) -> int:
    from otelhooks._store._errors import StoreError
    from otelhooks._store._open import STORE_ENV, open_store

    try:
        store = open_store(args.store)  # opening a PostgreSQL store migrates it
    except StoreError as exc:
        print(f"otelhooks store migrate: {exc}", file=sys.stderr)
        return 1
    try:
        if not store.shared:
            print(
                f"otelhooks store migrate: no shared store (--store or {STORE_ENV}); SQLite "
                "files create their tables when serve opens them"
            )
            return 0
        version = store.migrate()
        print(f"otelhooks store migrate: {store.name} is at schema version {version}")
        return 0
    except StoreError as exc:
        print(f"otelhooks store migrate: {exc}", file=sys.stderr)
        return 1
    finally:
        store.close()


def add_parser(sub: Subcommands) -> None:
    from otelhooks._cli import help_of

    store = sub.add_parser("store", help="the shared state store of otelhooks serve")
    commands = store.add_subparsers(dest="store_command", metavar="COMMAND")
    store.set_defaults(func=help_of(store))
    migrate = commands.add_parser(
        "migrate",
        help="create or upgrade the store's schema (serve does it too at start)",
        description="Create the schema of a PostgreSQL store, or apply the migrations it lacks; "
        "the otelhooks_schema table records each applied version.",
    )
    migrate.add_argument(
        "--store", metavar="URL", help="postgresql://user@host/db (default: $OTELHOOKS_STORE)"
    )
    migrate.set_defaults(func=_migrate)
