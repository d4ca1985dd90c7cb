#!/usr/bin/env bash
# `make run`: eval of the default model on the whole test set, on the GPU where
# there is one and nanoconv was built with CUDA, else on the fastest CPU backend.
set -euo pipefail
build=$1 model=$2 n=$3
bin=$build/nanoconv
backends=$("$bin" --version | sed -n 's/^backends: //p')
backend=cpu-ref
case " $backends " in *" cpu "*) backend=cpu ;; esac
if case " $backends " in *" cuda "*) true ;; *) false ;; esac && nvidia-smi -L >/dev/null 2>&1; then
  backend=cuda
fi
if [ ! -f "$model" ]; then
  # No trained model in the tree: evaluate one with fixed seeded weights, and say so.
  model=$build/seeded-2017.safetensors
  echo "note: no trained model at $2; evaluating an UNTRAINED model with fixed seeded weights ($model)"
  "$bin" init --name fashion-2017-seeded --input '1x28x28 raw' \
    --layers 'conv 50 5; tanh; maxpool 2 2; flatten; dense 500 bias; tanh; dense 10 bias; softmax' \
    --seed 2017 -o "$model"
fi
echo "+ $bin eval --model $model -n $n --backend $backend"
exec "$bin" eval --model "$model" -n "$n" --backend "$backend"
