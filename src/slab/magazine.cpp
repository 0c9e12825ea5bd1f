#include "strata/slab/magazine.hpp"

#include <algorithm>
#include <atomic>
#include <new>
#include <vector>

namespace strata {

constinit thread_local magazine_depot::hint magazine_depot::tls_hint{0, 0, nullptr};

namespace {

// Guards every thread_record's attachment (owner, the depots' thread lists) and each thread's
// table of records. Taken only on slow paths: a thread's first use of a depot, thread exit,
// depot destruction. Lock order: registry, then a depot's mutex; never the registry while this
// thread runs a backend (see in_backend).
constinit std::mutex registry_mutex;
std::atomic<std::uint64_t> next_depot_id{1}; // 0 never matches: the empty hint

// Nonzero while this thread runs some depot's backend. In caching mode the backend runs T() and
// ~T(), and a T may use another magazine_cache: attaching to it would take the registry under a
// depot mutex (or, from ~magazine_depot, take the registry twice). Such a use is served without a
// record: straight to that cache's backend.
constinit thread_local unsigned in_backend = 0;

struct backend_scope {
    backend_scope() noexcept { ++in_backend; }
    ~backend_scope() { --in_backend; }
    backend_scope(const backend_scope&) = delete;
    backend_scope& operator=(const backend_scope&) = delete;
};

} // namespace

// The records of one thread; its destructor is the thread-exit hook.
struct magazine_thread_table {
    std::vector<magazine_depot::thread_record*> records;
    bool dying = false;

    ~magazine_thread_table() {
        dying = true;
        magazine_depot::tls_hint = {0, 0, nullptr};
        const std::lock_guard<std::mutex> registry(registry_mutex);
        for (magazine_depot::thread_record* r : records) {
            if (r->owner != nullptr) {
                magazine_depot* d = r->owner;
                const std::lock_guard<std::mutex> lock(d->mutex_);
                d->detach_locked(r);
            }
            delete r;
        }
        records.clear();
    }

