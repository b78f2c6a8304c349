"""PostgreSQL: replicas that start together on a fresh database create LightRAG's tables one at a time.

``PostgreSQLDB.check_tables`` (LightRAG 1.5.7) runs ``CREATE TABLE IF NOT EXISTS`` and its migrations on the first
connection of every process; two processes doing it at once fail with ``duplicate key value violates unique
constraint "pg_type_typname_nsp_index"`` (PostgreSQL's catalog race on concurrent creation of one table). Wrapped
here under a session-level advisory lock, so the second replica waits for the first and then finds every table.
The waiting side polls ``pg_try_advisory_lock``: blocked inside ``pg_advisory_lock`` its session would hold a
transaction open, and the first process's ``CREATE INDEX CONCURRENTLY`` waits for every open transaction.
Applied only when a PostgreSQL storage is configured: importing ``postgres_impl`` needs ``asyncpg``.
"""

from __future__ import annotations

import asyncio

from .private import check_symbol, wrap_once

POLL_SECONDS = 0.1
TABLES_LOCK = 0x6C72_7072_7362_6C73  # one advisory lock key for every process on the database ("lrprsbls")


def serialize_table_creation() -> None:
    from lightrag.kg import postgres_impl

    check_symbol("lightrag.kg.postgres_impl", "PostgreSQLDB.check_tables", 1)

    def serialized(original):
        async def check_tables(self):
            async with self.pool.acquire() as connection:
                while not await connection.fetchval("SELECT pg_try_advisory_lock($1)", TABLES_LOCK):
                    await asyncio.sleep(POLL_SECONDS)
                try:
                    return await original(self)
                finally:
                    await connection.execute("SELECT pg_advisory_unlock($1)", TABLES_LOCK)
        return check_tables

    wrap_once(postgres_impl.PostgreSQLDB, "check_tables", serialized)
