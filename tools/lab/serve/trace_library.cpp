// The trace player's library: the trace catalog (built-in and registered files) and the shared,
// bounded cache of prepared players. Exports: register_traces, trace_sources, player_cache
// (trace_library.hpp).
#include "trace_library.hpp"

#include <malloc.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include "embedded.hpp"
#include "trace_workload.hpp"

namespace strata::lab::serve {

namespace {

std::mutex registry_mutex;
std::vector<trace_source>& registered() {
    static std::vector<trace_source> files;
    return files;
}

// The synthetic workloads offered, at scale 1 (ops.hpp gen::), with a line each.
struct synthetic_workload {
    const char* name;
    const char* description;
};
constexpr synthetic_workload synthetic[] = {
    {"bimodal", "synthetic: 90% of blocks die young, 10% live long; 16 B-1 KiB; ~10,000 ops"},
    {"frame_scratch", "synthetic: 300 frames of ~2,000 blocks (16 B-4 KiB), all freed at frame end"},
    {"levels", "synthetic: 3 levels of ~3,000 assets (64 B-1 MiB) loaded, played, unloaded at random"},
    {"particles", "synthetic: 20,000 live 96 B particles, ~1,000 die and are born per frame"},
    {"trickle", "synthetic: 24,576 live blocks churned by 600,000 free+allocate pairs, 1-8 MiB buffers"},
    {"xchurn32k", "synthetic: 4,096 live blocks, 10% of 32,769 B, 400,000 free+allocate pairs"},
};

// A recorded trace's first max_ops + 1 ops: decoding stops there, so a trace of any length loads
// in bounded time and memory, and the op past max_ops tells the player the trace was cut.
op_workload load_capped(trace_batches&& t) {
    std::vector<op> ops, batch;
    while (t.next(batch, std::size_t{1} << 16))
        ops.insert(ops.end(), batch.begin(), batch.end());
    op_workload w = t.shape();
    w.ops = std::move(ops);
    return w;
}

op_workload load(const trace_source& s) {
    constexpr std::uint64_t ops = trace_player::max_ops + 1;
    if (!s.path.empty()) return load_capped(trace_batches(s.path, ops));
    if (s.name == embedded_trace_name) {
        const auto t = embedded_trace();
        return load_capped(trace_batches(t.data(), t.size(), embedded_trace_name, ops));
    }
    return gen::make(s.name);
}

} // namespace

void register_traces(const std::vector<std::string>& paths) {
    std::lock_guard lock(registry_mutex);
    for (const std::string& path : paths) {
        if (!std::ifstream(path, std::ios::binary).good())
            throw std::invalid_argument("cannot open trace '" + path + "'");
        std::string name = std::filesystem::path(path).filename().string();
        const auto taken = [&](const std::string& n) {
            return n == embedded_trace_name ||
                   std::any_of(std::begin(synthetic), std::end(synthetic),
                               [&](const synthetic_workload& s) { return n == s.name; }) ||
                   std::any_of(registered().begin(), registered().end(),
                               [&](const trace_source& s) { return s.name == n; });
        };
        const std::string stem = name;
        for (int k = 2; taken(name); ++k)
            name = stem + "-" + std::to_string(k);
        registered().push_back({name, "recorded trace " + path, path});
    }
}

std::vector<trace_source> trace_sources() {
    std::vector<trace_source> out;
    if (!embedded_trace().empty())
        out.push_back(
            {embedded_trace_name,
             "recorded: an OpenTTD 13 dedicated server starting a new game (557,626 calls, 3 threads)", ""});
    for (const synthetic_workload& s : synthetic)
        out.push_back({s.name, s.description, ""});
    std::lock_guard lock(registry_mutex);
    out.insert(out.end(), registered().begin(), registered().end());
    return out;
}

// --- the cache -----------------------------------------------------------------------------------

player_cache& player_cache::shared() {
    static player_cache cache;
    return cache;
}

player_cache::~player_cache() {
    {
        std::lock_guard lock(mutex_);
        stop_ = true;
        cancel_ = true;
    }
    wake_.notify_all();
    if (thread_.joinable()) thread_.join();
}

player_cache::status player_cache::get(const trace_source& source, player_heap heap) {
    const std::string key = source.name + "\n" + source.path + "\n" + std::string(heap_name(heap));
    std::lock_guard lock(mutex_);
    auto it = std::find_if(entries_.begin(), entries_.end(), [&](const auto& e) { return e->key == key; });
    std::shared_ptr<entry> e;
    if (it != entries_.end()) {
        e = *it;
        entries_.splice(entries_.begin(), entries_, it);
    } else {
        e = std::make_shared<entry>();
        e->key = key;
        e->source = source;
        e->heap = heap;
        entries_.push_front(e);
        queue_.push_back(e);
        if (!thread_.joinable()) thread_ = std::thread([this] { work(); });
        wake_.notify_one();
    }
    status s;
    s.player = e->player;
    s.preparing = !e->done;
    s.progress = e->progress.load();
    s.phase = e->done ? "" : e->phase;
    s.error = e->error;
    return s;
}

// Drops the least recently used finished entries (players and failures) past max_players, and
// returns them, so that the caller lets go of them (and of the memory; see trace_player::prepare)
// after unlocking. Queued and running entries stay: dropping one would make its session ask again
// and evict another, so more sessions than max_players, each on its own trace, would prepare for
// ever and never see a player; they are bounded anyway, by the catalog (one per trace and heap).
std::vector<std::shared_ptr<player_cache::entry>> player_cache::evict_locked() {
    std::vector<std::shared_ptr<entry>> dropped;
    auto finished = static_cast<std::size_t>(
        std::count_if(entries_.begin(), entries_.end(), [](const auto& e) { return e->done; }));
    for (auto it = entries_.end(); finished > max_players && it != entries_.begin();) {
        --it;
        if (!(*it)->done) continue;
        dropped.push_back(std::move(*it));
        it = entries_.erase(it);
        --finished;
    }
    return dropped;
}

void player_cache::work() {
    std::unique_lock lock(mutex_);
    for (;;) {
        wake_.wait(lock, [&] { return stop_ || !queue_.empty(); });
        if (stop_) return;
        std::shared_ptr<entry> e = queue_.front();
        queue_.pop_front();
        running_ = e;
        e->phase = "loading";
        lock.unlock();
        std::shared_ptr<const trace_player> player;
        std::string error;
        try {
            const op_workload w = load(e->source);
            {
                std::lock_guard g(mutex_);
                e->phase = "replaying";
            }
            player = trace_player::prepare(
                w, e->heap, [&](double f) { e->progress = f; }, &cancel_);
        } catch (const std::exception& ex) {
            error = ex.what();
        }
        ::malloc_trim(0); // the workload's ops and the heap's memory are gone: give them back
        lock.lock();
        running_.reset();
        if (stop_) return;
        e->player = std::move(player);
        e->error = e->player || !error.empty() ? error : "preparing was cancelled";
        e->progress = 1;
        e->done = true;
        ++prepared_;
        auto dropped = evict_locked();
        lock.unlock();
        dropped.clear();
        lock.lock();
    }
}

std::size_t player_cache::bytes() {
    std::lock_guard lock(mutex_);
    std::size_t n = 0;
    for (const auto& e : entries_)
        if (e->player) n += e->player->bytes();
    return n;
}

std::size_t player_cache::prepared() {
    std::lock_guard lock(mutex_);
    return prepared_;
}

std::size_t player_cache::players() {
    std::lock_guard lock(mutex_);
    return static_cast<std::size_t>(
        std::count_if(entries_.begin(), entries_.end(), [](const auto& e) { return e->player != nullptr; }));
}

} // namespace strata::lab::serve
