"""Builds the extension sam2rt._sam2rt with the project's CMake and packages python/sam2rt.

The build step configures the repository with SAM2RT_BUILD_PYTHON=ON (tests and
benchmarks off) in build-python/cmake, builds the target _sam2rt and copies it into
the package. SAM2RT_CMAKE_ARGS adds CMake arguments; CMAKE_BUILD_PARALLEL_LEVEL sets
the build jobs; ccache is used when installed. SAM2RT_BUILD_DIR=DIR instead builds
_sam2rt in an existing build folder configured with SAM2RT_BUILD_PYTHON=ON (no new
configure, nothing compiled twice).
"""

import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = Path(__file__).resolve().parent


class CMakeBuild(build_ext):
    def build_extension(self, ext):
        existing = os.environ.get("SAM2RT_BUILD_DIR")
        build_dir = Path(existing).resolve() if existing else ROOT / "build-python" / "cmake"
        if not existing:
            self.configure(build_dir)
        jobs = os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL", str(os.cpu_count() or 1))
        subprocess.run(["cmake", "--build", str(build_dir), "--target", "_sam2rt", "-j", jobs], check=True)
        built = list((build_dir / "python" / "sam2rt").glob("_sam2rt*.so"))
        if len(built) != 1:
            raise RuntimeError(f"expected one _sam2rt*.so in {build_dir / 'python' / 'sam2rt'}, found {built}")
        target = Path(self.get_ext_fullpath(ext.name))
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(built[0], target)

    @staticmethod
    def configure(build_dir):
        configure = [
            "cmake", "-S", str(ROOT), "-B", str(build_dir),
            "-DCMAKE_BUILD_TYPE=Release",
            "-DSAM2RT_BUILD_PYTHON=ON", "-DSAM2RT_BUILD_TESTS=OFF", "-DSAM2RT_BUILD_BENCH=OFF",
            f"-DPython3_EXECUTABLE={sys.executable}",
        ]
        if shutil.which("ccache"):
            configure.append("-DCMAKE_CXX_COMPILER_LAUNCHER=ccache")
        configure += shlex.split(os.environ.get("SAM2RT_CMAKE_ARGS", ""))
        subprocess.run(configure, check=True)


setup(
    packages=["sam2rt"],
    package_dir={"": "python"},
    ext_modules=[Extension("sam2rt._sam2rt", sources=[])],
    cmdclass={"build_ext": CMakeBuild},
    options={"build": {"build_base": "build-python/setuptools"}},
)
