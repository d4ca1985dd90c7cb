#!/usr/bin/env bash
# Side by side runs of variants of the exact direct kernels (versions 5 and 6: src/cuda/conv_direct.cu and
# src/cuda/conv_directc.cu), host half: builds the harness and one library a variant into a bundle that bench/ab/run.sh
# runs on a GPU machine.
#   tools/make_bundle.sh build-shared .c2               (the bundle: the library and binaries of a shared build)
#   bench/ab/build.sh build-shared .c2 base=src/cuda v1=/tmp/v1 ...
# NAME=DIR compiles those of DIR/conv_direct.cu, DIR/conv_directc.cu, DIR/conv_wino.cu (version 15, which conv_one
# calls with NC_AB_ROWS=3) and DIR/conv_tc.cu (versions 7-10: no conv_one mode; time them by `nanoconv bench --shape
# ... --versions 7,9,10` with LD_PRELOAD=NAME.so and without) that DIR has, alone, into .c2/v/NAME.so.xz,
# which run.sh preloads over libnanoconv.so: its launchers take the calls, and the rest (the other file's launchers
# among them) stays the library's. Machine code for ARCH only, no PTX: a variant runs on the GPU it was built for, and
# is half the size (a call carries at most 64 MiB, the tree included). KS="5 7" builds the kernels of those K only
# (a variant about 40% smaller; a layer of another K then fails), by removing the other cases of the two files'
# switches over K (`case N: return direct_pick<N>...`, `case N: return conv_directc_kernel<N, ...`) from copies of
# them, and nothing else: a pattern as loose as any line `case N:` also takes the switches over channels a thread
# (2026-11-25: version 6's 6-channel kernel went, so that M = 6 and 12 layers ran the 4-channel one or faulted). The
# harness, bench/ab/conv_one.c (the build's conv_one target), goes to .c2/conv_one.
set -eu
BUILD=$1 D=$2
shift 2
NVCC=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
ARCH=${ARCH:-sm_90}
[ -f "$BUILD/libnanoconv.so" ] || {
    echo "bench/ab/build.sh: $BUILD/libnanoconv.so not found (a -DBUILD_SHARED_LIBS=ON build)" >&2
    exit 1
}
[ -d "$D" ] || {
    echo "bench/ab/build.sh: no bundle at $D (tools/make_bundle.sh $BUILD $D)" >&2
    exit 1
}
[ -x "$BUILD/conv_one" ] || {
    echo "bench/ab/build.sh: $BUILD/conv_one not found (a build with CUDA: cmake --build $BUILD --target conv_one)" >&2
    exit 1
}
strip -o "$D/conv_one" "$BUILD/conv_one"
mkdir -p "$D/v"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# The K of KS's complement, as an alternation for sed -E (empty: every K).
drop=
if [ -n "${KS:-}" ]; then
    for k in 3 4 5 6 7; do
        case " $KS " in *" $k "*) ;; *) drop=${drop:+$drop|}$k ;; esac
    done
fi
for nv in "$@"; do
    name=${nv%%=*} dir=${nv#*=}
    srcs=()
    for f in conv_direct.cu conv_directc.cu conv_wino.cu conv_tc.cu; do
        [ -f "$dir/$f" ] || continue
        if [ -n "$drop" ] && [ "$f" != conv_wino.cu ] && [ "$f" != conv_tc.cu ]; then
            mkdir -p "$tmp/src-$name"
            sed -E "/^ *case ($drop): return (direct_pick<|conv_directc_kernel<)/d" "$dir/$f" >"$tmp/src-$name/$f"
            n=$(($(wc -l <"$dir/$f") - $(wc -l <"$tmp/src-$name/$f")))
            want=$(($(echo "$drop" | tr '|' '\n' | wc -l)))
            [ "$n" = "$want" ] || {
                echo "bench/ab/build.sh: KS: $dir/$f lost $n lines, not the $want cases of K = $drop" >&2
                exit 1
            }
            srcs+=("$tmp/src-$name/$f")
        else
            srcs+=("$dir/$f")
        fi
    done
    [ ${#srcs[@]} -gt 0 ] || {
        echo "bench/ab/build.sh: $dir has none of conv_direct.cu, conv_directc.cu, conv_wino.cu and conv_tc.cu" >&2
        exit 1
    }
    # -I "$dir" first, so that a variant may carry its own headers too.
    "$NVCC" -O3 -std=c++17 -gencode "arch=compute_${ARCH#sm_},code=$ARCH" -lineinfo -shared -cudart shared \
        -Xcompiler=-fPIC -I "$dir" -I src -I include -o "$tmp/$name.so" "${srcs[@]}"
    strip -o "$D/v/$name.so" "$tmp/$name.so"
    rm -f "$D/v/$name.so.xz"
    xz -9e "$D/v/$name.so"
    echo "$name: ${srcs[*]} -> $D/v/$name.so.xz"
done
