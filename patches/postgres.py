"""Two repairs of LightRAG 1.5.7's PostgreSQL client (``lightrag.kg.postgres_impl.PostgreSQLDB``), applied by
:func:`install` only when a PrismRAG with a PostgreSQL storage is built (importing ``postgres_impl`` needs
``asyncpg``). The client is one object shared by every instance of the process (LightRAG's ``ClientManager``),
so these are process-wide: from then on a plain LightRAG on PostgreSQL gets the repairs too.

* **Replicas that start together on a fresh database.** ``check_tables`` runs ``CREATE TABLE IF NOT EXISTS`` and
  its migrations on the first connection of every process; two processes doing it at once fail with ``duplicate
  key value violates unique constraint "pg_type_typname_nsp_index"`` (PostgreSQL's catalog race on concurrent
  creation of one table). Here it runs under a session-level advisory lock: the second replica waits for the first
  and then finds every table. The waiting side polls ``pg_try_advisory_lock``: blocked inside ``pg_advisory_lock``
  its session would hold a transaction open, and the first one's ``CREATE INDEX CONCURRENTLY`` waits for every
  open transaction.
* **A query while the server is down hangs forever.** ``_ensure_pool`` holds ``_pool_reconnect_lock`` while
  ``initdb`` retries the connection; tenacity calls ``_before_sleep`` between attempts, whose ``_reset_pool`` takes
  the same (non-reentrant) lock: a deadlock, so the query never fails and never recovers. With no pool there is
  nothing to close, so ``_reset_pool`` returns at once then; the retries run out and the query fails (the plugin
  names the storage, ``storage_faults.py``), and the next query connects again.
"""

from __future__ import annotations

import asyncio

from .private import register_symbols, wrap_once

POLL_SECONDS = 0.1
TABLES_LOCK = 0x6C72_7072_7362_6C73  # one advisory lock key for every process on the database ("lrprsbls")


def _serialized(original):
    async def check_tables(self):
        async with self.pool.acquire() as connection:
            while not await connection.fetchval("SELECT pg_try_advisory_lock($1)", TABLES_LOCK):
                await asyncio.sleep(POLL_SECONDS)
            try:
                return await original(self)
            finally:
                await connection.execute("SELECT pg_advisory_unlock($1)", TABLES_LOCK)
    return check_tables


def _nothing_to_reset_without_a_pool(original):
    async def _reset_pool(self):
        if self.pool is None:
            return
        return await original(self)
    return _reset_pool


def install() -> None:
    from lightrag.kg import postgres_impl

    register_symbols(("lightrag.kg.postgres_impl", "PostgreSQLDB.check_tables", 1),
                     ("lightrag.kg.postgres_impl", "PostgreSQLDB._reset_pool", 1))
    wrap_once(postgres_impl.PostgreSQLDB, "check_tables", _serialized)
    wrap_once(postgres_impl.PostgreSQLDB, "_reset_pool", _nothing_to_reset_without_a_pool)
