// libFuzzer target: the generational handle containers (slot_map, handle_table, soa_slot_map)
// against a per-index model of which handle each slot holds. The first byte picks a configuration;
// small handles (6 index bits + 2 generation bits, and 3 + 1) make index exhaustion, retirement and
// generation wrap reachable within a few hundred ops. The model predicts every answer: the index an
// insert takes (per reuse policy), its generation, when it throws length_error, the validity of any
// handle (live, stale, null, forged), size, retired and slot counts. Documented bad input (stale
// erase, out-of-range key_of/erase_at, erase inside for_each) must report exactly its documented
// violation kind; any other report or failed check() aborts.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <unordered_set>
#include <vector>

#include "strata/core/check.hpp"
#include "strata/handle/handle.hpp"
#include "strata/handle/handle_table.hpp"
#include "strata/handle/policy.hpp"
#include "strata/handle/slot_map.hpp"
#include "strata/layout/soa_slot_map.hpp"

#include "fuzz_common.hpp"

namespace {

using namespace strata_fuzz;
namespace policy = strata::policy;
using strata::violation_kind;

struct tag {};
using default_handle = strata::handle<tag>;
using small_handle = strata::handle<tag, 6, 2>; // 64 indices, generations 1..3
using tiny_handle = strata::handle<tag, 3, 1>;  // 8 indices, one generation: wrap revalidates at once

// Owns heap memory, so ASan sees a value destroyed twice, leaked, or used after a move.
struct item {
    std::uint32_t key = 0;
    std::string text;
    explicit item(std::uint32_t k) : key(k), text(40, static_cast<char>('a' + k % 26)) {}
};
std::uint32_t key_of_value(std::uint32_t v) { return v; }
std::uint32_t key_of_value(const item& v) {
    require(v.text.size() == 40 && v.text[0] == static_cast<char>('a' + v.key % 26), "item text changed");
    return v.key;
}

// Reports of the current op: expect() consumes a documented one; any left over fails the input.
int reports = 0;
violation_kind last_kind{};

void expect(violation_kind kind) {
    if constexpr (STRATA_CHECKS >= 1)
        require(reports == 1 && last_kind == kind, "expected violation missing");
    reports = 0;
}

/// Which handle each index holds. Slots freed by one call form one group: the order within a
/// group (clear, erase_if) is unspecified, so lifo/fifo may take any member of the newest/oldest.
template <class H, class Wrap, class Reuse>
struct model {
    using word = typename H::storage_type;
    struct slot {
        H last; // the handle of its last occupant
        bool live = false;
        std::uint32_t value = 0;
    };
    std::vector<slot> slots; // per index ever made
    std::vector<std::vector<word>> free;
    std::size_t live = 0, retired = 0;

