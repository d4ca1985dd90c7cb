"""Oracle test: nc_resize_u8 against scikit-image, bit for bit.

The course made its larger inputs with
    (skimage.transform.resize(img / 256.0, (S, S), mode='constant', cval=0) * 256).astype(np.uint8)
and nanoconv must reproduce every byte. This runs tests/tools/nc_resize_dump over all 10000
Fashion-MNIST test images at each of the course's sizes and over synthetic images whose
minimum is above 0 (where skimage's clip to the input's range lifts the border), and compares
with scikit-image itself.

Environment: NC_TOOLS_DIR (the folder holding nc_resize_dump), NANOCONV_DATA (optional, the
Fashion-MNIST directory; default /usr/share/datasets/fashion-mnist). Exit 0 if all equal, 1 on
any mismatch or tool failure, 77 (skip) where scikit-image or the data is missing.
"""
import os
import struct
import subprocess
import sys
import tempfile
import time

SIZES = (48, 64, 70, 72, 86)
SKIP = 77


def skip(why):
    print(f"test_resize: SKIP: {why}")
    sys.exit(SKIP)


try:
    import numpy as np
    import skimage
    from skimage.transform import resize
except ImportError as e:
    skip(f"scikit-image or numpy is not importable by {sys.executable} ({e}); "
         "install python3-skimage or run with Debian's /usr/bin/python3")


def find_file(folder, stem):
    """The .gz file if there, else the raw one, else None."""
    for name in (stem + ".gz", stem):
        path = os.path.join(folder, name)
        if os.path.exists(path):
            return path
    return None


def read_idx_images(path):
    """(n, h, w) uint8 from an IDX images file, raw or gzip; used only to feed skimage."""
    import gzip
    with open(path, "rb") as f:
        head = f.read(2)
    opener = gzip.open if head == b"\x1f\x8b" else open
    with opener(path, "rb") as f:
        data = f.read()
    magic, n, h, w = struct.unpack(">IIII", data[:16])
    assert magic in (0x803, 0), f"{path}: unexpected magic {magic:#010x}"
    return np.frombuffer(data, np.uint8, offset=16).reshape(n, h, w)


def write_idx(path, array, magic):
    """Writes (n, h, w) images or (n) labels as raw IDX with the given magic number."""
    with open(path, "wb") as f:
        f.write(struct.pack(">I", magic))
        f.write(struct.pack(">" + "I" * array.ndim, *array.shape))
        f.write(np.ascontiguousarray(array, dtype=np.uint8).tobytes())


def skimage_resize_all(images, S):
    """(n, S, S) uint8: the course's expression, one image at a time, as the course did."""
    out = np.empty((len(images), S, S), np.uint8)
    for i, img in enumerate(images):
        out[i] = (resize(img / 256.0, (S, S), mode="constant", cval=0) * 256).astype(np.uint8)
    return out


def run_tool(tool, images_path, labels_path, S, n, workdir):
    """(n, S, S) uint8 from nc_resize_dump, or None after printing why it failed."""
    out_path = os.path.join(workdir, f"resized_{S}.bin")
    proc = subprocess.run([tool, images_path, labels_path, str(S), out_path], capture_output=True, text=True)
    if proc.returncode != 0:
        print(f"FAIL: nc_resize_dump exited {proc.returncode} for S={S}: {proc.stderr.strip()}")
        return None
    data = np.fromfile(out_path, np.uint8)
    os.remove(out_path)
    if data.size != n * S * S:
        print(f"FAIL: nc_resize_dump wrote {data.size} bytes for S={S}, expected {n}*{S}*{S} = {n * S * S}")
        return None
    return data.reshape(n, S, S)


def compare(label, ours, ref):
    """Prints the mismatch count and the first mismatch; returns the number of mismatching images."""
    diff = ours != ref
    bad = np.flatnonzero(diff.reshape(len(ref), -1).any(axis=1))
    if len(bad) == 0:
        print(f"{label}: 0 of {len(ref)} images differ")
        return 0
    i = int(bad[0])
    y, x = (int(v) for v in np.argwhere(diff[i])[0])
    print(f"{label}: {len(bad)} of {len(ref)} images differ ({int(diff.sum())} pixels); first: image {i} "
          f"at (y={y}, x={x}): ours {int(ours[i, y, x])}, skimage {int(ref[i, y, x])}")
    return len(bad)


