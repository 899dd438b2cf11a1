#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# embed_source.py INPUT OUTPUT NAME
# Writes OUTPUT, a C++ fragment that defines `inline constexpr char NAME[]` as INPUT's text: how the
# library carries kernels/float_ops.cuh to NVRTC, which compiles it in front of every fused kernel.
import sys

source, output, name = sys.argv[1:4]
with open(source, encoding="utf-8") as f:
    text = f.read()
delimiter = "tf_embed"
if ")" + delimiter + '"' in text:
    sys.exit(f"embed_source.py: {source} contains the raw string's end, ){delimiter}\"")
with open(output, "w", encoding="utf-8") as f:
    f.write(f"// Generated from {source.rsplit('/', 1)[-1]} by embed_source.py: do not edit.\n")
    f.write(f'inline constexpr char {name}[] = R"{delimiter}({text}){delimiter}";\n')
