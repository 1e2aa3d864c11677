# Batching-layer and CCSD benchmarks (included by bench/CMakeLists.txt).
add_executable(batching_ladder ${CMAKE_CURRENT_LIST_DIR}/batching_ladder.cpp)
target_link_libraries(batching_ladder PRIVATE nnvmc::batching nnvmc_warnings)
_nnvmc_use_torch(batching_ladder)
add_executable(staged_plan_bytes ${CMAKE_CURRENT_LIST_DIR}/staged_plan_bytes.cpp)
target_link_libraries(staged_plan_bytes PRIVATE nnvmc::batching nnvmc_warnings)
_nnvmc_use_torch(staged_plan_bytes)