def main():
    tools_dir = os.environ.get("NC_TOOLS_DIR")
    if not tools_dir:
        print("FAIL: NC_TOOLS_DIR is not set (ctest sets it to the folder holding nc_resize_dump)")
        return 1
    tool = os.path.join(tools_dir, "nc_resize_dump")
    if not os.access(tool, os.X_OK):
        print(f"FAIL: {tool} is missing or not executable; build the nc_resize_dump target")
        return 1
    data_dir = os.environ.get("NANOCONV_DATA") or "/usr/share/datasets/fashion-mnist"
    images_path = find_file(data_dir, "t10k-images-idx3-ubyte")
    labels_path = find_file(data_dir, "t10k-labels-idx1-ubyte")
    if not images_path or not labels_path:
        skip(f"no Fashion-MNIST t10k files in {data_dir}; apt-get install dataset-fashion-mnist or set NANOCONV_DATA")

    print(f"test_resize: scikit-image {skimage.__version__}, numpy {np.__version__}, data {data_dir}")
    t_start = time.time()
    failures = 0
    images = read_idx_images(images_path)
    n = len(images)
    with tempfile.TemporaryDirectory(prefix="nc_test_resize_") as workdir:
        for S in SIZES:
            t0 = time.time()
            ours = run_tool(tool, images_path, labels_path, S, n, workdir)
            t1 = time.time()
            ref = skimage_resize_all(images, S)
            t2 = time.time()
            if ours is None:
                failures += 1
                continue
            failures += compare(f"t10k S={S} (nanoconv {t1 - t0:.2f} s, skimage {t2 - t1:.2f} s)", ours, ref)

        # Images whose minimum is above 0: skimage clips to [min, max] of each image, which lifts
        # the border (where taps fall outside the image and weigh in zeros) up to the minimum.
        # Random images over varied minima, flat images, real images with their background raised,
        # and a 0/255 checkerboard, written in the course's magic-0 IDX variant.
        rng = np.random.default_rng(20240601)
        synth = []
        for lo in (1, 2, 7, 64, 128, 200, 254, 255):
            synth.append(rng.integers(lo, 256, size=(28, 28), dtype=np.uint8))
            synth.append(np.full((28, 28), lo, np.uint8))
        for lo in (1, 30, 100):
            synth.extend(np.clip(images[:40], lo, 255))
        synth.append(np.indices((28, 28)).sum(axis=0) % 2 * 255)
        synth = np.stack(synth).astype(np.uint8)
        synth_images = os.path.join(workdir, "synth-images-idx3-ubyte")
        synth_labels = os.path.join(workdir, "synth-labels-idx1-ubyte")
        write_idx(synth_images, synth, 0)
        write_idx(synth_labels, np.zeros(len(synth), np.uint8), 0)
        for S in SIZES + (28, 29, 56, 100):
            ours = run_tool(tool, synth_images, synth_labels, S, len(synth), workdir)
            if ours is None:
                failures += 1
                continue
            failures += compare(f"synthetic min>0 S={S}", ours, skimage_resize_all(synth, S))

        # Non-square inputs: each axis has its own zoom factor.
        rect = rng.integers(0, 256, size=(50, 20, 33), dtype=np.uint8)
        rect_images = os.path.join(workdir, "rect-images-idx3-ubyte")
        write_idx(rect_images, rect, 0x803)
        write_idx(synth_labels, np.zeros(len(rect), np.uint8), 0x801)
        for S in (33, 40, 64, 99):
            ours = run_tool(tool, rect_images, synth_labels, S, len(rect), workdir)
            if ours is None:
                failures += 1
                continue
            failures += compare(f"synthetic 20x33 S={S}", ours, skimage_resize_all(rect, S))

    print(f"test_resize: {'FAILED' if failures else 'passed'} in {time.time() - t_start:.1f} s")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
