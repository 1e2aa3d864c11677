#pragma once
/// @file host_parallel.hpp
/// at::parallel_for / at::parallel_reduce for nnvmc's host loops. ATen's OpenMP backend is inline
/// in its headers, so a translation unit compiled without OpenMP runs them on the calling thread
/// only, however many threads torch has. Include this instead of <ATen/Parallel.h> and list the
/// source in nnvmc_openmp_sources (cmake/NnvmcHelpers.cmake); without it the source does not
/// compile, rather than running serially unnoticed.
#include <ATen/Parallel.h>

#if AT_PARALLEL_OPENMP && !defined(_OPENMP)
#error "at::parallel_for would run on one thread here: add this source to nnvmc_openmp_sources (cmake/NnvmcHelpers.cmake)"
#endif
