#pragma once
// Kept for tests outside the heap family that include it by this path: the helpers live in
// tests/support (heap_model.hpp: heap_buffer, heap_model; test_rng.hpp: test_rng, long_run_ops).
#include "support/heap_model.hpp"
#include "support/test_rng.hpp"
