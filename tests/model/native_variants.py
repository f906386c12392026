"""The native kernels' instruction-set variants, loaded one at a time for a test (``RENDITION_ISA``)."""

from __future__ import annotations

import pytest

from rendition.model.kernels import fused_cpu, native


def need_int8() -> None:
    """Skip where the int8 kernel cannot run (no native library, no oneDNN int8 gemm); under
    RENDITION_REQUIRE_NATIVE=1 (CI) that is a failure."""
    so = fused_cpu.kernel()
    if so is not None and fused_cpu._INT8.get(id(so)):
        return
    (pytest.fail if native.required() else pytest.skip)("no int8 kernel (native library, oneDNN's dnnl_gemm_u8s8s32)")


def load_variant(isa: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """Load the ``isa`` variant of the native kernels as the library for one test (skipped where
    the CPU cannot run it; a variant that was not built fails under RENDITION_REQUIRE_NATIVE=1)."""
    if not native.cpu_supports(isa):
        pytest.skip(f"this CPU cannot run the {isa} variant")
    if isa not in native.built():
        (pytest.fail if native.required() else pytest.skip)(f"the {isa} variant was not built")
    monkeypatch.setenv("RENDITION_ISA", isa)
    monkeypatch.setattr(native, "_LIB", {})
    monkeypatch.setattr(fused_cpu, "_WIRED", {})
    monkeypatch.setattr(fused_cpu, "_INT8", {})
    monkeypatch.setattr(fused_cpu, "_PACKED", {})
    need_int8()
    assert native.isa() == isa
    return isa
