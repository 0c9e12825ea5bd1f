// Save/load remap: a graph of objects linked by handles survives a save and a load into a
// container whose handles differ, and references to unsaved objects load as null.
#include "strata/handle/remap.hpp"

#include <cstddef>
#include <cstdint>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "strata/handle/slot_map.hpp"

namespace {

struct node_tag {};
using node_handle = strata::handle<node_tag>;

struct node {
    std::string name;
    node_handle parent; // a reference by handle
    node_handle target;
};

// What a save file holds per object: its stable id, its data, and references as stable ids.
struct record {
    strata::stable_id id;
    std::string name;
    strata::stable_id parent;
    strata::stable_id target;
};

std::vector<record> save(const strata::slot_map<node, node_handle>& world) {
    strata::save_remap<node_handle> ids;
    for (std::size_t i = 0; i < world.size(); ++i) // ids first, so forward references resolve
        (void)ids.assign(world.key_of(i));
    std::vector<record> out;
    for (std::size_t i = 0; i < world.size(); ++i) {
        const node& n = world[i];
        out.push_back({ids.id_of(world.key_of(i)), n.name, ids.id_of(n.parent), ids.id_of(n.target)});
    }
    return out;
}

strata::slot_map<node, node_handle> load(const std::vector<record>& file, std::size_t churn_first) {
    strata::slot_map<node, node_handle> world;
    // A different history: the loaded handles get other indices and generations than the saved ones.
    std::vector<node_handle> junk;
    for (std::size_t i = 0; i < churn_first; ++i)
        junk.push_back(world.emplace());
    for (std::size_t i = 0; i < churn_first; i += 2)
        (void)world.erase(junk[i]);
    strata::load_remap<node_handle> map;
    for (const record& r : file)
        EXPECT_TRUE(map.bind(r.id, world.emplace(node{r.name, {}, {}})));
    for (const record& r : file) {
        node* n = world.get(map.resolve(r.id));
        EXPECT_NE(n, nullptr);
        n->parent = map.resolve(r.parent);
        n->target = map.resolve(r.target);
    }
    for (std::size_t i = 1; i < churn_first; i += 2)
        (void)world.erase(junk[i]);
    return world;
}

} // namespace

TEST(Remap, GraphSurvivesSaveAndLoadWithDifferentHandles) {
    strata::slot_map<node, node_handle> world;
    std::vector<node_handle> hs;
    std::mt19937 rng(5);
    for (int i = 0; i < 500; ++i) {
        node n;
        n.name = "node" + std::to_string(i);
        if (!hs.empty()) n.parent = hs[rng() % hs.size()];
        hs.push_back(world.emplace(std::move(n)));
    }
    for (const auto h : hs)
        world.get(h)->target = hs[rng() % hs.size()];
    // Erase some, leaving dangling (stale) references behind in the survivors.
    for (std::size_t i = 0; i < hs.size(); i += 7)
        ASSERT_TRUE(world.erase(hs[i]));

    const std::vector<record> file = save(world);
    ASSERT_EQ(file.size(), world.size());
    const auto loaded = load(file, 333);
    ASSERT_EQ(loaded.size(), world.size());
    ASSERT_TRUE(loaded.check());

    // Compare by name: every node's parent and target have the same names as before, and a stale
    // reference (to an erased node) loads as the null handle.
    std::size_t compared = 0, nulls = 0, handles_differ = 0;
    for (std::size_t i = 0; i < world.size(); ++i) {
        const node& before = world[i];
        const node* after = nullptr;
        for (const node& n : loaded)
            if (n.name == before.name) after = &n;
        ASSERT_NE(after, nullptr) << before.name;
        auto name_of = [](const strata::slot_map<node, node_handle>& m, node_handle h) -> std::string {
            const node* n = m.get(h);
            return n ? n->name : std::string("<null>");
        };
        EXPECT_EQ(name_of(world, before.parent), name_of(loaded, after->parent));
        EXPECT_EQ(name_of(world, before.target), name_of(loaded, after->target));
        if (world.get(before.target) == nullptr) {
            EXPECT_TRUE(after->target.is_null());
            ++nulls;
        }
        if (loaded.key_of(*after) != world.key_of(before)) ++handles_differ;
        ++compared;
    }
    EXPECT_EQ(compared, world.size());
    EXPECT_GT(nulls, 0u);          // the workload did leave stale references
    EXPECT_GT(handles_differ, 0u); // and the handles really changed
}

TEST(Remap, NullAndUnknownIds) {
    strata::save_remap<node_handle> ids;
    EXPECT_EQ(ids.assign(node_handle{}), strata::null_id);
    const auto h = node_handle::from_parts(3, 1);
    EXPECT_EQ(ids.id_of(h), strata::null_id); // never assigned
    EXPECT_EQ(ids.assign(h), 0u);
    EXPECT_EQ(ids.assign(h), 0u); // idempotent
    EXPECT_EQ(ids.assign(node_handle::from_parts(3, 2)), 1u);
    EXPECT_EQ(ids.size(), 2u);

    strata::load_remap<node_handle> map;
    EXPECT_TRUE(map.resolve(0).is_null());
    EXPECT_TRUE(map.resolve(strata::null_id).is_null());
    EXPECT_FALSE(map.bind(strata::null_id, h));
    EXPECT_TRUE(map.bind(4, h));
    EXPECT_FALSE(map.bind(4, node_handle::from_parts(9, 9))); // duplicate record
    EXPECT_EQ(map.resolve(4), h);
    EXPECT_TRUE(map.resolve(3).is_null());
    // Binding a null handle records nothing, so it cannot hide a later duplicate.
    EXPECT_FALSE(map.bind(7, node_handle{}));
    EXPECT_TRUE(map.bind(7, node_handle::from_parts(5, 1)));
    EXPECT_FALSE(map.bind(7, node_handle::from_parts(6, 1)));
    // With the save's id count, a corrupt id beyond it is refused (no huge table).
    strata::load_remap<node_handle> counted(10);
    EXPECT_TRUE(counted.bind(9, h));
    EXPECT_FALSE(counted.bind(10, h));
    EXPECT_FALSE(counted.bind(4'000'000'000u, h));
    EXPECT_TRUE(counted.resolve(4'000'000'000u).is_null());
}
