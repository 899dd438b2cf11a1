#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# run.sh SOURCE_ROOT WORK_DIR BUILD_DIR
# Installs BUILD_DIR (the build under test, already built: nothing is compiled again) into
# WORK_DIR/destdir and builds test/consumer/main.cpp twice: against that install through pkg-config,
# and with typeflow as a Meson subproject; and, when the build has the ONNX importer,
# test/consumer/onnx_main.cpp through pkg-config typeflow-onnx; and, when nvcc is on PATH,
# test/consumer/cuda_main.cpp through pkg-config typeflow-cuda, by the C++ compiler alone (and with
# the subproject where a GPU is present).
set -eu
# The caller's pkg-config path (the subproject's own dependencies may need it); the pkg-config
# consumers below point it at the install.
caller_pkg_config_path=${PKG_CONFIG_PATH:-}
src=$1
work=$2
build=$3
cuda_sub=${TYPEFLOW_CONSUMER_CUDA:-}
case "$cuda_sub" in
  ''|0|1) ;;
  *) echo "TYPEFLOW_CONSUMER_CUDA must be 1 (build the subproject's CUDA consumer), 0 (do not) or unset (where a GPU is), not '$cuda_sub'" >&2; exit 2 ;;
esac
rm -rf "$work"
mkdir -p "$work"

echo "== install"
meson install -C "$build" --no-rebuild --destdir "$work/destdir" >"$work/install.log"
# The .pc files name the build's prefix; the install lies under destdir, so they are pointed there
# (what a package manager's relocation does).
typeflow_pc=$(find "$work/destdir" -name typeflow.pc | head -n 1)
[ -n "$typeflow_pc" ] || { echo "typeflow.pc is not in the install" >&2; exit 1; }
pcdir=$(dirname "$typeflow_pc")
# The folder as a sed replacement: &, | and \ escaped.
root=$(printf '%s' "$work/destdir" | sed 's/[&|\\]/\\&/g')
for pc in "$pcdir"/*.pc; do
  sed -i "s|^prefix=|prefix=$root|" "$pc"
done
libdir=$(dirname "$pcdir")

echo "== pkg-config consumer"
export PKG_CONFIG_PATH="$pcdir"
cflags=$(pkg-config --cflags typeflow)
libs=$(pkg-config --libs typeflow)
# shellcheck disable=SC2086
# -Werror: typeflow's headers, and Eigen's through the package's flags, add no warning to a user's build.
${CXX:-c++} -O2 -Wall -Wextra -Werror $cflags "$src/test/consumer/main.cpp" -o "$work/consumer-pkgconfig" $libs
"$work/consumer-pkgconfig"

# The ONNX importer's package, where the build has it.
if pkg-config --exists typeflow-onnx; then
  echo "== pkg-config consumer of typeflow-onnx"
  # shellcheck disable=SC2046
  ${CXX:-c++} -O2 -Wall -Wextra -Werror $(pkg-config --cflags typeflow-onnx) "$src/test/consumer/onnx_main.cpp" \
    -o "$work/consumer-onnx" $(pkg-config --libs typeflow-onnx)
  "$work/consumer-onnx"
fi

# The CUDA library's package, where the build has it: no CUDA include path and no nvcc on the user's side.
if pkg-config --exists typeflow-cuda; then
  echo "== pkg-config consumer of typeflow-cuda (C++ compiler only)"
  case "$(pkg-config --cflags typeflow-cuda)" in
    *cuda/include*|*cuda-*/include*) echo "typeflow-cuda's cflags name a CUDA include path" >&2; exit 1 ;;
  esac
  # shellcheck disable=SC2046
  ${CXX:-c++} -O2 -Wall -Wextra -Werror $(pkg-config --cflags typeflow-cuda) "$src/test/consumer/cuda_main.cpp" \
    -o "$work/consumer-cuda" $(pkg-config --libs typeflow-cuda)
  # The install is a scratch folder the loader does not search (an install under /usr/local is found).
  LD_LIBRARY_PATH="$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$work/consumer-cuda"
fi

echo "== subproject consumer"
mkdir -p "$work/sub/subprojects"
cp "$src/test/consumer/subproject/meson.build" "$src/test/consumer/main.cpp" "$src/test/consumer/cuda_main.cpp" "$work/sub/"
ln -s "$src" "$work/sub/subprojects/typeflow"
# The subproject, not the install above (or a typeflow installed on the system): both dependencies
# are forced to their fallback, and the consumer's meson.build checks that they are the subproject's.
PKG_CONFIG_PATH=$caller_pkg_config_path meson setup --force-fallback-for=typeflow,typeflow-cuda \
  "$work/sub/build" "$work/sub" >"$work/sub-setup.log" || { cat "$work/sub-setup.log" >&2; exit 1; }
# The CPU consumer always. The subproject's CUDA library (nvcc, 110-130 s of CPU beside the other
# tests: the longest part of the suite) only where a GPU is present, where its consumer runs GPU
# code: without one, the main build has compiled the same cuda/meson.build and the pkg-config
# consumer above has linked against it, and the configure step above has checked that typeflow-cuda
# comes from the subproject. TYPEFLOW_CONSUMER_CUDA=1 builds it anyway, =0 never.
if [ -z "$cuda_sub" ]; then
  cuda_sub=0
  if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then cuda_sub=1; fi
fi
targets=consumer
if [ "$cuda_sub" = 1 ] && grep -q consumer-cuda "$work/sub/build/build.ninja"; then targets="consumer consumer-cuda"; fi
echo "== subproject targets: $targets"
# One job: this test runs beside the others.
# shellcheck disable=SC2086
meson compile -C "$work/sub/build" -j 1 $targets >"$work/sub-compile.log"
"$work/sub/build/consumer"
if echo "$targets" | grep -qw consumer-cuda; then "$work/sub/build/consumer-cuda"; fi