    // Frees the records whose depot is gone. Requires: registry_mutex held.
    void sweep_dead() noexcept {
        auto dead = [](magazine_depot::thread_record* r) {
            if (r->owner != nullptr) return false;
            delete r;
            return true;
        };
        records.erase(std::remove_if(records.begin(), records.end(), dead), records.end());
    }
};

namespace {
thread_local magazine_thread_table thread_table;
thread_local bool thread_table_gone = false; // set after the table's destructor ran

struct table_guard {
    ~table_guard() { thread_table_gone = true; }
};
} // namespace

magazine_depot::magazine_depot(backend b, magazine_options options) noexcept
    : id_(next_depot_id.fetch_add(1, std::memory_order_relaxed)), backend_(b), options_(options) {
    options_.rounds = std::clamp<std::size_t>(options_.rounds, 1, 65536);
}

magazine_depot::~magazine_depot() {
    // Every thread's magazines are taken under the registry lock, and emptied into the backend
    // only after it is released: with cached objects the backend runs ~T(), which may use (and
    // attach to) another cache. No other thread may be inside this depot (the destruction rule), and
    // once its records are marked dead no exiting thread looks at it, so the rest needs no lock.
    magazine* taken = nullptr;
    {
        const std::lock_guard<std::mutex> registry(registry_mutex);
        const std::lock_guard<std::mutex> lock(mutex_);
        while (threads_ != nullptr) {
            thread_record* r = threads_;
            for (magazine* m : {r->loaded, r->previous}) {
                if (m == nullptr) continue;
                m->next = taken;
                taken = m;
            }
            r->loaded = r->previous = nullptr;
            threads_ = r->next;
            r->prev = r->next = nullptr;
            r->owner = nullptr;
        }
    }
    for (magazine* m = taken; m != nullptr;) {
        magazine* next = m->next;
        flush_magazine_locked(m);
        ::operator delete(m);
        m = next;
    }
    for (magazine* m = full_; m != nullptr;) {
        magazine* next = m->next;
        flush_magazine_locked(m);
        ::operator delete(m);
        m = next;
    }
    for (magazine* m = empty_; m != nullptr;) {
        magazine* next = m->next;
        ::operator delete(m);
        m = next;
    }
    full_ = empty_ = nullptr;
    full_count_ = empty_count_ = 0;
}

magazine_depot::magazine* magazine_depot::new_magazine() noexcept {
    void* raw = ::operator new(sizeof(magazine) + options_.rounds * sizeof(void*), std::nothrow);
    if (raw == nullptr) return nullptr;
    return ::new (raw) magazine{nullptr, 0, static_cast<std::uint32_t>(options_.rounds)};
}

void magazine_depot::flush_magazine_locked(magazine* m) noexcept {
    if (m->count != 0) {
        const backend_scope scope;
        backend_.deallocate_batch(backend_.context, m->rounds(), m->count);
    }
    m->count = 0;
}

// Keeps an empty magazine for reuse, up to as many as full ones may be kept.
void magazine_depot::give_back_empty_locked(magazine* m) noexcept {
    if (empty_count_ >= options_.max_full_magazines + 2) {
        ::operator delete(m);
        return;
    }
    m->next = empty_;
    empty_ = m;
    ++empty_count_;
}

// A thread's magazines go back: their rounds to the backend (a partly filled magazine is neither
// full nor empty, so it cannot join the depot's lists as is), the magazines to the empty list.
void magazine_depot::detach_locked(thread_record* r) noexcept {
    for (magazine* m : {r->loaded, r->previous}) {
        if (m == nullptr) continue;
        flush_magazine_locked(m);
        give_back_empty_locked(m);
    }
    r->loaded = r->previous = nullptr;
    if (r->prev != nullptr)
        r->prev->next = r->next;
    else
        threads_ = r->next;
    if (r->next != nullptr) r->next->prev = r->prev;
    r->prev = r->next = nullptr;
    r->owner = nullptr;
}

magazine_depot::thread_record* magazine_depot::find_record() noexcept {
    static thread_local table_guard guard; // constructed before the table: destroyed after it
    (void)guard;
    if (thread_table_gone) return nullptr;
    magazine_thread_table& table = thread_table;
    if (table.dying) return nullptr;
    for (thread_record* r : table.records) {
        if (r->id == id_) {
            tls_hint = {id_, reinterpret_cast<std::uintptr_t>(r->loaded), r};
            return r;
        }
    }
    return nullptr;
}

magazine_depot::thread_record* magazine_depot::attach() noexcept {
    if (thread_record* r = find_record()) return r;
    if (thread_table_gone || in_backend != 0) return nullptr; // see in_backend
    magazine_thread_table& table = thread_table;
    if (table.dying) return nullptr;
    magazine* a = new_magazine();
    magazine* b = new_magazine();
    auto* r = new (std::nothrow) thread_record{a, b, this, id_, nullptr, nullptr};
    if (a == nullptr || b == nullptr || r == nullptr) {
        ::operator delete(a);
        ::operator delete(b);
        delete r;
        return nullptr;
    }
    const std::lock_guard<std::mutex> registry(registry_mutex);
    table.sweep_dead();
    try {
        table.records.push_back(r);
    } catch (...) {
        ::operator delete(a);
        ::operator delete(b);
        delete r;
        return nullptr;
    }
    r->next = threads_;
    if (threads_ != nullptr) threads_->prev = r;
    threads_ = r;
    tls_hint = {id_, reinterpret_cast<std::uintptr_t>(r->loaded), r};
    return r;
}

void* magazine_depot::allocate_slow() noexcept {
    thread_record* r = tls_hint.id == id_ ? tls_hint.record : attach();
    if (r == nullptr) { // no magazines for this thread (exiting, in a backend, out of memory)
        void* p = nullptr;
        const std::lock_guard<std::mutex> lock(mutex_);
        const backend_scope scope;
        return backend_.allocate_batch(backend_.context, &p, 1) == 1 ? p : nullptr;
    }
    if (r->loaded->count == 0 && r->previous->count != 0) std::swap(r->loaded, r->previous);
    if (r->loaded->count == 0) {
        const std::lock_guard<std::mutex> lock(mutex_);
        if (full_ != nullptr) {
            // Exchange: the depot's full magazine becomes loaded; our empty previous goes back.
            magazine* f = full_;
            full_ = f->next;
            --full_count_;
            give_back_empty_locked(r->previous);
            r->previous = r->loaded;
            r->loaded = f;
        } else {
            // Half a magazine from the backend: the next frees still find room.
            const std::size_t want = std::max<std::size_t>(1, r->loaded->capacity / 2);
            const backend_scope scope;
            r->loaded->count = static_cast<std::uint32_t>(
                backend_.allocate_batch(backend_.context, r->loaded->rounds(), want));
            if (r->loaded->count == 0) {
                tls_hint = {id_, reinterpret_cast<std::uintptr_t>(r->loaded), r};
                return nullptr;
            }
        }
    }
    magazine* m = r->loaded;
    // The whole hint, not just `loaded`: a T() or ~T() run by the backend above may have used
    // another magazine_cache on this thread and pointed the hint at that one's record (its id
    // with this depot's magazine: that cache would then hand out this one's objects).
    tls_hint = {id_, reinterpret_cast<std::uintptr_t>(m), r};
    return m->rounds()[--m->count];
}

void magazine_depot::deallocate_slow(void* p) noexcept {
    if (p == nullptr) return;
    thread_record* r = tls_hint.id == id_ ? tls_hint.record : attach();
    if (r == nullptr) {
        const std::lock_guard<std::mutex> lock(mutex_);
        const backend_scope scope;
        backend_.deallocate_batch(backend_.context, &p, 1);
        return;
    }
    if (r->loaded->count == r->loaded->capacity && r->previous->count == 0) std::swap(r->loaded, r->previous);
    if (r->loaded->count == r->loaded->capacity) {
        const std::lock_guard<std::mutex> lock(mutex_);
        // previous is full too: it joins the depot, loaded becomes previous, an empty one is loaded.
        magazine* e = empty_;
        if (e != nullptr) {
            empty_ = e->next;
            --empty_count_;
        } else {
            e = new_magazine();
        }
        if (e == nullptr) { // no memory for a magazine: empty previous into the backend and reuse it
            flush_magazine_locked(r->previous);
            e = r->previous;
        } else {
            r->previous->next = full_;
            full_ = r->previous;
            ++full_count_;
        }
        r->previous = r->loaded;
        r->loaded = e;
        while (full_count_ > options_.max_full_magazines) { // the depot's working set is bounded
            magazine* f = full_;
            full_ = f->next;
            --full_count_;
            flush_magazine_locked(f);
            give_back_empty_locked(f);
        }
    }
    magazine* m = r->loaded;
    tls_hint = {id_, reinterpret_cast<std::uintptr_t>(m), r}; // whole: see allocate_slow
    m->rounds()[m->count++] = p;
}

void magazine_depot::flush() noexcept {
    // The hint names only the depot this thread used last; its record for this one may sit behind it.
    thread_record* r = tls_hint.id == id_ ? tls_hint.record : find_record();
    const std::lock_guard<std::mutex> lock(mutex_);
    if (r != nullptr) {
        flush_magazine_locked(r->loaded);
        flush_magazine_locked(r->previous);
    }
    while (full_ != nullptr) {
        magazine* f = full_;
        full_ = f->next;
        --full_count_;
        flush_magazine_locked(f);
        give_back_empty_locked(f);
    }
}

bool magazine_depot::in_thread_magazines(const void* p) noexcept {
    // The thread's own magazines: only this thread changes them (the depot's destructor too, but no
    // thread may be inside the depot then), so no lock. find_record() never attaches.
    const thread_record* r = tls_hint.id == id_ ? tls_hint.record : find_record();
    if (r == nullptr) return false;
    for (magazine* m : {r->loaded, r->previous}) {
        if (m == nullptr) continue;
        void* const* rounds = m->rounds();
        for (std::uint32_t i = 0; i < m->count; ++i)
            if (rounds[i] == p) return true;
    }
    return false;
}

std::size_t magazine_depot::depot_rounds() const noexcept {
    const std::lock_guard<std::mutex> lock(mutex_);
    std::size_t n = 0;
    for (const magazine* m = full_; m != nullptr; m = m->next)
        n += m->count;
    return n;
}

std::size_t magazine_depot::attached_threads() const noexcept {
    const std::lock_guard<std::mutex> registry(registry_mutex);
    std::size_t n = 0;
    for (const thread_record* r = threads_; r != nullptr; r = r->next)
        ++n;
    return n;
}

} // namespace strata
