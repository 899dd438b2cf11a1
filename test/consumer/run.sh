#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# run.sh SOURCE_ROOT WORK_DIR
# Installs typeflow into WORK_DIR/prefix and builds test/consumer/main.cpp twice: against the
# installed package through pkg-config, and with typeflow as a Meson subproject; and, when the build
# has the ONNX importer, test/consumer/onnx_main.cpp through pkg-config typeflow-onnx.
set -eu
src=$1
work=$2
rm -rf "$work"
mkdir -p "$work"

echo "== install"
meson setup "$work/build" "$src" --prefix "$work/prefix" --libdir lib \
  -Dtests=disabled -Dexamples=disabled -Dbenchmarks=disabled >"$work/setup.log"
meson install -C "$work/build" >"$work/install.log"

echo "== pkg-config consumer"
export PKG_CONFIG_PATH="$work/prefix/lib/pkgconfig"
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

echo "== subproject consumer"
mkdir -p "$work/sub/subprojects"
cp "$src/test/consumer/subproject/meson.build" "$src/test/consumer/main.cpp" "$work/sub/"
ln -s "$src" "$work/sub/subprojects/typeflow"
meson setup "$work/sub/build" "$work/sub" >"$work/sub-setup.log"
meson compile -C "$work/sub/build" >"$work/sub-compile.log"
"$work/sub/build/consumer"
