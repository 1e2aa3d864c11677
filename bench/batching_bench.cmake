# Batching-layer and CCSD benchmarks (included by bench/CMakeLists.txt).
add_executable(batching_ladder ${CMAKE_CURRENT_LIST_DIR}/batching_ladder.cpp)
target_link_libraries(batching_ladder PRIVATE nnvmc::batching nnvmc_warnings)
_nnvmc_use_torch(batching_ladder)
