// Slab + magazines demo: magazine_cache<T>'s two layers (a magazine_depot over a slab_cache) for 48-byte
// objects over 1 KiB slabs (a small buffer). Objects come from the calling thread's magazine first; a miss
// swaps in a full magazine from the depot or refills one from the slabs. Rows show each slab's objects:
// yours, waiting in this thread's magazines, parked in the depot's full magazines, or free in the slab.
//
// Magazines are per thread, and HTTP requests arrive on any worker thread, so every slab operation
// of every session runs on one lab thread: the column shown is that thread's magazines.
#include <algorithm>
#include <array>
#include <condition_variable>
#include <functional>
#include <future>
#include <map>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <utility>

#include "strata/slab/magazine.hpp"
#include "strata/slab/slab_cache.hpp"
#include "strata/source/buffer_source.hpp"

#include "demo.hpp"

namespace strata::lab::serve {
namespace {

/// One thread that runs jobs in order; run() waits for its job and rethrows what it threw.
class lab_thread {
public:
    static lab_thread& instance() {
        static lab_thread t;
        return t;
    }
    void run(const std::function<void()>& job) {
        std::lock_guard one(caller_); // one job at a time: the caller's is the only one handed over
        std::packaged_task<void()> task(job);
        std::future<void> done = task.get_future();
        {
            std::lock_guard lock(mutex_);
            task_ = &task;
        }
        wake_.notify_all();
        done.get();
    }
    ~lab_thread() {
        {
            std::lock_guard lock(mutex_);
            stop_ = true;
        }
        wake_.notify_all();
        thread_.join();
    }

private:
    lab_thread() : thread_([this] { loop(); }) {}
    void loop() {
        std::unique_lock lock(mutex_);
        for (;;) {
            wake_.wait(lock, [&] { return stop_ || task_ != nullptr; });
            if (task_ == nullptr) return;
            (*std::exchange(task_, nullptr))();
        }
    }
    std::mutex caller_, mutex_;
    std::condition_variable wake_;
    std::packaged_task<void()>* task_ = nullptr;
    bool stop_ = false;
    std::thread thread_;
};

struct object48 {
    std::byte bytes[48];
};

class slab_demo final : public demo {
public:
    static constexpr std::size_t slab_bytes = 1024;
    static constexpr std::size_t slabs = 8;
    using slabs_type = slab_cache<object48>;

    explicit slab_demo(const limits& l) : max_batch_(std::max<std::size_t>(1, l.max_batch)) {
        lab_thread::instance().run([&] {
            slab_options so;
            so.slab_bytes = slab_bytes;
            so.max_empty_slabs = slabs; // keep them: the buffer source cannot take most back
            magazine_options mo;
            mo.rounds = 6;
            mo.max_full_magazines = 4;
            // magazine_cache<T>'s two layers, built here so the rows can show the slab layer.
            slabs_ = std::make_unique<slabs_type>(source_ref(source_), so);
            depot_ = std::make_unique<magazine_depot>(
                magazine_depot::backend{slabs_.get(), &allocate_batch, &deallocate_batch}, mo);
        });
    }
    ~slab_demo() override {
        // Everything back before the cache goes, or it reports a leak. On the lab thread, where
        // this cache's magazines are.
        lab_thread::instance().run([&] {
            for (auto& [id, p] : mine_)
                depot_->deallocate(p);
            mine_.clear();
            depot_->flush();
            depot_.reset(); // empties every thread's magazines into the slabs
            slabs_.reset();
        });
    }

    json call(std::string_view op, const json& args) override {
        json out{{"ok", true}};
        if (op == "alloc") {
            const std::size_t n = int_arg(args, "count", 1, max_batch_, 1);
            lab_thread::instance().run([&] {
                std::size_t got = 0;
                for (; got < n; ++got) {
                    auto* p = static_cast<object48*>(depot_->allocate());
                    if (p == nullptr) break;
                    mine_.emplace(next_id_++, p);
                }
                out["allocated"] = got;
                if (got < n)
                    out = {{"ok", got > 0},
                           {"allocated", got},
                           {"reason",
                            got > 0 ? "out of memory after " + std::to_string(got) + ": every slab is full"
                                    : std::string("out of memory: every slab is full")}};
                column_ = read_column();
            });
            return out;
        }
        if (op == "free") {
            std::vector<std::uint64_t> ids;
            if (args.contains("id")) {
                const std::uint64_t id = int_arg(args, "id", 1, UINT64_MAX >> 1, UINT64_MAX);
                if (!mine_.count(id))
                    throw api_error(400,
                                    "object " + std::to_string(id) + " is not yours (stale or unknown id)");
                ids.push_back(id);
            } else {
                const std::size_t n = int_arg(args, "count", 1, max_batch_, 1);
                if (mine_.empty()) return refused("nothing to free: you hold no objects");
                for (auto it = mine_.rbegin(); it != mine_.rend() && ids.size() < n; ++it)
                    ids.push_back(it->first);
                if (ids.size() < n) out["reason"] = "you held only " + std::to_string(ids.size());
            }
            lab_thread::instance().run([&] {
                for (auto id : ids) {
                    depot_->deallocate(mine_.at(id));
                    mine_.erase(id);
                }
                column_ = read_column();
            });
            out["freed"] = ids.size();
            return out;
        }
        if (op == "flush") {
            lab_thread::instance().run([&] {
                // Every object out of the slabs is yours: no magazine or depot holds one.
                bool idle = false;
                {
                    std::lock_guard lock(depot_->backend_mutex());
                    idle = slabs_->live() == mine_.size();
                }
                if (idle) {
                    out = refused("nothing to flush: the magazines and the depot hold no objects");
                    return;
                }
                depot_->flush();
                column_ = read_column();
            });
            return out;
        }
        unknown_op("slab", op);
    }

