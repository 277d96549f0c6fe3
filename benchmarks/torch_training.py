"""Training steps of two real CNNs with torch.nn's activations and with leakyops.torch's.

    python benchmarks/torch_training.py                   # both models, float32 and bfloat16
    python benchmarks/torch_training.py --steps 30 --batch 32 --json training.json

The models (issue 28's target 5):

- ``gan-discriminator``: DCGAN's discriminator on 64x64 RGB images (Conv 4x4 stride 2,
  in-place ``LeakyReLU(0.2)`` after every convolution, ``BatchNorm2d`` from the second one),
  trained on real/fake labels with ``BCEWithLogitsLoss``;
- ``prelu-cnn``: a small residual-free CNN on 32x32 RGB images, ``Conv-BatchNorm-PReLU(C)``
  blocks (one slope per channel), average pooling, a linear classifier, cross-entropy.

Each model is built once; the leakyops copy has the same weights (``swap_activations``), its
own optimiser (SGD with momentum) and sees the same batches. The two train in turns, step by
step, in this one process (PyTorch's threads present, as in a real program); the time of a
step is the forward, the backward and the optimiser step. Prints the median and the best step
of each, their ratio (> 1: leakyops is faster), and the largest difference of the losses step
by step: LeakyReLU is bit-identical to PyTorch's, forward and backward, so the discriminator's
losses are equal to the bit; PReLU's weight gradient is a sum taken in another order than
PyTorch's, so the CNN's losses may drift apart by a few units in the last place. Exit status 1
if the discriminator's losses differ at all.
"""

from __future__ import annotations

import argparse
import copy
import json
import statistics
import sys
import time

import torch
from torch import nn

import leakyops
import leakyops.torch as lt

MODELS = ("gan-discriminator", "prelu-cnn")
DTYPES = ("float32", "bfloat16")


def gan_discriminator(width: int = 64) -> nn.Module:
    """DCGAN's discriminator (Radford et al.) for 64x64 images, ``width`` features first."""
    w = width
    return nn.Sequential(
        nn.Conv2d(3, w, 4, 2, 1, bias=False), nn.LeakyReLU(0.2, inplace=True),
        nn.Conv2d(w, 2 * w, 4, 2, 1, bias=False), nn.BatchNorm2d(2 * w),
        nn.LeakyReLU(0.2, inplace=True),
        nn.Conv2d(2 * w, 4 * w, 4, 2, 1, bias=False), nn.BatchNorm2d(4 * w),
        nn.LeakyReLU(0.2, inplace=True),
        nn.Conv2d(4 * w, 8 * w, 4, 2, 1, bias=False), nn.BatchNorm2d(8 * w),
        nn.LeakyReLU(0.2, inplace=True),
        nn.Conv2d(8 * w, 1, 4, 1, 0, bias=False), nn.Flatten(),
    )


def prelu_cnn(width: int = 32, classes: int = 10) -> nn.Module:
    """Conv-BatchNorm-PReLU(C) blocks on 32x32 images, then a linear classifier."""
    def block(cin, cout, stride):
        return [nn.Conv2d(cin, cout, 3, stride, 1, bias=False), nn.BatchNorm2d(cout),
                nn.PReLU(cout)]
    w = width
    return nn.Sequential(*block(3, w, 1), *block(w, w, 1), *block(w, 2 * w, 2),
                         *block(2 * w, 2 * w, 1), *block(2 * w, 4 * w, 2),
                         nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(4 * w, classes))


def swap_activations(model: nn.Module) -> nn.Module:
    """Every torch.nn LeakyReLU/PReLU replaced by leakyops.torch's, with its settings and
    weights."""
    for name, child in model.named_children():
        if type(child) is nn.LeakyReLU:
            setattr(model, name, lt.LeakyReLU(child.negative_slope, child.inplace))
        elif type(child) is nn.PReLU:
            new = lt.PReLU(child.num_parameters).to(child.weight.dtype)
            new.load_state_dict(child.state_dict())
            setattr(model, name, new)
        else:
            swap_activations(child)
    return model


def batches(model: str, steps: int, batch: int, image: int, dtype, seed: int = 0):
    gen = torch.Generator().manual_seed(seed)
    for _ in range(steps):
        x = torch.randn(batch, 3, image, image, generator=gen).to(dtype)
        if model == "gan-discriminator":  # real (1) or fake (0)
            y = torch.randint(0, 2, (batch, 1), generator=gen).to(dtype)
        else:
            y = torch.randint(0, 10, (batch,), generator=gen)
        yield x, y


