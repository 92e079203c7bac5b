// Compiles octo_test_main's precompiled header: CMake only emits the PCH build rule for a target that
// has at least one source using it, and doctest_main.cpp must skip it. Tests REUSE_FROM that PCH.
