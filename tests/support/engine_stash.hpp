#pragma once
// Engine heap test helper: turns the calling thread's stash on.
//
// Exports (strata::test): turn_stash_on.
#include <thread>
#include <vector>

#include "strata/engine/engine_heap.hpp"

namespace strata::test {

/// Effects: another thread allocates 512 blocks of 16 bytes and exits; the calling thread frees
/// them all, and its stash turns on (the second window of 256 remote frees has no free of its
/// own). The stash takes only the classes the thread has a run of: allocate one first.
inline void turn_stash_on(engine_heap& h) {
    std::vector<void*> theirs;
    std::thread([&] {
        for (int i = 0; i < 512; ++i)
            theirs.push_back(h.allocate(16));
    }).join();
    for (void* p : theirs)
        h.deallocate(p);
}

} // namespace strata::test
