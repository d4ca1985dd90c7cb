#!/usr/bin/env python3
"""Whether two cubins hold the same machine code: each kernel's code (.text.*), constants (.nv.constant*),
shared-memory sizes (.nv.shared*) and attributes (.nv.info.*, registers and barriers among them), compared byte for
byte. Line tables and debug sections are left out, so a change to src/cuda's comments or a path no kernel takes can be
shown not to change what runs, without a GPU:

    nvcc -O3 -std=c++17 -arch=sm_90 -Isrc -Iinclude -cubin src/cuda/conv_wino.cu -o /tmp/before.cubin
    (edit)  ... -o /tmp/after.cubin
    python3 tools/cubin_same.py /tmp/before.cubin /tmp/after.cubin

Prints the sections that differ; exit status 0 where none does, 1 otherwise. Reads the ELF64 section headers itself
(binutils' readelf complains about the cubin's section info fields)."""
import hashlib
import struct
import sys

KEPT = (".text.", ".nv.constant", ".nv.shared", ".nv.info.")
SHT_NOBITS = 8


def sections(path):
    with open(path, "rb") as f:
        d = f.read()
    if d[:4] != b"\x7fELF" or d[4] != 2:
        sys.exit(f"cubin_same: {path}: not an ELF64 file")
    shoff, = struct.unpack_from("<Q", d, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", d, 0x3A)
    hdrs = [struct.unpack_from("<IIQQQQIIQQ", d, shoff + i * shentsize) for i in range(shnum)]
    names = hdrs[shstrndx][4]
    out = {}
    for h in hdrs:
        name = d[names + h[0]:d.index(b"\0", names + h[0])].decode()
        if name.startswith(KEPT):
            body = str(h[5]).encode() if h[1] == SHT_NOBITS else d[h[4]:h[4] + h[5]]
            out[name] = hashlib.sha1(body).hexdigest()
    return out


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: cubin_same.py A.cubin B.cubin")
    a, b = sections(sys.argv[1]), sections(sys.argv[2])
    differ = sorted(k for k in set(a) | set(b) if a.get(k) != b.get(k))
    kernels = sum(k.startswith(".text.") for k in a)
    for k in differ:
        print("differs:", k)
    print(f"{kernels} kernels, {len(a)} sections compared: {'the same' if not differ else f'{len(differ)} differ'}")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