    bool valid(H h) const {
        return h.index() < slots.size() && slots[h.index()].live && slots[h.index()].last == h;
    }
    bool exhausted() const { return free.empty() && slots.size() == H::index_space; }
    bool may_take(word i) const {
        if (free.empty()) return i == slots.size();
        if constexpr (std::is_same_v<Reuse, policy::compact>) {
            word low = static_cast<word>(~word{0});
            for (const auto& g : free)
                low = std::min(low, *std::min_element(g.begin(), g.end()));
            return i == low;
        }
        const auto& g = std::is_same_v<Reuse, policy::lifo> ? free.back() : free.front();
        return std::find(g.begin(), g.end(), i) != g.end();
    }
    word next_gen(word i) const {
        const word g = i < slots.size() ? slots[i].last.generation() : 0;
        return g == H::max_generation ? 1 : static_cast<word>(g + 1);
    }
    void add(H h, std::uint32_t v) {
        for (auto g = free.begin(); g != free.end(); ++g) {
            if (const auto it = std::find(g->begin(), g->end(), h.index()); it != g->end()) {
                g->erase(it);
                if (g->empty()) free.erase(g);
                break;
            }
        }
        if (h.index() == slots.size()) slots.emplace_back();
        slots[h.index()] = {h, true, v};
        ++live;
    }
    /// The live indices whose value satisfies `pred`, ascending.
    template <class Pred>
    std::vector<word> live_where(Pred pred) const {
        std::vector<word> out;
        for (word i = 0; i < slots.size(); ++i)
            if (slots[i].live && pred(slots[i].value)) out.push_back(i);
        return out;
    }
    /// Frees the indices one call freed, as one group; a slot at the last generation retires.
    void release(const std::vector<word>& batch) {
        std::vector<word> group;
        for (const word i : batch) {
            slots[i].live = false;
            --live;
            if (std::is_same_v<Wrap, policy::retire> && slots[i].last.generation() == H::max_generation)
                ++retired;
            else
                group.push_back(i);
        }
        if (!group.empty()) free.push_back(std::move(group));
    }
    H pick_live(std::size_t x) const {
        for (std::size_t k = 0; k < slots.size(); ++k)
            if (const slot& s = slots[(x + k) % slots.size()]; s.live) return s.last;
        return H{};
    }
};

/// One configuration: container C holding V (or columns V, float), with C's policies W and R.
template <class C, class V, class W, class R>
void run(reader& in) {
    using H = typename C::handle_type;
    using word = typename H::storage_type;
    constexpr bool is_soa = requires { typename C::dense_type; };
    constexpr bool is_table = requires(const C& c) { c.handle_at(0); };
    constexpr bool is_map = !is_soa && !is_table;

    model<H, W, R> m;
    std::optional<C> box(std::in_place);
    std::vector<H> issued;
    std::unordered_set<word> issued_raw;
    std::vector<const void*> address; // handle_table: objects never move until erased
    std::uint32_t counter = 0;

    const auto probe = [&](C& c, H h) {
        const bool ok = m.valid(h);
        require(c.contains(h) == ok, "contains() disagrees with the model");
        if constexpr (is_soa) {
            const std::uint32_t* k = c.template get<0>(h);
            const float* f = c.template get<1>(h);
            require((k != nullptr) == ok && (f != nullptr) == ok, "get<I>() disagrees with the model");
            if (ok)
                require(*k == m.slots[h.index()].value && *f == static_cast<float>(*k),
                        "get<I>() wrong value");
        } else {
            const V* p = c.get(h);
            require((p != nullptr) == ok, "get() disagrees with the model");
            if (ok) require(key_of_value(*p) == m.slots[h.index()].value, "get() returned the wrong value");
            if constexpr (is_table) require(!ok || p == address[h.index()], "handle_table object moved");
        }
        if constexpr (!is_table) require((c.index_of(h) < c.size()) == ok, "index_of() disagrees");
    };
    // A live handle, any handle ever issued, a forged one or null.
    const auto draw_handle = [&]() -> H {
        const std::uint8_t kind = in.byte();
        const std::uint16_t x = in.u16();
        if (kind % 2 == 0 && m.live != 0) return m.pick_live(x);
        if (kind % 16 == 1) return H::from_raw(static_cast<word>(x | (in.byte() << 16)));
        return kind % 16 == 3 || issued.empty() ? H{} : issued[x % issued.size()];
    };
    // Returns: false when the insert threw length_error (checked to be exactly when predicted).
    const auto insert = [&](C& c) {
        const std::size_t before = c.size();
        try {
            H h;
            if constexpr (is_soa)
                h = c.emplace(counter, static_cast<float>(counter));
            else
                h = c.insert(V(counter));
            require(!m.exhausted(), "insert succeeded with every index live or retired");
            require(m.may_take(h.index()), "insert took a slot the reuse policy does not allow");
            require(h.generation() == m.next_gen(h.index()), "insert issued the wrong generation");
            // Under retire no (index, generation) pair is issued twice, so a stale handle can
            // never validate again.
            require(issued_raw.insert(h.raw()).second || std::is_same_v<W, policy::wrap>,
                    "retire: a handle was issued twice");
            issued.push_back(h);
            m.add(h, counter++);
            if constexpr (is_table) {
                address.resize(m.slots.size());
                address[h.index()] = c.get(h);
            }
            return true;
        } catch (const std::length_error&) {
            require(m.exhausted(), "length_error with an index free");
            require(c.size() == before && c.check(), "failed insert changed the container");
            if constexpr (!is_soa) require(c.size() + c.retired_count() == C::max_size(), "bad exhaustion");
            return false;
        }
    };

    while (!in.done()) {
        C& c = *box;
        switch (in.byte() % 12) {
        case 0:
        case 1: (void)insert(c); break;
        case 2: // a burst, so exhaustion is reachable with short inputs
            for (int n = in.byte() % 80; n >= 0 && insert(c); --n) {
            }
            break;
        case 3:
        case 4: { // erase a live, stale, forged or null handle
            const H h = draw_handle();
            const bool ok = m.valid(h);
            require(c.erase(h) == ok, "erase() disagrees with the model");
            ok ? m.release({h.index()}) : expect(violation_kind::stale_handle);
            break;
        }
        case 5: { // erase_at(dense index), in range or not
            if constexpr (is_map) {
                const std::size_t i = in.u16() % (c.size() + 2);
                const bool in_range = i < c.size();
                const H h = in_range ? c.key_of(i) : H{};
                require(c.erase_at(i) == in_range, "erase_at() wrong answer");
                in_range ? m.release({h.index()}) : expect(violation_kind::invalid_argument);
            }
            break;
        }
        case 6: probe(c, draw_handle()); break; // get/contains/index_of
        case 7: {                               // key_of(dense index) round trip (handle_at for handle_table)
            const std::size_t i = in.u16() % (c.size() + 2);
            H h;
            if constexpr (is_table)
                h = c.handle_at(i);
            else
                h = c.key_of(i);
            if (i >= c.size()) {
                require(h.is_null(), "key_of() out of range returned a handle");
                expect(violation_kind::invalid_argument);
                break;
            }
            require(m.valid(h), "key_of() returned a handle the model does not hold");
            probe(c, h);
            if constexpr (!is_table) require(c.index_of(h) == i, "index_of(key_of(i)) != i");
            if constexpr (is_map) require(c.key_of_value(c[i]) == h, "key_of_value(value) != key_of(index)");
            break;
        }
        case 8: { // iteration visits every live value exactly once
            std::vector<bool> seen(m.slots.size());
            std::size_t n = 0;
            const auto visit = [&](H h, std::uint32_t v) {
                require(m.valid(h) && !seen[h.index()] && m.slots[h.index()].value == v,
                        "iteration: wrong value");
                seen[h.index()] = true;
                ++n;
            };
            if constexpr (is_soa) {
                for (std::size_t i = 0; i < c.size(); ++i)
                    visit(c.key_of(i), c.template column<0>()[i]);
            } else {
                c.for_each([&](H h, V& v) { visit(h, key_of_value(v)); });
            }
            if constexpr (is_map) { // and the range, through key_of(value)
                seen.assign(seen.size(), false);
                for (const V& v : c)
                    visit(c.key_of_value(v), key_of_value(v));
                n /= 2;
            }
            require(n == m.live, "iteration missed values");
            break;
        }
        case 9: { // erase inside for_each is refused; erase_if erases by predicate
            const std::uint32_t mod = in.byte() % 4 + 1;
            if constexpr (!is_soa) {
                c.for_each([&, first = m.pick_live(0)](H h, V&) {
                    if (h != first) return;
                    require(!c.erase(h), "erase inside for_each succeeded");
                    expect(violation_kind::invalid_argument);
                    if constexpr (is_map) {
                        require(!c.erase_at(0), "erase_at inside for_each succeeded");
                        expect(violation_kind::invalid_argument);
                    }
                });
                const auto pred = [mod](std::uint32_t v) { return v % mod == 0; };
                const auto batch = m.live_where(pred);
                require(c.erase_if([&](const V& v) { return pred(key_of_value(v)); }) == batch.size(),
                        "erase_if erased the wrong number");
                m.release(batch);
            }
            break;
        }
        case 10: // clear (rarely) or reserve
            if (in.byte() % 4 == 0) {
                c.clear();
                m.release(m.live_where([](std::uint32_t) { return true; }));
            } else {
                c.reserve(std::size_t{in.byte()} * 4);
            }
            break;
        default: // copy or move round trip: every handle keeps its answer
            if constexpr (std::is_copy_constructible_v<C>) {
                C copy(c);
                require(copy.check() && copy.size() == c.size(), "copy is broken");
                if (in.byte() & 1) {
                    c = copy;
                } else {
                    c = std::move(copy);
                    if constexpr (is_map) require(copy.empty() && copy.check(), "moved-from map not empty");
                }
            } else {
                C moved(std::move(c));
                require(c.empty() && c.check(), "moved-from container not empty");
                box.emplace(std::move(moved));
            }
            break;
        }
        C& after = *box;
        require(reports == 0, "a valid operation reported a violation");
        require(after.check(), "check() failed");
        require(after.size() == m.live, "size() disagrees with the model");
        if constexpr (!is_soa) {
            require(after.retired_count() == m.retired, "retired_count() disagrees with the model");
            require(after.slot_count() == m.slots.size(), "slot_count() disagrees with the model");
        }
    }
    for (const H h : issued)
        probe(*box, h);
    probe(*box, H{});
}

template <class V, class H, class W, class R>
constexpr auto map = &run<strata::slot_map<V, H, std::allocator<V>, W, R>, V, W, R>;
template <class V, class H, class W, class R>
constexpr auto table = &run<strata::handle_table<V, H, std::allocator<V>, W, R>, V, W, R>;
template <class H, class W, class R>
constexpr auto soa =
    &run<strata::basic_soa_slot_map<H, std::allocator<std::byte>, W, R, std::uint32_t, float>, std::uint32_t,
         W, R>;

// Trivially copyable values take slot_map's branch-free erase; item takes the move path.
constexpr void (*configs[])(reader&) = {
    map<std::uint32_t, default_handle, policy::retire, policy::lifo>,
    map<std::uint32_t, small_handle, policy::retire, policy::lifo>,
    map<item, small_handle, policy::retire, policy::fifo>,
    map<std::uint32_t, small_handle, policy::retire, policy::compact>,
    map<item, small_handle, policy::wrap, policy::lifo>,
    map<std::uint32_t, small_handle, policy::wrap, policy::fifo>,
    map<item, small_handle, policy::wrap, policy::compact>,
    map<std::uint32_t, tiny_handle, policy::wrap, policy::lifo>,
    map<item, tiny_handle, policy::retire, policy::fifo>,
    table<item, small_handle, policy::retire, policy::lifo>,
    table<item, small_handle, policy::wrap, policy::fifo>,
    table<std::uint32_t, small_handle, policy::retire, policy::compact>,
    table<item, tiny_handle, policy::wrap, policy::compact>,
    soa<small_handle, policy::retire, policy::lifo>,
    soa<small_handle, policy::wrap, policy::fifo>,
    soa<small_handle, policy::retire, policy::compact>,
};

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    strata::set_violation_handler([](const strata::violation& v) {
        ++reports;
        last_kind = v.kind;
    });
    reports = 0;
    reader in(data, size);
    configs[in.byte() % std::size(configs)](in);
    return 0;
}
