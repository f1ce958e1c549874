"""mpsgen: write and check the boilerplate of Apple MPS (Metal) operators in a PyTorch checkout."""

__version__ = "0.1.0"
