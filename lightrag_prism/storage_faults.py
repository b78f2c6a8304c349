"""A storage server that cannot be reached during a query: one error naming the storage, not a driver traceback.

LightRAG's server-backed storages retry a lost connection themselves (PostgreSQL: ``POSTGRES_CONNECTION_RETRIES``
with backoff, Redis: its client's retries) and reconnect on their own once the server is back; what reaches the
caller when they give up is the driver's exception. :func:`storage_fault` recognises it: a connection-level error
(``OSError``, ``ConnectionError``, ``TimeoutError`` or a driver's connection error) raised inside a method of a
LightRAG storage, found on the traceback. PrismRAG re-raises it as :class:`StorageUnavailableError`.
"""

from __future__ import annotations

from lightrag.base import StorageNameSpace

from .errors import StorageUnavailableError, describe_error, exception_chain

# Drivers' connection errors that are not OSError subclasses (asyncpg, redis-py), matched by name: importing the
# drivers here would make them dependencies of every install.
DRIVER_CONNECTION_ERRORS = ("InterfaceError", "ConnectionDoesNotExistError", "CannotConnectNowError",
                            "ConnectionFailureError", "PostgresConnectionError", "TooManyConnectionsError",
                            "BusyLoadingError")


def _is_connection_error(exc: BaseException) -> bool:
    if isinstance(exc, (OSError, ConnectionError, TimeoutError)):
        return True
    return any(cls.__name__ in DRIVER_CONNECTION_ERRORS for cls in type(exc).__mro__)


def _storage_on_traceback(exc: BaseException) -> StorageNameSpace | None:
    """The innermost LightRAG storage whose method the exception passed through."""
    found, tb = None, exc.__traceback__
    while tb is not None:
        owner = tb.tb_frame.f_locals.get("self")
        if isinstance(owner, StorageNameSpace):
            found = owner
        tb = tb.tb_next
    return found


def storage_fault(exc: BaseException) -> StorageUnavailableError | None:
    """The error to raise instead of ``exc`` if it is a storage server that could not be reached, else None."""
    for link in exception_chain(exc):
        if not _is_connection_error(link):
            continue
        storage = _storage_on_traceback(link) or _storage_on_traceback(exc)
        if storage is not None:
            return StorageUnavailableError(type(storage).__name__, storage.namespace, describe_error(link))
    return None
