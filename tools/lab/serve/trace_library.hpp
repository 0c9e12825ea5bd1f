#pragma once
// The trace player's library: the traces it offers (the embedded OpenTTD trace, synthetic
// workloads, files named with `strata-lab serve --trace`) and the cache of prepared players shared
// by every session, least recently used out. Exports: trace_source, register_traces,
// trace_sources, player_cache.
#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "trace_player.hpp"

namespace strata::lab::serve {

/// A trace the player can load.
struct trace_source {
    std::string name;        ///< what the API and the page call it
    std::string description; ///< one line for the page
    std::string path;        ///< a recorded trace file; empty for the built-in ones
};

/// Effects: adds the recorded traces at `paths` to trace_sources(), each named by its file name
/// (a number appended when two share one). Call before serving. Throws: std::invalid_argument
/// naming a path that cannot be opened.
void register_traces(const std::vector<std::string>& paths);

/// Returns: every trace the player offers: "openttd" (when built with trace support), the
/// synthetic workloads, then the registered files.
[[nodiscard]] std::vector<trace_source> trace_sources();

/// Prepared players, shared by every session: at most max_players finished ones kept (each at most
/// about 64 MB, trace_player's bounds), the least recently used dropped when another finishes; its
/// memory goes back to the OS once no request reads it any more. Entries queued or being prepared
/// are never dropped (one per trace and heap at most). Players are prepared one at a time on the
/// cache's own thread; a pair asked for by several sessions at once is prepared once.
class player_cache {
public:
    static constexpr std::size_t max_players = 3;

    /// Where a (trace, heap) pair stands.
    struct status {
        std::shared_ptr<const trace_player> player; ///< set when ready
        bool preparing = false;                     ///< queued or being prepared
        double progress = 0;                        ///< of the replay, in [0, 1]
        std::string phase;                          ///< "queued", "loading", "replaying"
        std::string error;                          ///< why preparing failed (then no player)
    };

    /// Returns: the cache every session shares.
    static player_cache& shared();

    /// Effects: an empty cache; its thread starts with the first request.
    player_cache() = default;
    /// Effects: cancels the preparation in flight and joins the thread.
    ~player_cache();
    player_cache(const player_cache&) = delete;
    player_cache& operator=(const player_cache&) = delete;

    /// Returns: the status of `source` played into `heap`; starts preparing it when the cache has
    /// neither it nor a failure for it. Marks it most recently used.
    status get(const trace_source& source, player_heap heap);

    /// Returns: bytes of every player held.
    [[nodiscard]] std::size_t bytes();
    /// Returns: the players held (ready ones).
    [[nodiscard]] std::size_t players();
    /// Returns: the preparations finished so far (ready, failed or cancelled), evicted ones included.
    [[nodiscard]] std::size_t prepared();

private:
    struct entry {
        std::string key;
        trace_source source;
        player_heap heap = player_heap::tlsf;
        std::shared_ptr<const trace_player> player;
        std::string error;
        std::string phase = "queued";
        std::atomic<double> progress{0};
        bool done = false;
    };
    void work();
    std::vector<std::shared_ptr<entry>> evict_locked();

    std::mutex mutex_;
    std::condition_variable wake_;
    std::list<std::shared_ptr<entry>> entries_; ///< most recently used first
    std::deque<std::shared_ptr<entry>> queue_;
    std::shared_ptr<entry> running_;
    std::atomic<bool> cancel_{false};
    bool stop_ = false;
    std::size_t prepared_ = 0;
    std::thread thread_;
};

} // namespace strata::lab::serve