    json state() const override {
        json rows = json::array();
        std::size_t empty = 0, slab_live = 0, per_slab = 0;
        bool check = false;
        lab_thread::instance().run([&] {
            std::unordered_map<const void*, const char*> where;
            for (const auto& [id, p] : mine_)
                where.emplace(p, "yours");
            for (const auto* m : {column_loaded_, column_previous_})
                if (m)
                    for (std::uint32_t i = 0; i < m->count; ++i)
                        where.emplace(const_cast<magazine_depot::magazine*>(m)->rounds()[i], "magazine");
            std::lock_guard lock(depot_->backend_mutex());
            std::map<std::uintptr_t, json> by_base; // slabs in address order
            const slabs_type& s = *slabs_;
            per_slab = s.objects_per_slab();
            empty = s.empty_slab_count();
            slab_live = s.live();
            check = s.check();
            s.for_each_slab([&](const slabs_type::slab_view& v) {
                json objects = json::array();
                std::uintptr_t base = 0;
                v.for_each_live([&](object48& o) {
                    const auto a = reinterpret_cast<std::uintptr_t>(&o);
                    base = a & ~std::uintptr_t{slab_bytes - 1}; // slabs are found by masking
                    const auto it = where.find(&o);
                    objects.push_back({{"index", (a - base - first_offset(per_slab)) / slabs_type::stride},
                                       {"holder", it == where.end() ? "depot" : it->second}});
                });
                by_base[base] = {{"live", v.live()},
                                 {"capacity", v.capacity()},
                                 {"state", v.live() == v.capacity() ? "full" : "partial"},
                                 {"objects", objects}};
            });
            for (auto& [base, row] : by_base) {
                row["offset"] = base - reinterpret_cast<std::uintptr_t>(buffer_.data());
                rows.push_back(std::move(row));
            }
        });
        return {{"objects_per_slab", per_slab},
                {"slab_bytes", slab_bytes},
                {"slabs", rows},
                {"empty_slabs", empty},
                {"yours", mine_.size()},
                {"slab_live", slab_live},
                {"magazine", column_},
                {"check", check}};
    }

    std::size_t bytes() const noexcept override {
        return sizeof(*this) + mine_.size() * 64 + 4096; // + the cache and its magazines
    }

private:
    static std::size_t allocate_batch(void* context, void** out, std::size_t n) noexcept {
        auto* slabs = static_cast<slabs_type*>(context);
        std::size_t got = 0;
        for (; got < n; ++got) {
            object48* p = slabs->allocate();
            if (p == nullptr) break;
            out[got] = p;
        }
        return got;
    }
    static void deallocate_batch(void* context, void* const* in, std::size_t n) noexcept {
        auto* slabs = static_cast<slabs_type*>(context);
        for (std::size_t i = 0; i < n; ++i)
            slabs->deallocate(static_cast<object48*>(in[i]));
    }
    // The slab layout (slab_cache.hpp): header, index stack, live bits, then aligned objects.
    static std::size_t first_offset(std::size_t n) noexcept {
        const std::size_t meta = sizeof(slab_header) + n * sizeof(std::uint32_t);
        const std::size_t bits_at = (meta + 7) / 8 * 8;
        const std::size_t end = bits_at + (n + 63) / 64 * 8;
        return (end + slabs_type::object_align - 1) / slabs_type::object_align * slabs_type::object_align;
    }

    // This (lab) thread's magazines for this cache, read through the thread's hint right after an
    // operation on the cache, when the hint names it.
    json read_column() {
        const auto& h = magazine_depot::tls_hint;
        column_loaded_ = column_previous_ = nullptr;
        json j{{"loaded", nullptr}, {"previous", nullptr}, {"depot_rounds", depot_->depot_rounds()}};
        if (h.record != nullptr && h.record->owner == depot_.get()) {
            column_loaded_ = h.record->loaded;
            column_previous_ = h.record->previous;
            if (column_loaded_)
                j["loaded"] = {{"count", column_loaded_->count}, {"capacity", column_loaded_->capacity}};
            if (column_previous_)
                j["previous"] = {{"count", column_previous_->count},
                                 {"capacity", column_previous_->capacity}};
        }
        return j;
    }

    alignas(slab_bytes) std::array<std::byte, slab_bytes * slabs> buffer_{};
    buffer_source source_{buffer_};
    std::unique_ptr<slabs_type> slabs_;
    std::unique_ptr<magazine_depot> depot_;
    std::map<std::uint64_t, object48*> mine_;
    std::uint64_t next_id_ = 1;
    std::size_t max_batch_; // objects one request may allocate or free
    json column_ = json::object();
    const magazine_depot::magazine* column_loaded_ = nullptr;
    const magazine_depot::magazine* column_previous_ = nullptr;
};

} // namespace

std::unique_ptr<demo> make_slab_demo(const limits& l) { return std::make_unique<slab_demo>(l); }

} // namespace strata::lab::serve
