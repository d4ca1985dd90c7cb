# Sourced by tools/gpu_suite.sh and bench/gpu_session.sh: a bundle folder D (binaries, plain or gzipped; from a
# -DBUILD_SHARED_LIBS=ON build, libnanoconv.so among them; shared libraries the GPU machine lacks in D/lib; the
# Fashion-MNIST .gz files in D/data) made ready to run.
#   nc_unpack_bundle D    binaries into BIN=/tmp/nc-bin (gunzipped, executable); exports LD_LIBRARY_PATH
#                         (BIN, then D/lib) and NANOCONV_DATA=D/data
nc_unpack_bundle() {
    local d=$1 f
    BIN=/tmp/nc-bin
    mkdir -p $BIN
    for f in "$d"/*; do
        case $f in
        *.gz) gunzip -c "$f" >"$BIN/$(basename "$f" .gz)" && chmod +x "$BIN/$(basename "$f" .gz)" ;;
        *) [ -f "$f" ] && cp "$f" $BIN/ ;;
        esac
    done
    export LD_LIBRARY_PATH=$BIN:$PWD/$d/lib:${LD_LIBRARY_PATH:-} NANOCONV_DATA=$PWD/$d/data
}
