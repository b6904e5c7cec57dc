"""SplitMix64's finaliser over a range of counters, as kernels/random.hpp's mix64: the values the
reference scripts and the C++ tests both derive their inputs from."""
import numpy as np


def mix64(first, count):
    """mix64(first + i) for i in [0, count), as uint64 (wrapping, as C++'s unsigned arithmetic)."""
    with np.errstate(over="ignore"):
        z = np.arange(count, dtype=np.uint64) + np.uint64(first) + np.uint64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))
