"""rendition.model.weights: int8 row storage (quantize_rows / save_weights / load_weights) and its errors."""

from __future__ import annotations

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


BLOCK_MAPPED = """
import ctypes
from rendition.model.weights import bound_c_heap

class Info(ctypes.Structure):
    _fields_ = [(n, ctypes.c_size_t) for n in "arena ordblks smblks hblks hblkhd usmblks fsmblks uordblks fordblks keepcost".split()]

libc = ctypes.CDLL(None)
libc.mallinfo2.restype, libc.malloc.restype, libc.malloc.argtypes = Info, ctypes.c_void_p, [ctypes.c_size_t]
libc.free.argtypes = [ctypes.c_void_p]
print(bound_c_heap())
before = libc.mallinfo2().hblks
p = libc.malloc(5 * 2**20)  # (over bound_c_heap's threshold of 4 MiB)
big = libc.malloc(16 * 2**20); libc.free(big)  # (glibc's own threshold would rise to 16 MiB after this free)
q = libc.malloc(5 * 2**20)
print(libc.mallinfo2().hblks - before)
"""


@pytest.mark.parametrize("env, mapped", [({}, 2), ({"MALLOC_MMAP_THRESHOLD_": str(64 * 2**20)}, 0)])
def test_bound_c_heap_maps_large_blocks_unless_the_operator_chose(env: dict, mapped: int) -> None:
    """After ``bound_c_heap`` a 5 MiB block is mapped (it goes back to the system when freed) even
    after a 16 MiB block was freed, which raises glibc's own threshold past it; an operator's
    ``MALLOC_MMAP_THRESHOLD_`` stands instead."""
    import os
    import subprocess
    import sys

    res = subprocess.run([sys.executable, "-c", BLOCK_MAPPED], capture_output=True, text=True, check=True,
                         env={k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")} | env)  # fmt: skip
    assert res.stdout.split() == ["True", str(mapped)]
