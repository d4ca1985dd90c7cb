#!/usr/bin/env bash
# Packs what a GPU machine needs into one folder that the `run` tool can carry (64 MiB at most): a
# -DBUILD_SHARED_LIBS=ON build's libnanoconv.so (stripped, xz or gzip), nanoconv and the GPU test binaries (stripped),
# the cJSON library the machine lacks, and the Fashion-MNIST test split. tools/bundle.sh unpacks it there.
#   tools/make_bundle.sh BUILD_DIR OUT_DIR [LIB_DIR] [DATA_DIR]
# LIB_DIR holds libcjson.so.1* (default .carry/lib), DATA_DIR the t10k .gz files (default .carry/data).
# Where the tree and the bundle outgrow the 64 MiB, build BUILD_DIR with -DCMAKE_CUDA_ARCHITECTURES=90-real: the same
# sm_90 machine code without the PTX, whose library is about 4 MB smaller (7.2 MB xz against 11.2, 2026-11-25), and
# with -DCMAKE_CUDA_FLAGS=-no-compress: xz packs the fatbinary's machine code better than nvcc's own compression does
# (5.2 MB against 8.9, 2026-11-27).
set -eu
B=$1 D=$2 L=${3:-.carry/lib} DATA=${4:-.carry/data}
[ -f "$B/libnanoconv.so" ] || {
    echo "make_bundle: $B/libnanoconv.so not found (configure with -DBUILD_SHARED_LIBS=ON)" >&2
    exit 1
}
rm -rf "$D" && mkdir -p "$D/lib" "$D/data"
# xz where it is installed (the library and the images take 1.8 and 0.6 MB less than gzipped: the tree and a bundle
# are near the 64 MiB a call carries); tools/bundle.sh unpacks .xz with Python's lzma, where xz may be missing.
strip -o "$D/libnanoconv.so" "$B/libnanoconv.so"
if command -v xz >/dev/null; then xz -9e "$D/libnanoconv.so"; else gzip -9 "$D/libnanoconv.so"; fi
strip -o "$D/nanoconv" "$B/nanoconv"
for t in "$B"/tests/test_conv_ladder "$B"/tests/test_conv_tc "$B"/tests/test_dense_tc "$B"/tests/test_dense_i8 \
    "$B"/tests/test_gpu_layers; do
    [ -x "$t" ] && strip -o "$D/$(basename "$t")" "$t"
done
cp -a "$L"/libcjson.so.1* "$D/lib/"
for f in "$DATA"/t10k-*.gz; do
    if command -v xz >/dev/null; then gunzip -c "$f" | xz -9e >"$D/data/$(basename "$f" .gz).xz"; else cp "$f" "$D/data/"; fi
done
du -sh "$D"
