"""Train a small convolutional network twice — with PyTorch's LeakyReLU/PReLU
and with leakyops' drop-ins — from the same initial weights, and print the
losses side by side.

The data set is synthetic (no download): 12x12 grey images with a bright
square in one of the four quadrants; the label is the quadrant.

    python examples/torch/train_convnet.py [--steps 30] [--dtype float32]
                                           [--channels-last] [--compile]

The LeakyReLU layers are bit-identical to PyTorch's, forward and backward.
PReLU's weight gradient is a sum over each channel taken in another
(thread-count independent) order than PyTorch's, so the two runs may drift
apart by a few units in the last place of float32.
"""

import argparse
import copy

import torch
from torch import nn

import leakyops.torch as lt


def make_model(leaky_relu=nn.LeakyReLU, prelu=nn.PReLU):
    """Conv -> LeakyReLU (in place) -> Conv -> PReLU per channel -> ... -> 4 classes."""
    return nn.Sequential(
        nn.Conv2d(1, 8, 3, padding=1),
        leaky_relu(0.1, inplace=True),
        nn.Conv2d(8, 16, 3, stride=2),
        prelu(16),
        nn.Conv2d(16, 16, 3),
        leaky_relu(0.2),
        nn.AdaptiveAvgPool2d(1),
        nn.Flatten(),
        nn.Linear(16, 4),
    )


def swap_activations(model):
    """Replace every torch LeakyReLU/PReLU by leakyops' (keeping their weights)."""
    for name, child in model.named_children():
        if type(child) is nn.LeakyReLU:
            setattr(model, name, lt.LeakyReLU(child.negative_slope, child.inplace))
        elif type(child) is nn.PReLU:
            new = lt.PReLU(child.num_parameters, child.init)
            new.load_state_dict(child.state_dict())
            setattr(model, name, new)
        else:
            swap_activations(child)
    return model


def batches(steps, batch=32, size=12, seed=0):
    g = torch.Generator().manual_seed(seed)
    half = size // 2
    for _ in range(steps):
        labels = torch.randint(0, 4, (batch,), generator=g)
        images = torch.randn(batch, 1, size, size, generator=g) * 0.3
        for i, label in enumerate(labels.tolist()):
            r, c = divmod(label, 2)
            images[i, 0, r * half + 1:r * half + 5, c * half + 1:c * half + 5] += 1.5
        yield images, labels


def train(model, steps, dtype, channels_last, compile_model):
    fmt = torch.channels_last if channels_last else torch.contiguous_format
    model = model.to(dtype=dtype, memory_format=fmt)
    forward = torch.compile(model, fullgraph=True) if compile_model else model
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    losses = []
    for images, labels in batches(steps):
        images = images.to(dtype=dtype, memory_format=fmt)
        optimizer.zero_grad()
        loss = nn.functional.cross_entropy(forward(images), labels)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--dtype", default="float32", choices=["float32", "float64", "bfloat16"])
    parser.add_argument("--channels-last", action="store_true")
    parser.add_argument("--compile", action="store_true", help="torch.compile(fullgraph=True)")
    args = parser.parse_args(argv)
    dtype = getattr(torch, args.dtype)

    torch.manual_seed(0)
    reference = make_model()
    ours = swap_activations(copy.deepcopy(reference))  # the same initial weights
    print(ours)

    ref_losses = train(reference, args.steps, dtype, args.channels_last, args.compile)
    our_losses = train(ours, args.steps, dtype, args.channels_last, args.compile)

    print(f"{'step':>4}  {'torch loss':>12}  {'leakyops loss':>13}  {'|diff|':>9}")
    for step, (a, b) in enumerate(zip(ref_losses, our_losses)):
        print(f"{step:>4}  {a:>12.7f}  {b:>13.7f}  {abs(a - b):>9.2e}")
    worst = max(abs(a - b) for a, b in zip(ref_losses, our_losses))
    print(f"largest difference: {worst:.3g}; loss {our_losses[0]:.4f} -> {our_losses[-1]:.4f}")
    return ref_losses, our_losses


if __name__ == "__main__":
    main()
