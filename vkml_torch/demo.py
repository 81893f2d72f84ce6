"""Train a small MLP on scikit-learn's 8x8 digits on the best device:  python -m vkml_torch.demo

Plain PyTorch code (nn.Linear, ReLU, CrossEntropyLoss, SGD); the only vkml-specific lines pick the
device and print the counters. Exits 1 if test accuracy is below 0.9. Needs only torch: without
scikit-learn (`pip install vkml-torch[demo]` brings it) it trains on 10 synthetic Gaussian clusters.
"""
import sys
import time

import torch
from torch import nn

import vkml_torch

EPOCHS = 10
BATCH = 64
LR = 0.1
MIN_ACCURACY = 0.9


def load_split(seed=0, test_fraction=0.2):
    """((x_train, y_train), (x_test, y_test), name): 1797 samples of 64 features in 10 classes,
    shuffled once with a fixed seed; the last 20% are the test set. Standardised with the training
    set's mean and std. scikit-learn's 8x8 digits when it is installed, else synthetic clusters."""
    g = torch.Generator().manual_seed(seed)
    try:
        from sklearn.datasets import load_digits  # ships inside scikit-learn: no download
    except ImportError:
        y = torch.arange(1797) % 10
        centers = torch.randn(10, 64, generator=g)
        x = centers[y] + 1.5 * torch.randn(len(y), 64, generator=g)
        name = "synthetic clusters (scikit-learn is not installed)"
    else:
        xs, ys = load_digits(return_X_y=True)
        x, y = torch.tensor(xs, dtype=torch.float32), torch.tensor(ys, dtype=torch.int64)
        name = "digits"
    order = torch.randperm(len(x), generator=g)
    x, y = x[order], y[order]
    n_test = int(round(len(x) * test_fraction))
    x_train, y_train, x_test, y_test = x[:-n_test], y[:-n_test], x[-n_test:], y[-n_test:]
    mean, std = x_train.mean(0), x_train.std(0, correction=0) + 1e-6
    return ((x_train - mean) / std, y_train), ((x_test - mean) / std, y_test), name


def bar(done, total, width=30):
    filled = int(width * done / total)
    return "[" + "#" * filled + "." * (width - filled) + "]"


def main():
    device, line = vkml_torch.best_device()
    print(line)
    (x_train, y_train), (x_test, y_test), name = load_split()
    print(f"{name}: {len(x_train)} train, {len(x_test)} test, 64 features, 10 classes")

    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10)).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=LR)
    loss_fn = nn.CrossEntropyLoss()
    xt, yt = x_test.to(device), y_test.to(device)
    rng = torch.Generator().manual_seed(0)
    n_batches = (len(x_train) + BATCH - 1) // BATCH
    tty = sys.stdout.isatty()
    start = time.perf_counter()

    for epoch in range(1, EPOCHS + 1):
        # Shuffle on the host and upload the epoch once; minibatches are then slices (views).
        order = torch.randperm(len(x_train), generator=rng)
        xe = x_train[order].to(device)
        ye = y_train[order].to(device)
        total = torch.zeros((), device=device)
        for b in range(n_batches):
            xb, yb = xe[b * BATCH:(b + 1) * BATCH], ye[b * BATCH:(b + 1) * BATCH]
            loss = loss_fn(model(xb), yb)
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += loss.detach()  # stays on the device: no sync inside the epoch
            if tty:
                print(f"\repoch {epoch:2d}/{EPOCHS} {bar(b + 1, n_batches)}", end="", flush=True)
        mean_loss = total.item() / n_batches  # the one read-back per epoch
        text = f"epoch {epoch:2d}/{EPOCHS} {bar(n_batches, n_batches)} loss {mean_loss:.4f}"
        print(("\r" + text) if tty else text, flush=True)

    with torch.no_grad():
        correct = (model(xt).argmax(dim=1) == yt).sum().item()
    accuracy = correct / len(y_test)
    elapsed = time.perf_counter() - start
    print(f"test accuracy: {accuracy:.4f} ({correct}/{len(y_test)}) after {EPOCHS} epochs, "
          f"{elapsed:.1f} s on {device}")
    if device.type == "vkml":
        s = vkml_torch.stats()
        print(f"vkml: {s['nodes']} ops recorded, {s['dispatches']} GPU dispatches in "
              f"{s['submits']} submits ({s['flushes']} flushes)")
    if accuracy < MIN_ACCURACY:
        print(f"FAIL: accuracy {accuracy:.4f} is below {MIN_ACCURACY}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
