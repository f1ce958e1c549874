"""mpsgen's model of Metal on Linux: one C++ toolchain and compile cache (`toolchain`), the compile
gate run before anything is written (`gate`), and `try` for functors, custom kernels and
reductions. Imports the layers below only."""
