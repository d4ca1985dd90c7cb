# Sourced by tools/gpu_suite.sh and bench/gpu_session.sh: a bundle folder D (binaries, plain, gzipped or xz; from a
# -DBUILD_SHARED_LIBS=ON build, libnanoconv.so among them; shared libraries the GPU machine lacks in D/lib; the
# Fashion-MNIST .gz files in D/data, or the idx files packed by xz) made ready to run.
#   nc_unpack_bundle D    binaries into BIN=/tmp/nc-bin (gunzipped, executable); exports LD_LIBRARY_PATH
#                         (BIN, then D/lib) and NANOCONV_DATA=D/data
# SRC (.xz) into DST, gzipped again where DST ends in .gz: by Python's lzma, as the machine may lack xz.
nc_unxz() {
    python3 - "$1" "$2" <<'PY'
import gzip, lzma, shutil, sys
src, dst = sys.argv[1], sys.argv[2]
with lzma.open(src) as i, (gzip.open(dst, "wb", compresslevel=1) if dst.endswith(".gz") else open(dst, "wb")) as o:
    shutil.copyfileobj(i, o)
PY
}
nc_unpack_bundle() {
    local d=$1 f
    BIN=/tmp/nc-bin
    mkdir -p $BIN
    for f in "$d"/*; do
        case $f in
        *.gz) gunzip -c "$f" >"$BIN/$(basename "$f" .gz)" && chmod +x "$BIN/$(basename "$f" .gz)" ;;
        *.xz) nc_unxz "$f" "$BIN/$(basename "$f" .xz)" && chmod +x "$BIN/$(basename "$f" .xz)" ;;
        *) [ -f "$f" ] && cp "$f" $BIN/ ;;
        esac
    done
    # The images as the data loader names them (an idx file packed by xz, gzipped again here).
    for f in "$d"/data/*.xz; do
        [ -f "$f" ] && { nc_unxz "$f" "${f%.xz}.gz" && rm -f "$f"; }
    done
    export LD_LIBRARY_PATH=$BIN:$PWD/$d/lib:${LD_LIBRARY_PATH:-} NANOCONV_DATA=$PWD/$d/data
}
