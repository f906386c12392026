"""rendition.model.weights: int8 row storage (quantize_rows / save_weights / load_weights) and its errors."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
import torch
from safetensors import safe_open
from safetensors.torch import save_file

from rendition.model.weights import ROW_SCALE, ModelLoadError, load_weights, quantize_rows, save_weights


def _matrix() -> torch.Tensor:
    torch.manual_seed(0)
    w = torch.randn(6, 40)
    w[1] = 0.0  # an all-zero row
    w[2] *= 1e4  # rows of very different size each get their own scale
    w[3] *= 1e-5
    w[4, 7] = 50.0  # one outlier sets its row's scale
    return w


def test_quantize_rows_error_is_at_most_half_a_step():
    w = _matrix()
    q, scale = quantize_rows(w)
    assert q.dtype == torch.int8 and q.shape == w.shape and scale.dtype == torch.float32 and scale.shape == (6,)
    assert int(q.abs().max()) == 127 and int(q.min()) >= -127
    for r in range(len(w)):
        row_max = float(w[r].abs().max())
        assert float(scale[r]) == pytest.approx(row_max / 127, rel=1e-6)
        err = (q[r].float() * scale[r] - w[r]).abs().max()
        assert float(err) <= float(scale[r]) / 2 * (1 + 1e-5) + 1e-30
        if row_max:
            assert int(q[r].abs().max()) == 127  # the largest element uses the full range
    assert not q[1].any() and float(scale[1]) == 0.0


def test_save_weights_stores_int8_rows_and_load_weights_restores_them(tmp_path):
    torch.manual_seed(1)
    model = torch.nn.Sequential(torch.nn.Embedding(500, 32), torch.nn.Linear(32, 4))
    path = tmp_path / "m.safetensors"
    save_weights(model.state_dict(), path, torch.float16, int8_rows=("0.weight",))
    with safe_open(str(path), "pt") as f:
        assert set(f.keys()) == {"0.weight", "0.weight" + ROW_SCALE, "1.weight", "1.bias"}
        q, scale = f.get_tensor("0.weight"), f.get_tensor("0.weight" + ROW_SCALE)
        assert q.dtype == torch.int8 and scale.dtype == torch.float32 and f.get_tensor("1.weight").dtype == torch.float16
    fp16 = tmp_path / "h.safetensors"
    save_weights(model.state_dict(), fp16, torch.float16)
    assert path.stat().st_size < 0.6 * fp16.stat().st_size
    again = torch.nn.Sequential(torch.nn.Embedding(500, 32), torch.nn.Linear(32, 4))
    load_weights(again, path)
    torch.testing.assert_close(again[0].weight, q.float() * scale[:, None], rtol=0, atol=0)
    torch.testing.assert_close(again[1].weight, model[1].weight.half().float(), rtol=0, atol=0)
    step = model[0].weight.abs().amax(1, keepdim=True) / 127
    assert bool(((again[0].weight - model[0].weight).abs() <= step / 2 + 1e-7).all())


@pytest.mark.parametrize(
    "tensors, message",
    [
        ({"weight": torch.ones(2, 2, dtype=torch.int8)}, "int8 tensors without their .row_scale"),
        ({"weight": torch.ones(2, 2, dtype=torch.int8), "weight.row_scale": torch.ones(3)}, "does not scale the rows"),
        ({"weight": torch.ones(2, 2), "weight.row_scale": torch.ones(2)}, "does not scale the rows"),
        ({"other.row_scale": torch.ones(2), "weight": torch.ones(2, 2)}, "does not scale the rows"),
    ],
)
def test_half_an_int8_pair_is_a_clear_load_error(tmp_path, tensors, message):
    path = tmp_path / "bad.safetensors"
    save_file(tensors, str(path))
    with pytest.raises(ModelLoadError, match=message):
        load_weights(torch.nn.Linear(2, 2, bias=False), path)


ARENAS = """
import ctypes, re, threading
from rendition.model.weights import bound_c_heap

libc = ctypes.CDLL(None)
libc.malloc.restype, libc.malloc.argtypes = ctypes.c_void_p, [ctypes.c_size_t]
print(bound_c_heap())
go = threading.Barrier(8)

def allocate():
    go.wait()
    for _ in range(200):
        libc.malloc(4096)  # (a thread's first allocation takes an arena of its own while there are fewer than the cap)

threads = [threading.Thread(target=allocate) for _ in range(8)]
for t in threads: t.start()
for t in threads: t.join()
libc.open_memstream.restype = ctypes.c_void_p
buf, size = ctypes.c_char_p(), ctypes.c_size_t()
stream = libc.open_memstream(ctypes.byref(buf), ctypes.byref(size))
libc.malloc_info(0, ctypes.c_void_p(stream)); libc.fclose(ctypes.c_void_p(stream))
print(len(re.findall(r'<heap nr="\\d+">', buf.value.decode())))
"""


@pytest.mark.parametrize("env, arenas", [({}, 2), ({"MALLOC_ARENA_MAX": "5"}, 5)])
def test_bound_c_heap_caps_the_arenas_unless_the_operator_chose(env: dict, arenas: int) -> None:
    """After ``bound_c_heap`` eight threads allocating at once share two heaps (glibc's own cap is
    eight per core, each heap keeping its own free space); an operator's ``MALLOC_ARENA_MAX`` stands
    instead."""
    res = subprocess.run([sys.executable, "-c", ARENAS], capture_output=True, text=True, check=True,
                         env={k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")} | env)  # fmt: skip
    assert res.stdout.split() == ["True", str(arenas)]


TRIMMED = """
import ctypes
from pathlib import Path
from rendition.model.weights import release_freed_memory

def rss_anon_mb():
    line = next(l for l in Path("/proc/self/status").read_text().splitlines() if l.startswith("RssAnon:"))
    return int(line.split()[1]) / 1024

libc = ctypes.CDLL(None)
libc.malloc.restype, libc.malloc.argtypes, libc.free.argtypes = ctypes.c_void_p, [ctypes.c_size_t], [ctypes.c_void_p]
blocks = [libc.malloc(64 * 1024) for _ in range(2000)]  # 125 MiB in the heap (below the mmap threshold)
for b in blocks:
    ctypes.memset(b, 1, 64 * 1024)
pin = libc.malloc(64 * 1024)  # (a block above them: the heap's top cannot shrink past it)
for b in blocks:
    libc.free(b)
held = rss_anon_mb()
print(release_freed_memory(), round(held - rss_anon_mb()))
"""


def test_release_freed_memory_returns_the_heaps_free_pages() -> None:
    """125 MiB freed inside the heap, below a block still in use, stays resident until
    ``release_freed_memory`` hands its pages back (what the scheduler does when a worker goes idle
    and ``Translator.core`` after a batch)."""
    res = subprocess.run([sys.executable, "-c", TRIMMED], capture_output=True, text=True, check=True,
                         env={k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")})  # fmt: skip
    done, released = res.stdout.split()
    assert done == "True" and int(released) >= 100, res.stdout
