"""The CPU reference against PyTorch, an independent oracle.

Random shapes (C > 1 through stacked convolutions, K in 3..7, several M and H),
random weights and images; every layer kind, alone and in whole networks. The
reference computes in float32 with float accumulation; PyTorch here computes in
float64, so the only differences are float32 rounding.

Tolerance, elementwise: |ours - torch| <= 1e-5 * S + 1e-4 * |torch|, where S is
the largest magnitude of any intermediate tensor of the network on that input.
A float32 sum of n terms has a relative error bound near n * 6e-8 of the
magnitudes summed; the largest sums here have a few thousand terms of mixed
sign, hence 1e-5 of the largest magnitude that flows through the network (raw
0..255 pixels make conv outputs in the hundreds, whose absolute rounding error
then passes through tanh near 0 undiminished).
"""
import os
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import ncpy  # noqa: E402

try:
    import numpy as np
    import torch
except ImportError as e:
    ncpy.skip(f"PyTorch or numpy missing ({e}); install python3-torch")

torch.set_default_dtype(torch.float64)
rng = np.random.default_rng(408)
chk = ncpy.Checker("test_torch_layers")


def torch_net(layers_text, in_shape):
    """The torch nn.Sequential for an architecture text, with random weights rounded to float32."""
    net = ncpy.torch_sequential(layers_text, in_shape)
    with torch.no_grad():
        for p in net.parameters():
            p.copy_(torch.from_numpy(rng.uniform(-1, 1, p.shape)) / np.sqrt(max(1, p[0].numel())))
            # Round to float32 so both sides use the same weights.
            p.copy_(p.float().double())
    return net


def case(name, layers_text, h, w, scaling="unit", n=40):
    with tempfile.TemporaryDirectory() as d:
        net = torch_net(layers_text, (1, h, w))
        tensors = {k: v.detach().numpy().astype(np.float32) for k, v in net.state_dict().items()}
        model = os.path.join(d, "m.safetensors")
        ncpy.write_safetensors(model, tensors, {"nanoconv.name": name, "nanoconv.input": f"1x{h}x{w} {scaling}",
                                                "nanoconv.layers": layers_text})
        images = rng.integers(0, 256, size=(n, h, w), dtype=np.uint8)
        ncpy.write_idx_images(os.path.join(d, "x.idx"), images)
        out = os.path.join(d, "logits.f32")
        p = ncpy.run(["predict", "--backend", "cpu-ref", "-m", model, "--images", os.path.join(d, "x.idx"),
                      "--logits", out])
        ours = np.fromfile(out, dtype=np.float32).reshape(n, -1).astype(np.float64)
        pred = np.array([int(x) for x in p.stdout.split()])

        x = torch.from_numpy(images.astype(np.float64)).reshape(n, 1, h, w)
        if scaling == "unit":
            x = x / 255.0
        elif scaling.startswith("norm"):
            _, mean, std = scaling.split()
            x = (x / 255.0 - float(mean)) / float(std)
        # The input the reference sees is float32: round it the same way.
        x = x.float().double()
        with torch.no_grad():
            scale, t = x.abs().max().item(), x
            for mod in net:
                t = mod(t)
                scale = max(scale, t.abs().max().item())
            ref = t.reshape(n, -1).numpy()
        err = np.abs(ours - ref)
        tol = 1e-5 * scale + 1e-4 * np.abs(ref)
        bad = int((err > tol).sum())
        chk.check(ours.shape == ref.shape, f"{name}: shape {ours.shape} vs torch {ref.shape}")
        chk.check(bad == 0, f"{name}: {bad} of {err.size} outputs out of tolerance, max error {err.max():.3g}")
        # Predictions agree wherever the top two torch outputs are not within rounding of each other.
        top2 = np.sort(ref, axis=1)[:, -2:]
        clear = (top2[:, 1] - top2[:, 0]) > 1e-4 * np.abs(top2[:, 1]) + 1e-6
        chk.check(np.array_equal(pred[clear], ref.argmax(axis=1)[clear]), f"{name}: predictions differ from torch")
        print(f"{name:14s} max|err| {err.max():.2e}  max|ref| {np.abs(ref).max():.2e}  S {scale:.2e}  {layers_text}")


# Single layers (flatten makes the output the layer's own), then stacks with C > 1, then whole networks.
case("conv", "conv 7 5 bias; flatten", 12, 12)
case("conv-nobias", "conv 4 3; flatten", 9, 11)
case("conv-k7", "conv 3 7; flatten", 16, 13, scaling="raw")
case("tanh", "conv 5 3; tanh; flatten", 10, 10, scaling="raw")
case("relu", "conv 5 3; relu; flatten", 10, 10)
case("sigmoid", "conv 5 3 bias; sigmoid; flatten", 10, 10)
case("maxpool", "conv 3 3; maxpool 2 2; flatten", 13, 13)
case("maxpool-3-1", "conv 3 3; maxpool 3 1; flatten", 12, 12)
case("avgpool", "conv 3 3; avgpool 2 2; flatten", 12, 12)
case("avgpool-4-4", "conv 3 3; avgpool 4 4; flatten", 18, 18)
case("dense", "flatten; dense 13 bias", 8, 8)
case("dense-nobias", "flatten; dense 7", 8, 8)
case("softmax", "flatten; dense 10 bias; softmax", 8, 8)
for i in range(6):
    c1, c2 = int(rng.integers(2, 9)), int(rng.integers(2, 17))
    k1, k2 = int(rng.integers(3, 8)), int(rng.integers(3, 8))
    h = int(rng.integers(k1 + k2 + 2, 30))
    b = " bias" if i % 2 else ""
    case(f"stack-{i}", f"conv {c1} {k1}{b}; tanh; conv {c2} {k2}{b}; relu; flatten", h, h,
         scaling="norm 0.2860 0.3530" if i == 3 else "unit")
case("net-2017", "conv 50 5; tanh; maxpool 2 2; flatten; dense 500 bias; tanh; dense 10 bias; softmax", 28, 28,
     scaling="raw", n=24)
case("net-2019", "conv 6 5; tanh; maxpool 2 2; conv 16 5; tanh; maxpool 2 2; flatten; dense 140 bias; tanh; "
     "dense 10 bias; softmax", 48, 48, scaling="raw", n=16)
case("net-2020", "conv 4 7; relu; maxpool 2 2; conv 16 7; relu; maxpool 4 4; flatten; dense 32 bias; relu; "
     "dense 10 bias; softmax", 86, 86, scaling="raw", n=8)
chk.finish()