def make(model: str, width: int):
    torch.manual_seed(0)
    net = gan_discriminator(width) if model == "gan-discriminator" else prelu_cnn(width)
    loss = nn.BCEWithLogitsLoss() if model == "gan-discriminator" else nn.CrossEntropyLoss()
    return net, loss


def run(model: str, dtype, steps: int, batch: int, width: int):
    net, loss_fn = make(model, width)
    theirs = net.to(dtype)
    ours = swap_activations(copy.deepcopy(theirs))
    image = 64 if model == "gan-discriminator" else 32
    pairs = []
    for m in (theirs, ours):
        pairs.append((m, torch.optim.SGD(m.parameters(), lr=0.01, momentum=0.9)))
    times = ([], [])
    losses = ([], [])
    for x, y in batches(model, steps, batch, image, dtype):
        for k, (m, opt) in enumerate(pairs):
            t0 = time.perf_counter()
            opt.zero_grad(set_to_none=True)
            loss = loss_fn(m(x), y)
            loss.backward()
            opt.step()
            times[k].append(time.perf_counter() - t0)
            losses[k].append(loss.item())
    warm = times[0][1:] or times[0], times[1][1:] or times[1]  # (the first step: allocations)
    return {"model": model, "dtype": str(dtype).replace("torch.", ""), "steps": steps,
            "batch": batch,
            "torch": {"median": statistics.median(warm[0]), "best": min(warm[0])},
            "leakyops": {"median": statistics.median(warm[1]), "best": min(warm[1])},
            "losses": {"torch": losses[0], "leakyops": losses[1]},
            "largest_loss_difference": max(abs(a - b) for a, b in zip(*losses)),
            "modules_swapped": sum(type(c).__module__ == lt.__name__ for c in ours.modules())}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--steps", type=int, default=12, help="training steps of each (default 12)")
    ap.add_argument("--batch", type=int, default=16, help="images per step (default 16)")
    ap.add_argument("--width", type=int, default=None,
                    help="features of the first layer (default: 64 for the discriminator, "
                         "32 for the CNN)")
    ap.add_argument("--threads", type=int, default=None, help="threads for both (default: all)")
    ap.add_argument("--models", nargs="+", default=list(MODELS), choices=list(MODELS))
    ap.add_argument("--dtypes", nargs="+", default=list(DTYPES), choices=list(DTYPES))
    ap.add_argument("--json", help="also write the results as JSON")
    args = ap.parse_args(argv)
    if args.steps < 2 or args.batch < 2:
        ap.error("--steps and --batch must be at least 2 (BatchNorm needs two images)")
    threads = args.threads or leakyops.get_num_threads()
    torch.set_num_threads(threads)
    leakyops.set_num_threads(threads)
    print(f"torch {torch.__version__}, {threads} thread(s) each; ms per training step "
          f"(forward, backward, SGD step), {args.steps} steps in turns, batch {args.batch}")
    print(f"{'model':<18} {'dtype':<9} {'torch median':>12} {'leakyops median':>15} "
          f"{'x torch':>8} {'torch best':>10} {'leakyops best':>13} {'x torch':>8} "
          f"{'loss |diff|':>11}")
    rows = []
    for model in args.models:
        width = args.width or (64 if model == "gan-discriminator" else 32)
        for dname in args.dtypes:
            r = run(model, getattr(torch, dname), args.steps, args.batch, width)
            rows.append(r)
            tm, om = r["torch"]["median"], r["leakyops"]["median"]
            tb, ob = r["torch"]["best"], r["leakyops"]["best"]
            print(f"{model:<18} {dname:<9} {tm * 1e3:>12.2f} {om * 1e3:>15.2f} {tm / om:>8.2f} "
                  f"{tb * 1e3:>10.2f} {ob * 1e3:>13.2f} {tb / ob:>8.2f} "
                  f"{r['largest_loss_difference']:>11.3g}", flush=True)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"threads": threads, "torch": torch.__version__, "rows": rows}, fh, indent=1)
    exact = all(r["largest_loss_difference"] == 0 for r in rows if r["model"] == "gan-discriminator")
    if not exact:
        print("the discriminator's losses differ from torch.nn's", file=sys.stderr)
    return 0 if exact else 1


if __name__ == "__main__":
    sys.exit(main())
