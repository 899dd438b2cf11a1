// SPDX-License-Identifier: Apache-2.0
// The header test passes by building: every generated translation unit includes one public
// header first and alone. Linking them together also proves the headers define no non-inline
// functions or variables (a duplicate symbol would fail the link).
int main() { return 0; }
