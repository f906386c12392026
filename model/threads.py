"""The names the operating system shows for this process's threads (``top -H``, ``ps -L``,
``perf``, ``py-spy``, ``/proc/PID/task/TID/comm``).  Python 3.11 names its threads for Python only:
every thread of the service shows as ``python`` there; the translation workers, the embedding
thread and the model loader name themselves with ``name_native_thread``.
"""

from __future__ import annotations

import threading
from pathlib import Path

NAME_BYTES = 15  # Linux keeps at most 15 bytes of a thread's name


def native_thread_name(name: str) -> str:
    """``name`` as the kernel keeps it: its first 15 bytes, without a character cut in half."""
    return name.encode()[:NAME_BYTES].decode(errors="ignore")


def name_native_thread(name: str) -> bool:
    """Give the calling thread ``name`` (``native_thread_name``) where the system lets a thread
    name itself through ``/proc`` (Linux); whether it did."""
    try:
        Path(f"/proc/self/task/{threading.get_native_id()}/comm").write_text(native_thread_name(name))
    except OSError:
        return False
    return True
