"""Build of the native CPU kernels (model/kernels/csrc/*.c); the package metadata is in pyproject.toml.

The kernels are plain C (no Python or torch headers) loaded with ctypes by model/kernels/native.py.
They are compiled here, at install time (``pip install .``, ``pip install -e .``, ``pip wheel``), once
per instruction set, each variant a shared library of its own:

    _native_generic   x86-64 baseline (SSE2), and the only variant on other machines
    _native_avx2      AVX2 + FMA + F16C (Haswell and later)
    _native_avx512    AVX-512 F/BW/CD/DQ/VL (x86-64-v4), tuned as the machine the benchmarks ran on

and model/kernels/native.py loads the best one the CPU supports when the model first needs it (as
CTranslate2 dispatches its kernels).  Warnings are errors.  If a variant cannot be built (no C
compiler, no OpenMP), the install says so loudly and goes on: the torch code paths then run.
``RENDITION_REQUIRE_NATIVE=1`` makes that a build failure instead (CI, the container image).
"""

from __future__ import annotations

import os
import platform
import sys

from setuptools import Extension, find_packages, setup
from setuptools.command.build_ext import build_ext

CSRC = "model/kernels/csrc"
SOURCES = [f"{CSRC}/{name}.c" for name in ("cpu", "attention", "fused", "packed", "search", "disan")]
DEPENDS = [f"{CSRC}/{name}.h" for name in ("rendition_kernels", "vec", "attention_impl")]
COMMON = [
    "-O3", "-ffast-math", "-fopenmp", "-fno-wrapv",  # (-fno-wrapv: Python's CFLAGS carry -fwrapv)
    "-std=gnu11", "-Wall", "-Wextra", "-Werror",
    "-Wno-psabi",  # vector arguments of static functions: no ABI crosses a library boundary
]  # fmt: skip
X86 = platform.machine().lower() in ("x86_64", "amd64")
VARIANTS = {
    "generic": ["-march=x86-64", "-mtune=generic"] if X86 else [],
    **({"avx2": ["-march=haswell"], "avx512": ["-march=x86-64-v4", "-mtune=znver3"]} if X86 else {}),
}


def require_native() -> bool:
    return os.environ.get("RENDITION_REQUIRE_NATIVE", "").lower() in ("1", "true", "yes", "on")


class BuildNative(build_ext):
    """build_ext with one temporary directory per variant (the variants compile the same sources
    with different flags) and a loud warning, not a failed install, when a variant does not build."""

    def build_extension(self, ext: Extension) -> None:
        build_temp = self.build_temp
        self.build_temp = os.path.join(build_temp, ext.name.rpartition(".")[2])
        try:
            super().build_extension(ext)
        except Exception as e:
            if require_native():
                raise
            bar = "!" * 100
            print(
                f"\n{bar}\nWARNING: the native kernel {ext.name} could not be built ({type(e).__name__}: {e}).\n"
                "Rendition will run, on its (slower) torch code paths. Install a C compiler with OpenMP\n"
                "(e.g. apt-get install gcc) and reinstall to get the fast CPU kernels.\n"
                f"{bar}\n",
                file=sys.stderr,
            )
        finally:
            self.build_temp = build_temp


# one installed package named after the project: model/ -> rendition.model, service/ -> rendition.service
PACKAGE_DIR = {"rendition.model": "model", "rendition.service": "service"}
PACKAGES = [f"rendition.{p}" for p in find_packages(include=["model", "model.*", "service", "service.*"])]

setup(
    packages=PACKAGES,
    package_dir=PACKAGE_DIR,
    ext_modules=[
        Extension(
            f"rendition.model.kernels._native_{isa}",
            sources=SOURCES,
            depends=DEPENDS,
            include_dirs=[CSRC],
            define_macros=[("RK_ISA", f'"{isa}"')],
            extra_compile_args=COMMON + flags,
            extra_link_args=["-fopenmp", "-lm"],
        )
        for isa, flags in VARIANTS.items()
    ],
    cmdclass={"build_ext": BuildNative},
)
