"""The constants of the polynomial word hash, shared by the definition and the compiled kernel.

They live apart from :mod:`dedupe.shingles` (the definition, which loads the kernel on first use)
and :mod:`dedupe.minhash_kernel` (which builds its power tables from them), so that neither module
imports the other at load time and the kernel stays out of processes that never sign a document.
"""

from __future__ import annotations

MASK64 = (1 << 64) - 1
#: Odd multiplier of the polynomial word hash, and its inverse modulo 2**64.
POLY_BASE = 0x100000001B3  # the FNV-1a 64-bit prime: odd, with well spread bits
POLY_BASE_INV = pow(POLY_BASE, -1, 1 << 64)
