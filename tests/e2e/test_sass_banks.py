"""bench/sass_banks.py: register-bank reads of FFMA loops, on made-up SASS whose answers are known (no GPU or
cuobjdump needed).

  - loop A, 65 FFMA: the first reads its two multiplicands (marked .reuse) and its sum, two of them in bank 1; the
    next 63 take both multiplicands from the reuse cache and read only their sums; the last adds RZ, no read at all;
  - 30 integer instructions, then loop B, 64 FFMA of three registers in bank 0, one of them predicated: the first
    reads all three, though loop A left R100 in the cache (a loop starts from an empty one), and marks R100 .reuse;
    the second takes R100 from the cache, unmarked, which empties the entry; the others read all three;
  - loop C, 40 FFMA: too few to be a loop; a second function, left out by the name filter; no arguments: the usage.
Environment: NANOCONV_SRC (the source tree).
"""
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import ncpy  # noqa: E402

src = os.environ.get("NANOCONV_SRC") or os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
script = os.path.join(src, "bench", "sass_banks.py")
chk = ncpy.Checker("test_sass_banks")

lines, addr = [], 0


def insn(text, pred=""):
    global addr
    lines.append(f"        /*{addr:04x}*/              {pred:>5} {text} ;      /* 0x000000000000000000 */")
    lines.append("                                                                    /* 0x000000000000000000 */")
    addr += 0x10


lines += ["", "Fatbin elf code:", "================", "arch = sm_90", "", "\tcode for sm_90",
          "\t\tFunction : _Z6kernelPf", "\t.headerflags\t@\"EF_CUDA_SM90 EF_CUDA_VIRTUAL_SM(EF_CUDA_SM90)\""]
insn("MOV R1, c[0x0][0x28]")
insn("BRA 0x100", "@P0")
for i in range(64):  # loop A
    insn(f"FFMA R{2 * i + 1}, R100.reuse, R103.reuse, R{2 * i + 1}")
insn("FFMA R201, R100.reuse, R103.reuse, RZ")
for i in range(30):
    insn("IADD3 R5, R5, 0x1, RZ")
for i in range(64):  # loop B
    insn(f"FFMA R{2 * i + 2}, R100{'.reuse' if i == 0 else ''}, R102, R{2 * i + 2}", "@!P1" if i == 9 else "")
for i in range(30):
    insn("IADD3 R5, R5, 0x1, RZ")
for i in range(40):  # loop C
    insn(f"FFMA R{2 * i + 1}, R7, R9, R{2 * i + 1}")
insn("EXIT")
lines += ["\t\t..........", "", "\t\tFunction : _Z5otherPf"]
for i in range(80):
    insn(f"FFMA R{2 * i + 1}, R7, R9, R{2 * i + 1}")
insn("EXIT")

tmp = tempfile.mkdtemp(prefix="nc-sass-banks-")
sass = os.path.join(tmp, "k.sass")
with open(sass, "w") as f:
    f.write("\n".join(lines) + "\n")

r = subprocess.run([sys.executable, script, sass, "kernel"], capture_output=True, text=True)
out = r.stdout.splitlines()
chk.check(r.returncode == 0, f"exit 0 (got {r.returncode}: {r.stderr})")
chk.check(out[:1] == ["_Z6kernelPf"], f"the one function whose name holds 'kernel' (got {out[:1]})")
chk.check(len(out) == 3, f"two loops, not loop C (40 FFMA) nor the other function (got {len(out) - 1}: {out})")
a_end, b_start = 0x10 * (2 + 65 - 1) + 0, 0x10 * (2 + 65 + 30)
want_a = (f"  20-{a_end:x}: 65 instructions, FFMA 65 (100.0%), FFMA by fresh reads {{0: 1, 1: 63, 3: 1}}, "
          "one bank read twice 1 (1.5%)")
want_b = (f"  {b_start:x}-{b_start + 63 * 0x10:x}: 64 instructions, FFMA 64 (100.0%), FFMA by fresh reads "
          "{2: 1, 3: 63}, one bank read twice 64 (100.0%)")
chk.check(len(out) > 1 and out[1] == want_a, f"loop A:\n  got  {out[1] if len(out) > 1 else None}\n  want {want_a}")
chk.check(len(out) > 2 and out[2] == want_b, f"loop B:\n  got  {out[2] if len(out) > 2 else None}\n  want {want_b}")

r = subprocess.run([sys.executable, script, sass], capture_output=True, text=True)
chk.check(r.returncode == 0 and r.stdout.count("Function") == 0 and "_Z5otherPf" in r.stdout,
          f"no filter: both functions (got {r.stdout[:200]})")
chk.check(sum(1 for line in r.stdout.splitlines() if line.startswith("  ")) == 3,
          "no filter: loops A and B, and the other function's one loop of 80")

r = subprocess.run([sys.executable, script], capture_output=True, text=True)
chk.check(r.returncode != 0 and "cuobjdump -sass" in r.stderr, "no arguments: the usage, and a failure")
chk.finish()
