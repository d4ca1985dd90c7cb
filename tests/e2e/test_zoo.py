"""End-to-end: every model of the zoo (models/*.safetensors) evaluated on all 10000 t10k images gives exactly the
correctness models/README.md lists for it, to the fourth decimal; the zoo holds the seven architectures of the
course; fashion-2017-high reaches 0.90 and fashion-2017-low stays near the course's 0.629.

Evaluates with the fastest CPU backend built (cpu, else cpu-ref); README.md's figures were measured with
`nanoconv eval`, whose backends agree on these models' predictions.
"""
import json
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import ncpy  # noqa: E402

d = ncpy.data_dir()
if not os.path.exists(os.path.join(d, "t10k-images-idx3-ubyte.gz")):
    ncpy.skip(f"no Fashion-MNIST data in {d}; install dataset-fashion-mnist")

src = os.environ.get("NANOCONV_SRC") or os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
models_dir = os.path.join(src, "models")
ZOO = ["fashion-2017-high", "fashion-2017-low", "fashion-2018-spring", "fashion-2018-fall", "fashion-2019-spring",
       "fashion-2019-fall", "fashion-2020"]

chk = ncpy.Checker("test_zoo")


def readme_table(path):
    """{model: {column header: cell}} from the table of models/README.md whose header has 'N = 10000'."""
    with open(path) as f:
        lines = [line.strip() for line in f]
    rows, header = {}, None
    for line in lines:
        if not line.startswith("|"):
            header = None if rows else header
            continue
        cells = [c.strip() for c in line.strip("|").split("|")]
        if header is None:
            if "N = 10000" in cells:
                header = cells
            continue
        if set(line) <= set("|-: "):
            continue
        name = cells[0].strip("`")
        rows[name] = dict(zip(header, cells))
    return rows


backends = ncpy.run(["--version"]).stdout
backend = "cpu" if re.search(r"^backends:.* cpu( |$)", backends, re.M) else "cpu-ref"
table = readme_table(os.path.join(models_dir, "README.md"))
chk.check(sorted(table) == sorted(ZOO), f"README.md lists {sorted(table)}, expected {sorted(ZOO)}")
files = sorted(f[:-len(".safetensors")] for f in os.listdir(models_dir) if f.endswith(".safetensors"))
chk.check(files == sorted(ZOO), f"models/ holds {files}, expected {sorted(ZOO)}")

measured = {}
for name in files:
    p = ncpy.run(["eval", "--model", os.path.join(models_dir, name + ".safetensors"), "-n", "10000", "--backend",
                  backend, "--json"])
    j = json.loads(p.stdout)
    chk.check(j["model"] == name, f"{name}.safetensors names its model {j['model']!r}")
    got = f"{j['correctness']:.4f}"
    measured[name] = j["correctness"]
    listed = table.get(name, {}).get("N = 10000")
    chk.check(got == listed, f"{name}: correctness {got} at N = 10000 ({backend}), README.md says {listed}")
    print(f"{name}: {got} ({backend}), README.md {listed}")

if "fashion-2017-high" in measured:
    chk.check(measured["fashion-2017-high"] >= 0.90, f"fashion-2017-high {measured['fashion-2017-high']} < 0.90")
if "fashion-2017-low" in measured:
    chk.check(0.55 <= measured["fashion-2017-low"] <= 0.70,
              f"fashion-2017-low {measured['fashion-2017-low']} outside [0.55, 0.70]")

chk.finish()
